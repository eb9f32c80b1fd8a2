"""What the service asks of one-click decision links' records (``DecisionLinkItems`` on DynamoDB)."""

from __future__ import annotations

from abc import ABC, abstractmethod

from resumable.store.records import IssuedLink, LinkClaim


class LinkRecords(ABC):
    @abstractmethod
    def issued_link(self, session_id: str, link_id: str) -> IssuedLink | None:
        """The one-click decision link's record (its question, whom it answers as, whether it was
        used), read consistently; None where it was never issued."""

    @abstractmethod
    def claim_link(self, session_id: str, link_id: str, digest: str, now: float) -> LinkClaim:
        """Mark an issued one-click decision link whose secret has ``digest`` used: ``claimed``, or
        ``used`` (already) or ``unissued`` (never with that secret)."""

    @abstractmethod
    def release_link(self, session_id: str, link_id: str) -> None:
        """Let a link be used again: the decision it was claimed for could not be recorded."""

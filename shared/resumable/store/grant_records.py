"""What the service asks of standing grants' records (``GrantItems`` on DynamoDB)."""

from __future__ import annotations

from abc import ABC, abstractmethod

from resumable.store.records import AuditRecord, GrantRecord


class GrantRecords(ABC):
    @abstractmethod
    def live_grants(self, session_id: str, principal: str | None, now: float) -> list[GrantRecord]:
        """The grants of the session and of its principal's sessions that are neither revoked nor
        expired at ``now``, read consistently."""

    @abstractmethod
    def all_grants(self) -> list[GrantRecord]:
        """Every grant the table still keeps (live, revoked or expired), oldest first."""

    @abstractmethod
    def revoke_grant(self, grant: GrantRecord, by: str, now: float, audit: AuditRecord) -> GrantRecord:
        """Revoke ``grant`` (as read) now, with its ``audit`` record in the same transaction, unless it was
        revoked already (nothing written); the grant as it then is."""

"""Answering a question, as the service asks it of the store: the interface of the interactions'
records (``InteractionItems`` and ``InteractionReads`` on DynamoDB), the condition an answer's write
checks (one value the service builds from the question's rule and who answers, never flags), and what
the write did."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Literal

from resumable.store.records import (
    AuditRecord,
    GrantRecord,
    InteractionRecord,
    InteractionStatus,
    OutboxEvent,
    TurnRecord,
    Vote,
)


@dataclass
class AnswerOutcome:
    """What happened when an answer was offered for an interaction.

    ``answered``: this answer was recorded. ``voted``: this approval was counted, and the interaction
    waits for more (its rule's ``required``). ``refused``: the interaction was not ``requested`` (or had
    expired); ``interaction`` holds it as it is. ``missing``: no such interaction. ``turn_busy``: the
    turn is not waiting for answers; ``turn`` holds it.
    """

    outcome: Literal["answered", "voted", "refused", "missing", "turn_busy"]
    interaction: InteractionRecord | None = None
    turn: TurnRecord | None = None


@dataclass(frozen=True)
class Votes:
    """An interaction's votes with one more: ``counted`` is how many it held when read (the write's
    condition), ``votes`` all of them now, by principal."""

    counted: int
    votes: dict[str, Vote]


@dataclass(frozen=True)
class AnswerCondition:
    """What an answer's conditional write checks of the question beyond its being requested and
    unexpired, as the service decides it from the question, its rule and who answers: one value built
    by one of the constructors below, never flags.

    ``approval_shaped``: the answer is an approval's (approve or deny); else the question must not be an
    approval. ``asker``: the question must be this child turn's. ``principal``: its session must be
    this principal's (None: anyone's, for an approver or the application). ``rule``: the question must
    have no approval rule (``none``), one (``some``), or either (``any``). ``votes``: it must still hold
    the votes it was read with (``votes.counted``), and keeps these. ``at_expiry``: it must have expired
    (the answer its expiry gives)."""

    approval_shaped: bool = True
    asker: str | None = None
    principal: str | None = None
    rule: Literal["none", "some", "any"] = "none"
    votes: Votes | None = None
    at_expiry: bool = False

    @classmethod
    def unruled(cls, *, approval_shaped: bool, asker: str | None, principal: str | None) -> AnswerCondition:
        """An answer to a question asked under no approval rule."""
        return cls(approval_shaped=approval_shaped, asker=asker, principal=principal)

    @classmethod
    def settling(cls, votes: Votes, *, asker: str | None, principal: str | None) -> AnswerCondition:
        """The answer that settles a question asked under a rule (a deny, or the ``required``-th approval),
        on the votes it was read with."""
        return cls(asker=asker, principal=principal, rule="any", votes=votes)

    @classmethod
    def vote(cls, votes: Votes, *, asker: str | None, principal: str | None) -> AnswerCondition:
        """An approval that does not yet settle a question asked under a rule, on the votes it was read
        with."""
        return cls(asker=asker, principal=principal, rule="some", votes=votes)

    @classmethod
    def expired(cls) -> AnswerCondition:
        """The deny a rule gives a question at its expiry."""
        return cls(rule="any", at_expiry=True)


class Answers(ABC):
    """The interactions' records: answers, votes, dismissals and escalations, each one conditional write; and
    their reads."""

    @abstractmethod
    def answer_interaction(
        self,
        session_id: str,
        root_turn_id: str,
        request_id: str,
        response: Any,
        answered_by: str,
        now: float,
        condition: AnswerCondition | None = None,
        *,
        approval_shaped: bool | None = None,
        audit: AuditRecord | None = None,
        via: str | None = None,
        grant: GrantRecord | None = None,
    ) -> AnswerOutcome:
        """``requested -> answered`` in one conditional write (with its ``audit`` record, appended in the
        same transaction), if the turn is waiting (and not being canceled), the interaction is requested
        and unexpired, and ``condition`` holds. Without a condition, an answer to a question under no
        rule, in anyone's session: ``approval_shaped`` (true unless said) says whether it is an
        approval's. ``via``: where the answer came from (``cli``, ``page``, ...), kept as
        ``answered_via``. ``grant``: the standing grant the approval gives, written in the same
        transaction."""

    @abstractmethod
    def set_dismissed(self, interaction: InteractionRecord, dismissed_by: list[str], now: float) -> bool:
        """Write who dismissed the requested ``interaction``, if it still holds the list it was read
        with; False when it changed or is no longer requested."""

    @abstractmethod
    def escalate_interaction(self, interaction: InteractionRecord, now: float, event: OutboxEvent) -> bool:
        """Mark a requested, unexpired interaction escalated at ``now`` with its ``event``, in one
        transaction; False (nothing written) if it was escalated already, or is no longer open."""

    @abstractmethod
    def vote_interaction(
        self,
        session_id: str,
        root_turn_id: str,
        request_id: str,
        condition: AnswerCondition,
        now: float,
        *,
        audit: AuditRecord | None = None,
        event: OutboxEvent | None = None,
    ) -> AnswerOutcome:
        """Add a vote that does not settle the interaction (``condition``: ``AnswerCondition.vote``), in
        one conditional write (with its ``audit`` entry and its outbox ``event``): it must be
        ``requested``, unexpired and hold the votes it was read with (``voted``; else ``refused`` with it
        as it is now, or ``missing``)."""

    @abstractmethod
    def record_refused(self, audit: AuditRecord, most: int) -> bool:
        """Append the ``refused`` audit record ``audit``, once a UTC day per question, principal and
        refusal (a flood of the same refused press writes one record), and at most ``most`` a day per
        question (a flood from many principals writes ``most``); False where it is not written."""

    @abstractmethod
    def get_interaction(self, session_id: str, root_turn_id: str, request_id: str) -> InteractionRecord | None: ...

    @abstractmethod
    def list_interactions(self, session_id: str, status: InteractionStatus | None) -> list[InteractionRecord]: ...

    @abstractmethod
    def get_interactions(self, keys: list[tuple[str, str, str]]) -> list[InteractionRecord]:
        """The interactions of ``keys`` (session, root turn, request) that exist, in any order."""

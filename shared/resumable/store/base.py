"""The interfaces the service talks to: ``Store`` (records; ``DynamoDBStore``), made of one interface
per record family (``Answers``: the interactions'; ``LinkRecords``: decision links'; the rest below),
and ``Snapshots`` (agent state; ``S3Snapshots``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from resumable.store.answers import Answers
from resumable.store.grant_records import GrantRecords
from resumable.store.link_records import LinkRecords
from resumable.store.records import (
    ActionRecord,
    AuditRecord,
    GrantRecord,
    InteractionRecord,
    InteractionStatus,
    OutboxEvent,
    SessionRecord,
    TurnRecord,
    TurnStatus,
    TurnTree,
)


@dataclass
class Commit:
    """One atomic change of a turn tree, guarded by the root turn's version, status and lease.

    ``root`` is the root turn's new state. The root is expected at ``expected_version`` in
    ``expected_status``, leased by ``expected_lease_owner`` (None: not leased, for cancel and
    expiry), and with ``expected_lease_expired_by`` that lease must have expired by then (settling
    a runner that never confirmed). ``refuse_if_canceling`` rejects the commit if a cancel was
    requested meanwhile (a run must not leave a canceling tree waiting). ``settle_session`` frees
    the session for its next turn and points it at ``session_snapshot_key`` and ``agent_snapshots``.
    A commit that settles the root sets ``root.purge_at``, when the tree's retention ends, and the
    session it frees gets the same; the other items of ``expiring`` (the tree as it was loaded) and
    those this commit writes get it too where the whole commit is one transaction (else the sweeper
    gives it at the root's retention end: see service.retention).
    """

    root: TurnRecord
    expected_version: int
    expected_status: TurnStatus
    expected_lease_owner: str | None
    expected_lease_expired_by: float | None = None
    refuse_if_canceling: bool = False
    settle_session: bool = False
    session_snapshot_key: str | None = None
    agent_snapshots: dict[str, str] | None = None
    new_interactions: list[InteractionRecord] = field(default_factory=list)
    interaction_changes: list[tuple[InteractionRecord, InteractionStatus]] = field(default_factory=list)
    children: list[TurnRecord] = field(default_factory=list)
    events: list[OutboxEvent] = field(default_factory=list)
    expiring: TurnTree | None = None

    def applied_to(self, tree: TurnTree) -> TurnTree:
        """``tree`` as it is once this commit is written (so no read is needed to show it)."""
        children = {c.turn_id: c for c in tree.children} | {c.turn_id: c for c in self.children}
        changed = {i.request_id: i for i, _ in self.interaction_changes} | {
            i.request_id: i for i in self.new_interactions
        }
        interactions = {i.request_id: i for i in tree.interactions} | changed
        return TurnTree(
            root=self.root,
            children=list(children.values()),
            interactions=list(interactions.values()),
            actions=tree.actions,
        )


@dataclass(frozen=True)
class DueTurn:
    """An unsettled root turn as the sweeper's index holds it: when it was due a look (``due_at``),
    whether the sweeper had given up on it (``stuck``), and the index partition it was found in."""

    root: TurnRecord
    due_at: float
    partition: str
    stuck: bool = False


@dataclass(frozen=True)
class Expiring:
    """A record whose retention has ended, as the sweeper's index holds it: a root turn (``turn_id``)
    or a session (``turn_id`` None), the snapshots it points at, when its retention ended, and the
    index partition it was found in."""

    session_id: str
    turn_id: str | None
    snapshots: frozenset[str]
    purge_at: float
    partition: str


class TurnRecords(ABC):
    """Sessions and their turn trees: a turn begun, a tree read, leased, canceled and committed."""

    @abstractmethod
    def get_session(self, session_id: str) -> SessionRecord | None: ...

    @abstractmethod
    def begin_turn(self, seen: SessionRecord | None, session: SessionRecord, turn: TurnRecord) -> bool:
        """Create ``turn`` leased and make it the session's active turn, if the session is still as
        ``seen`` and has no active turn. False when another turn got there first."""

    @abstractmethod
    def load_tree(self, session_id: str, root_turn_id: str) -> TurnTree | None: ...

    @abstractmethod
    def tree_items(self, session_id: str, root_turn_id: str) -> list[dict[str, Any]]:
        """Every item of the turn tree as stored (turns, interactions, journal entries, outbox items),
        decoded: what an operator inspects."""

    @abstractmethod
    def republish(self, session_id: str, now: float) -> int:
        """Have the session's unpublished outbox items delivered to the publisher again; how many."""

    @abstractmethod
    def get_task_token(self, session_id: str, root_turn_id: str) -> str | None:
        """The task token a Step Functions workflow stored on the root turn to wait for it to settle
        (read strongly consistent: a workflow may have stored it a moment ago)."""

    @abstractmethod
    def callback_told(self, root: TurnRecord, told: Literal["delivered", "closed"]) -> bool:
        """Record on settled root turn ``root`` that the durable function waiting on its callback was
        told (or could no longer be), taking the turn out of the sweeper's due looks; False where that
        was recorded already."""

    @abstractmethod
    def reindex_settled(self, root: TurnRecord) -> bool:
        """Put settled root turn ``root`` where its state says in the sweeper's index (by its retention),
        if it is still at ``root.version``: one a stale write left among the due turns."""

    @abstractmethod
    def acquire_lease(
        self, session_id: str, root_turn_id: str, lease_owner: str, now: float, until: float, *, takeover: bool
    ) -> TurnRecord | None:
        """Lease a waiting turn with no open interactions (or, with ``takeover``, a running turn whose
        lease has expired or that is unleased: checkpointed) and mark it running. None when the turn
        is not in that state."""

    @abstractmethod
    def renew_lease(self, turn: TurnRecord, lease_owner: str, now: float, until: float) -> TurnRecord:
        """Extend the lease and return the turn as stored (so its cancel request can be seen).
        Raises ``LeaseLostError`` when ``lease_owner`` no longer holds it."""

    @abstractmethod
    def check_lease(self, turn: TurnRecord, lease_owner: str) -> bool:
        """Whether a cancel of the turn was requested, read (consistently, writing nothing) while
        ``lease_owner`` holds its lease. Raises ``LeaseLostError`` when it does not."""

    @abstractmethod
    def release_lease(
        self, turn: TurnRecord, lease_owner: str, status: TurnStatus, now: float, error: str | None = None
    ) -> None:
        """Give the lease up without committing, leaving the turn in ``status`` with ``error`` saying
        why (so a client can tell a turn stuck on a problem from a busy one)."""

    @abstractmethod
    def request_cancel(self, session_id: str, root_turn_id: str, now: float) -> TurnRecord | None:
        """Mark an unsettled turn's tree as canceling; return the turn (unchanged if already settled)."""

    @abstractmethod
    def commit(self, commit: Commit) -> None:
        """Apply ``commit`` atomically. Raises ``StaleCommitError`` when its expectations do not hold."""


class SweeperIndex(ABC):
    """The sweeper's index of unsettled root turns, and of records whose retention ended."""

    @abstractmethod
    def due_turns(self, now: float, limit: int, *, stuck: bool = False) -> list[DueTurn]:
        """Up to ``limit`` unsettled root turns due a look by ``now``, earliest first (``stuck``: of
        those the sweeper gave up on, due another try)."""

    @abstractmethod
    def count_stuck(self, also: Sequence[TurnRecord] = ()) -> int:
        """How many turns the sweeper has given up on, as the table holds them now: those its index
        lists, and ``also`` (the root turns a caller just gave up on, which the index may not list
        yet), each confirmed by a consistent read (a turn the index still lists that moved since is
        not counted)."""

    @abstractmethod
    def reschedule(self, found: DueTurn, due_at: float, *, swept: bool = False, stuck: bool = False) -> bool:
        """Make ``found`` due its next look at ``due_at`` (``swept``: count one more move of the
        sweeper's; ``stuck``: among those it gave up on), if nothing wrote its due time since it was
        found. False when something did (that due time stands)."""

    @abstractmethod
    def due_expiries(self, now: float, limit: int) -> list[Expiring]:
        """Up to ``limit`` root turns and sessions whose retention ended by ``now``, earliest first."""

    @abstractmethod
    def live_snapshots(self, session_id: str, now: float) -> set[str]:
        """The snapshots that the session's records whose retention has not ended point at."""

    @abstractmethod
    def claim_expiry(self, expiring: Expiring, now: float) -> bool:
        """Mark ``expiring`` as retiring, if its retention still ends when it did and has ended by
        ``now``: from then nothing brings it back (a turn beginning, a restore). False otherwise."""

    @abstractmethod
    def expire_tree(self, expiring: Expiring) -> int:
        """Give every other item of an expired root turn's tree (child turns, interactions, journal
        entries) the root's ``purge_at`` (DynamoDB's TTL deletes them); how many needed it."""

    @abstractmethod
    def forget_expiry(self, expiring: Expiring) -> bool:
        """Take ``expiring`` out of the sweeper's index (its snapshots retired), if its retention still
        ends when it did. False otherwise."""


class Deletions(ABC):
    """A session's deletion and restoration, marked on every record (see store.deletion)."""

    @abstractmethod
    def begin_deletion(self, session: SessionRecord, generation: int, now: float, by: str) -> bool:
        """Mark the session deleted by ``generation`` (and ``deleting``), if it is as ``session`` was
        read, has no active turn and is within its retention. False otherwise: nothing was written."""

    @abstractmethod
    def mark_items(self, session_id: str, generation: int, deleted: bool, purge_at: float, now: float) -> bool:
        """Mark every item of the session within its retention deleted by ``generation`` (``deleted``),
        or unmark those it marked, their retention ending at ``purge_at``; only those not so yet. False
        when the session no longer has ``generation`` (a restore or another deletion came between)."""

    @abstractmethod
    def end_deletion(self, session: SessionRecord, generation: int, purge_at: float, event: OutboxEvent) -> bool:
        """The deletion ``generation`` is done: the session's retention ends at ``purge_at``; ``event``
        is written. False when the session is not being deleted by ``generation``."""

    @abstractmethod
    def end_restore(
        self, session: SessionRecord, generation: int, now: float, purge_at: float, event: OutboxEvent
    ) -> bool:
        """The session is no longer deleted (its items unmarked), its retention ending at ``purge_at``;
        ``event`` is written. False when it is not deleted by ``generation``, or past its retention."""


class Listings(ABC):
    """The audit trail's pages, the inbox's, and a question by its request id: reads of an index across
    sessions."""

    @abstractmethod
    def list_audit(
        self, day: str, after: str | None, since: float, until: float, limit: int
    ) -> tuple[list[tuple[str, AuditRecord]], bool]:
        """Up to ``limit`` audit records of the UTC ``day`` made in [``since``, ``until``), oldest first,
        after the sort key ``after``, each with its sort key; and whether the day holds more."""

    @abstractmethod
    def list_inbox(
        self, principal: str | None, now: float, limit: int, after: str | None = None
    ) -> tuple[list[InteractionRecord], str | None]:
        """Up to ``limit`` requested, unexpired interactions, most urgent first, of every session
        (``principal`` None) or of ``principal``'s sessions, after the place ``after`` in that order;
        and the place the next page starts after (None: there is no next page)."""

    @abstractmethod
    def find_interaction(self, request_id: str) -> InteractionRecord | None:
        """The interaction ``request_id`` names, whichever session asked it (None: none is, or the index
        does not list it yet: it lists a question a moment after it is asked)."""

    @staticmethod
    @abstractmethod
    def inbox_partition(principal: str | None) -> tuple[str, str]:
        """The index and partition a principal's inbox is read from (a page's start must be in it)."""


class AuditDelivery(ABC):
    """The audit trail as delivered to its bucket: the records of an hour, as stored, and how far the
    delivery got (service.audit.delivery)."""

    @abstractmethod
    def audit_items(self, since: float, until: float) -> list[tuple[str, str, str, float]]:
        """Every record made in [``since``, ``until``): partition key, sort key, record (JSON text) and
        ``purge_at``, by sort key then partition key, read consistently."""

    @abstractmethod
    def delivery_head(self) -> dict[str, str] | None:
        """The last hour delivered (``hour``), its digest's ``digest_key`` and ``digest_sha256``; None: none."""

    @abstractmethod
    def advance_delivery(self, previous: str | None, head: dict[str, str]) -> bool:
        """Move the head to ``head`` if it is still at the hour ``previous``; False: another moved it."""


class ActionJournal(ABC):
    """The action journal: an approved action begun, finished, not run or of unknown outcome."""

    @abstractmethod
    def begin_action(
        self,
        session_id: str,
        root_turn_id: str,
        action: ActionRecord,
        lease_owner: str,
        until: float,
        grant: GrantRecord | None = None,
        granted: OutboxEvent | None = None,
    ) -> ActionRecord | None:
        """Record that an approved action starts (``action``, status ``started``), in the same
        transaction as renewing ``lease_owner``'s lease until ``until``, which requires that it still
        runs the turn and no cancel was requested (else ``LeaseLostError``: nothing starts). None when
        it was recorded now; otherwise the entry an earlier attempt left. ``grant``: the standing grant
        that approved it, which must then be neither revoked nor expired (at ``action.started_at``) in
        the same transaction (else ``GrantLapsedError``: nothing starts), with its ``granted`` event."""

    @abstractmethod
    def finish_action(
        self,
        session_id: str,
        root_turn_id: str,
        action: ActionRecord,
        result: dict[str, Any],
        now: float,
        lease_owner: str,
        audit: AuditRecord | None = None,
    ) -> bool:
        """Record the action's result (with its ``audit`` record, in the same transaction). True when
        ``lease_owner`` still ran the turn; otherwise the result is recorded as late (the turn
        untouched), an outbox event reports it, and False."""

    @abstractmethod
    def mark_action_not_run(
        self, session_id: str, root_turn_id: str, action: ActionRecord, now: float, audit: AuditRecord | None = None
    ) -> None:
        """Record that a started action never ran (its runner lost the turn first), and report it (and
        append ``audit``, in the same transaction)."""

    @abstractmethod
    def mark_action_unknown(
        self, session_id: str, root_turn_id: str, action_key: str, now: float, audit: AuditRecord | None = None
    ) -> ActionRecord:
        """Record that a run found the action's outcome unknown (so the turn shows it in doubt), if it
        is still ``started`` (the first run to find it so appends ``audit`` in the same transaction);
        return the entry as it now is (its runner may have recorded what happened meanwhile, which then
        stands)."""

    @abstractmethod
    def action_fence(self, session_id: str, root_turn_id: str, action: ActionRecord) -> dict[str, Any]:
        """A ``TransactWriteItems`` ``ConditionCheck`` that holds only while ``action`` (as begun) is
        still the live attempt: started under its lease generation, its outcome not reported unknown."""

    @abstractmethod
    def abandon_action(self, session_id: str, root_turn_id: str, action_key: str) -> None:
        """Forget a started action that paused before doing anything (it raised an interrupt); one
        whose outcome a takeover already reported unknown is recorded ``not_run`` instead."""


class Store(
    TurnRecords, Answers, ActionJournal, SweeperIndex, Deletions, Listings, LinkRecords, AuditDelivery, GrantRecords
):
    """Durable records of sessions, turns, interactions, the action journal and the outbox: the
    interface of every record family at once (one implementation, ``DynamoDBStore``, made of one part
    per family). A use case needs only its families' methods; the families are the interfaces."""


class Snapshots(ABC):
    """The serialised state of agents, each written once under a new, immutable key."""

    @abstractmethod
    def put(self, key: str, snapshot: dict[str, Any]) -> str:
        """Write a snapshot under a new, immutable key; the key it is kept under (which a record then
        points at): ``key``, or ``key`` saying where it is kept."""

    @abstractmethod
    def get(self, key: str) -> Any:
        """The snapshot under ``key``; ``SnapshotError`` if it is missing or cannot be read."""

    @abstractmethod
    def retire(self, keys: list[str], now: float) -> None:
        """Mark snapshots that nothing points at any more (at ``now``) to be deleted later."""

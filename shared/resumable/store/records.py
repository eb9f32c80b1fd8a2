"""What the store keeps: sessions, turns, interactions, the action journal and outbox events."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

TurnStatus = Literal["running", "waiting", "completed", "failed", "canceled", "interrupted", "expired"]
SETTLED: frozenset[str] = frozenset({"completed", "failed", "canceled", "interrupted", "expired"})

InteractionStatus = Literal["requested", "answered", "superseded", "expired"]


class Record(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)


class SessionRecord(Record):
    """A conversation with one root agent. ``snapshot_key`` is the root agent's latest committed state;
    ``agent_snapshots`` are the latest committed snapshots of agents that keep their own (S3Session).
    ``purge_at``: while no turn is active, when the session's retention ends (see service.retention).
    ``deletions`` counts its deletions; while it is deleted, ``deleted_generation`` is the latest (every
    item of the session carries it too), with when and by whom, and ``deleting`` until every item is
    marked (see service.sessions.deletion)."""

    session_id: str
    principal: str | None = None
    active_turn_id: str | None = None
    snapshot_key: str | None = None
    agent_snapshots: dict[str, str] = Field(default_factory=dict)
    purge_at: float | None = None
    deletions: int = 0
    deleted_generation: int | None = None
    deleted_at: float | None = None
    deleted_by: str | None = None
    deleting: bool = False
    created_at: float
    updated_at: float

    def expired(self, now: float) -> bool:
        return expired(self.purge_at, now)

    @property
    def deleted(self) -> bool:
        return self.deleted_generation is not None

    @property
    def snapshots(self) -> set[str]:
        """The snapshots it points at."""
        return {k for k in [self.snapshot_key, *self.agent_snapshots.values()] if k}


def expired(purge_at: float | None, now: float) -> bool:
    """Whether a record whose retention ends at ``purge_at`` is past it: gone, for every reader, before
    DynamoDB's TTL deletes it."""
    return purge_at is not None and purge_at <= now


class TurnRecord(Record):
    """A root turn (``parent_turn_id`` None) or a child turn (one sub-agent call inside another turn).

    Relations are immutable. Only the root turn is leased and versioned: the whole tree advances
    through the root's commits. ``snapshot_key`` is the root agent's state at the turn's last commit;
    ``base_snapshot_key`` the session's conversation when the turn began; ``agent_snapshots`` the
    snapshots of the context-preserving agents this turn has reached (``base_agent_snapshots``: the
    session's, when it began; None for a turn begun before resumable recorded them). ``workflow``: a
    Step Functions workflow started the turn and waits for it to settle on ``task_token``, which the
    workflow writes itself (no commit touches it). ``callback_id``: a Lambda durable function waits for
    the turn to settle on this callback (given at its start; the turn's id is derived from it; never
    shown: it is the callback's only credential); ``callback_told``, once the settled turn was sent to
    it (``delivered``) or could no longer be (``closed``): until then the sweeper's index holds the turn
    as due (service.advancing.callback); ``callback_heartbeat``, the seconds within which the function
    must hear from the service while the turn waits (the sweeper sends a heartbeat every third of it).
    ``sweeps``: how many times the sweeper moved the root on since its last commit (see
    service.operating.sweep). ``purge_at``: once settled, when its retention ends (see
    service.retention). ``deleted_generation``: its session was deleted (service.sessions.deletion).
    ``principal`` is the session's (who owns it); ``started_by``, the principal that started this turn
    (an approver may start one in another's session; None: the application, or a turn begun before
    resumable recorded it).
    """

    session_id: str
    turn_id: str
    root_turn_id: str
    parent_turn_id: str | None = None
    parent_tool_use_id: str | None = None
    agent: str
    agent_path: list[str]
    status: TurnStatus
    version: int = 0
    lease_owner: str | None = None
    lease_expires_at: float | None = None
    lease_generation: int = 0
    snapshot_key: str | None = None
    base_snapshot_key: str | None = None
    agent_snapshots: dict[str, str] = Field(default_factory=dict)
    base_agent_snapshots: dict[str, str] | None = None
    prompt: str | None = None
    cancel_requested: bool = False
    output: str | None = None
    error: str | None = None
    open_interactions: int = 0
    principal: str | None = None
    started_by: str | None = None
    started_by_name: str | None = None
    workflow: bool = False
    task_token: str | None = None
    callback_id: str | None = Field(default=None, repr=False)  # (a credential: never in a log line)
    callback_told: Literal["delivered", "closed"] | None = None
    callback_heartbeat: int | None = None
    sweeps: int = 0
    purge_at: float | None = None
    deleted_generation: int | None = None
    created_at: float
    updated_at: float

    @property
    def settled(self) -> bool:
        return self.status in SETTLED

    def expired(self, now: float) -> bool:
        return expired(self.purge_at, now)

    @property
    def snapshots(self) -> set[str]:
        """The snapshots it points at."""
        keys = [self.snapshot_key, self.base_snapshot_key, *self.agent_snapshots.values()]
        keys += list((self.base_agent_snapshots or {}).values())
        return {k for k in keys if k}


class Vote(Record):
    """One approver's approval of a question asked under an approval rule: when, with the input it
    approved (None: the input asked) and the note it gave."""

    at: float
    input: Any = None
    message: str | None = None
    authentication: dict[str, str] | None = None
    """How the approver proved who it was (see ``AuditRecord.authentication``)."""


class InteractionRecord(Record):
    """The durable record of one interrupt that waits for a person.

    The display detail (name, reason, agent path) never changes; the response is written once.
    ``principal`` is the principal whose session it is (only they, or an approver, may answer it);
    ``started_by``, the principal that started its turn (what an approval rule's self-approval means).
    ``editable``: an approval whose answer may edit the tool's input, which must then match
    ``input_schema`` (the tool's JSON Schema). ``asked_in_version``: the root version of the commit
    that asked it (a commit attempt that did not land may have written it before its last transaction).
    ``rule``: the approval rule it was asked under (``ApprovalRule``'s JSON; None: one answer by whoever
    may answer the session's questions); ``votes``: the approvals given so far under it, by principal
    (``vote_count`` of them), until the one that reaches its ``required`` settles it with them;
    ``escalated_at``: when its rule's ``escalate_to`` were let answer it too.

    What the approver is shown to judge it, fixed when it is asked: ``started_by_name`` (the name
    sign-in gave who started the turn), ``root_prompt`` (the root turn's prompt, cut), ``risk`` (the
    higher of the tool's and the rule's) and ``confirm`` (approving needs a confirmation naming what
    will happen). ``dismissed_by``: the principals who will not answer it (hidden from their inbox).
    ``answered_via``: where the answer came from (``cli``, ``page``, ``api``, ...).
    """

    session_id: str
    root_turn_id: str
    turn_id: str
    request_id: str
    interrupt_id: str
    name: str
    reason: Any = None
    agent_path: list[str]
    principal: str | None = None
    started_by: str | None = None
    started_by_name: str | None = None
    root_prompt: str | None = None
    risk: str | None = None
    confirm: bool = False
    dismissed_by: list[str] = Field(default_factory=list)
    status: InteractionStatus
    editable: bool = False
    input_schema: dict[str, Any] | None = None
    asked_in_version: int | None = None
    rule: dict[str, Any] | None = None
    votes: dict[str, Vote] = Field(default_factory=dict)
    vote_count: int = 0
    escalated_at: float | None = None
    response: Any = None
    answered_by: str | None = None
    answered_at: float | None = None
    answered_via: str | None = None
    expires_at: float
    purge_at: float | None = None
    deleted_generation: int | None = None
    created_at: float
    updated_at: float

    @property
    def escalates_at(self) -> float | None:
        """When its rule lets ``escalate_to`` answer it too, while that is still to come."""
        after = (self.rule or {}).get("escalate_after")
        if self.status != "requested" or self.escalated_at is not None or not isinstance(after, int | float):
            return None
        return self.created_at + after if math.isfinite(after) else None  # (after infinity: never)


ActionStatus = Literal["started", "finished", "not_run"]


class ActionRecord(Record):
    """The action journal's entry for one approved action: it started (under lease generation
    ``lease_generation``), and once it did, its result; or it never ran (``not_run``: its runner lost
    the turn before it started it).

    ``outcome_unknown_at``: a later run found it started and not finished and told the model its
    outcome is unknown; the turn shows it among its actions in doubt, with what became known since.
    ``late``: its result was recorded after its runner had lost the turn (never changing the turn).
    """

    key: str
    status: ActionStatus
    turn_id: str = ""
    tool: str = ""
    agent_path: list[str] = Field(default_factory=list)
    input: Any = None
    lease_generation: int = 0
    result: dict[str, Any] | None = None
    started_at: float
    finished_at: float | None = None
    outcome_unknown_at: float | None = None
    late: bool = False
    grant_id: str | None = None
    """The standing grant that approved it without a question, if one did."""


AuditKind = Literal["vote", "decision", "action", "refused", "grant"]
AuditOutcome = Literal["voted", "approved", "denied", "ran", "failed", "unknown", "not_run", "refused", "revoked"]
AnswerRefusal = Literal[
    "not_an_approver", "self_approval", "duplicate_vote", "other_input", "after_settlement", "turn_canceled"
]


class AuditVote(Record):
    """One approval counted toward a decision under an approval rule."""

    by: str
    at: float
    authentication: dict[str, str] | None = None
    message: str | None = None


class AuditRecord(Record):
    """One entry of the audit trail, written once in the transaction of what it records and never
    changed: an approval that waits for more (``vote``: ``voted``), the answer that settled a question
    (``decision``: ``approved`` or ``denied``, with every vote that counted), or what became of the
    approved action (``action``: ``ran``, ``failed`` (it returned an error), ``unknown`` (it started and
    its result was never recorded), ``not_run``), or an answer refused though its caller may see the
    question (``refused``, ``refusal`` saying why: ``not_an_approver``, ``self_approval``,
    ``duplicate_vote``, ``other_input`` (a vote for another input than the votes so far),
    ``after_settlement``, ``turn_canceled``), or a standing grant revoked (``grant``: ``revoked``, under
    the request id of the approval that gave it). ``request_id`` ties a question's entries together;
    ``started_by`` is who started its turn, and ``rule`` the approval rule in force (None: none).
    ``grant``: the standing grant an approval gave (of a decision), or that approved the call without a
    question (of an action), or that was revoked: its id, scope, grantor (``by``), when (``at``), rule,
    ``expiresAt`` and ``inputs``.

    ``by`` answered (a principal; ``application`` for the application itself, ``expiry`` for an
    approval rule that denies at expiry), proving who it was as ``authentication`` says:
    ``{"method": "iam", "arn": ...}``, ``{"method": "jwt", "subject": ..., "issuer": ...}``,
    ``{"method": "application"}`` or ``{"method": "expiry"}``. The digests are ``sha256:`` of the
    input's canonical JSON (see ``service.audit.digest``); ``input_asked`` and ``input_approved`` hold
    the inputs themselves only where the deployment keeps them (``AUDIT_INPUTS=keep``). ``purge_at``:
    when its own retention (``AUDIT_RETENTION_DAYS``) ends, whatever becomes of its session.
    """

    kind: AuditKind
    outcome: AuditOutcome
    at: float
    session_id: str
    root_turn_id: str
    turn_id: str
    request_id: str
    tool: str | None = None
    agent_path: list[str] = Field(default_factory=list)
    rule: str | None = None
    started_by: str | None = None
    by: str | None = None
    authentication: dict[str, str] | None = None
    message: str | None = None
    refusal: AnswerRefusal | None = None
    votes: list[AuditVote] = Field(default_factory=list)
    input_asked_digest: str | None = None
    input_approved_digest: str | None = None
    input_asked: Any = None
    input_approved: Any = None
    inputs_kept: bool = False
    late: bool = False
    grant: dict[str, Any] | None = None
    purge_at: float


class GrantRecord(Record):
    """A standing grant: ``granted_by`` approved question ``request_id`` and let later calls of ``tool``
    (whose inputs match ``inputs``: a field name to an ``fnmatch`` pattern of its value, None: any input)
    under the rule titled ``rule`` run without a question until ``expires_at``, in ``scope``: the session
    ``session_id``, or every session of ``principal`` (who started that session). ``revoked_by`` and
    ``revoked_at`` once revoked; ``purge_at``: when the table lets it go."""

    grant_id: str
    scope: Literal["session", "principal"]
    session_id: str
    principal: str | None = None
    tool: str
    rule: str
    inputs: dict[str, str] | None = None
    granted_by: str
    granted_at: float
    expires_at: float
    root_turn_id: str
    request_id: str
    revoked_by: str | None = None
    revoked_at: float | None = None
    purge_at: float

    def live(self, now: float) -> bool:
        return self.revoked_at is None and self.expires_at > now


LinkClaim = Literal["claimed", "used", "unissued"]


class IssuedLink(Record):
    """A one-click decision link as issued: its question, whom it answers as, the digest of the secret
    its token holds (the secret itself is never stored), and when it was used."""

    turn_id: str
    request_id: str
    principal: str
    digests: list[str]
    used_at: float | None = None


class OutboxEvent(Record):
    """An event written in the same transaction as the state change it describes."""

    type: str
    turn_id: str | None
    """The root turn it is about; None for an event of the whole session."""
    detail: dict[str, Any] = Field(default_factory=dict)
    created_at: float


class TurnTree(Record):
    """A root turn with its child turns, interactions and approved actions in doubt (whose outcome a
    run could not know), as one query returns them."""

    root: TurnRecord
    children: list[TurnRecord]
    interactions: list[InteractionRecord]
    actions: list[ActionRecord] = Field(default_factory=list)

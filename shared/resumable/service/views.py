"""What callers see: the Turn and its interactions and children, in the API's shape (camelCase)."""

from __future__ import annotations

import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from resumable.clock import iso
from resumable.runtime.interrupts import APPROVAL_INTERRUPT
from resumable.runtime.rules import RISKS, ApprovalRule, Risk
from resumable.service.access import rule_of
from resumable.service.limits import is_preview
from resumable.store.outbox import impact_of
from resumable.store.records import (
    ActionRecord,
    InteractionRecord,
    InteractionStatus,
    SessionRecord,
    TurnRecord,
    TurnStatus,
    TurnTree,
)


class View(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True, defer_build=True
    )


class GrantsView(View):
    """What an approver may grant with an approval under the rule (docs/approval-rules.md#standing-grants)."""

    max: float = Field(description="The longest a grant may last, in seconds.")
    scopes: list[str] = Field(description="'session' (this session) and/or 'principal' (its principal's sessions).")
    destructive: bool = Field(description="Whether a destructive call may be granted.")


class RuleView(View):
    """The approval rule a question was asked under."""

    name: str = Field(description="What messages call the rule (its tool patterns unless named).")
    tools: list[str]
    approvers: list[str] | None = Field(
        description="Principal patterns and 'group:NAME' entries that may answer; null: whoever may answer the session."
    )
    required: int = Field(description="How many distinct approvers must approve before the call runs.")
    self_approval: bool = Field(description="Whether the principal who started the turn may approve its own call.")
    escalate_after: float | None = Field(default=None, description="Seconds after it was asked that it escalates.")
    escalate_to: list[str] | None = Field(default=None, description="Who may answer it too once it escalated.")
    on_expiry: str = Field(default="expire", description="'expire' (the turn settles expired) or 'deny'.")
    grants: GrantsView | None = Field(
        default=None, description="What an approval may also grant (null: no grants under this rule)."
    )

    @classmethod
    def of(cls, rule: ApprovalRule) -> RuleView:
        return cls(
            name=rule.title,
            tools=list(rule.tools),
            approvers=None if rule.approvers is None else list(rule.approvers),
            required=rule.required,
            self_approval=rule.allows_self_approval,
            escalate_after=rule.escalate_after,
            escalate_to=None if rule.escalate_to is None else list(rule.escalate_to),
            on_expiry=rule.on_expiry,
            grants=GrantsView.model_validate(rule.grants.model_dump()) if rule.grants else None,
        )


class VoteView(View):
    """One approver's approval of a question asked under a rule."""

    by: str
    at: str
    input: Any = Field(default=None, description="The edited input it approved; null: the input asked.")
    message: str | None = None


class InteractionView(View):
    session_id: str
    request_id: str
    interrupt_id: str
    turn_id: str = Field(description="The root turn: the one to read and to answer through.")
    child_turn_id: str | None = Field(description="The sub-agent's turn that asked; null for the root agent.")
    name: str
    reason: Any
    agent_path: list[str]
    status: InteractionStatus
    editable: bool = Field(
        description="An approval whose answer may edit the input: {'decision': 'approve', 'input': {...}}."
    )
    response: Any
    answered_by: str | None
    answered_at: str | None
    expires_at: str | None
    rule: RuleView | None = Field(
        default=None, description="The approval rule it was asked under; null: one answer by whoever may answer."
    )
    approvals: list[VoteView] = Field(
        default_factory=list, description="The approvals given so far under its rule, oldest first."
    )
    escalated_at: str | None = Field(
        default=None, description="When its rule's escalateTo were let answer it too; null: not escalated."
    )
    approved_by_you: bool = Field(
        default=False,
        description="In the inbox's listings and GET /interactions/{requestId} only (false elsewhere): the reader "
        "approved it already (it waits for other approvers, or was settled since).",
    )
    summary: str = Field(
        default="",
        description="What answering it does, in a few words: the tool and its input's values ('delete_record "
        "prod-db'), or the question's name. A confirmation names it.",
    )
    decision: Decision | None = Field(
        default=None,
        description="How it was settled: approved, approved_with_edits, denied, answered (a question that is not "
        "an approval), expired or superseded (its turn was canceled or moved on); null while it waits.",
    )
    approved_input: Any = Field(
        default=None, description="The input an approval with edits approved (what ran); null otherwise."
    )
    answered_via: str | None = Field(default=None, description="Where the answer came from: cli, page, api, ...")
    started_by: str | None = Field(default=None, description="The principal who started the turn that asks.")
    started_by_name: str | None = Field(
        default=None,
        description="The name their sign-in token gives (name, email, preferred_username...), where it gives one: "
        "a claim the person may be able to set, shown beside startedBy, never instead of it.",
    )
    root_prompt: str | None = Field(default=None, description="The prompt that started the root turn (cut).")
    explanation: str | None = Field(
        default=None, description="Why the agent makes the call, in its words (its reply's text, or the call's reason)."
    )
    risk: Risk | None = Field(default=None, description="low, medium, high or destructive (the tool's or its rule's).")
    impact: str | None = Field(default=None, description="One line: what the call touches.")
    confirm: bool = Field(
        default=False,
        description="Approving needs a confirmation naming what will happen (destructive, or its rule's).",
    )
    dismissed_by_you: bool = Field(
        default=False, description="In the inbox and GET /interactions/{requestId}: the reader dismissed it."
    )
    started_by_you: bool = Field(
        default=False,
        description="In the listing of the turns you started (started=true) and GET /interactions/{requestId} only, "
        "false elsewhere: you started its turn. Under a rule without selfApproval your approval cannot count; you "
        "may deny it (withdraw it) or cancel the turn.",
    )

    @property
    def needs_confirmation(self) -> bool:
        """Whether approving it needs a confirmation naming what will run, on every channel (the page asks
        again, the CLI has the tool's name typed, Slack shows its dialog, a decision link's box): a
        destructive call, or its rule's ``confirm``."""
        return self.confirm or self.risk == "destructive"

    @classmethod
    def of(cls, record: InteractionRecord, now: float | None = None) -> InteractionView:
        """The interaction as a caller sees it; one past its expiry shows as ``expired`` even before
        its turn is settled."""
        overdue = now is not None and record.status == "requested" and record.expires_at <= now
        rule = rule_of(record)
        return cls(
            session_id=record.session_id,
            request_id=record.request_id,
            interrupt_id=record.interrupt_id,
            turn_id=record.root_turn_id,
            child_turn_id=None if record.turn_id == record.root_turn_id else record.turn_id,
            name=record.name,
            reason=record.reason,
            agent_path=record.agent_path,
            status="expired" if overdue else record.status,
            editable=record.editable,
            response=record.response,
            answered_by=record.answered_by,
            answered_at=iso(record.answered_at),
            expires_at=iso(record.expires_at),
            rule=None if rule is None else RuleView.of(rule),
            escalated_at=iso(record.escalated_at),
            summary=summary_of(record),
            decision=decision_of(record),
            approved_input=approved_input(record),
            answered_via=record.answered_via,
            started_by=record.started_by,
            started_by_name=record.started_by_name,
            root_prompt=record.root_prompt,
            explanation=_text(record.reason, "explanation"),
            risk=record.risk if record.risk in RISKS else None,
            impact=impact_of(record),
            confirm=record.confirm,
            approvals=[
                VoteView(by=by, at=iso(vote.at) or "", input=vote.input, message=vote.message)
                for by, vote in sorted(record.votes.items(), key=lambda item: item[1].at)
            ],
        )


Decision = Literal["approved", "approved_with_edits", "denied", "answered", "expired", "superseded"]


def _text(reason: Any, key: str) -> str | None:
    """A text the question's reason carries under ``key`` (None when it carries none, or not text)."""
    said = reason.get(key) if isinstance(reason, dict) else None
    return said if isinstance(said, str) else None


MAX_SUMMARY_CHARS = 120


def summary_of(record: InteractionRecord) -> str:
    """An approval's tool and the values of its input (``delete_record prod-db``); another question's name."""
    reason = record.reason
    if record.name != APPROVAL_INTERRUPT or not isinstance(reason, dict) or not isinstance(reason.get("tool"), str):
        return record.name
    tool_input = reason.get("input")
    values = [] if is_preview(tool_input) else _scalars(tool_input)
    said = " ".join([reason["tool"], *values])
    return said if len(said) <= MAX_SUMMARY_CHARS else said[: MAX_SUMMARY_CHARS - 1] + "…"


def _scalars(value: Any) -> list[str]:
    """The strings, numbers and booleans in ``value``, in order (an object's values, a list's items)."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    if isinstance(value, bool):
        return [str(value).lower()]
    shown = "".join(c for c in str(value) if unicodedata.category(c) not in ("Cc", "Cf"))
    if isinstance(value, int | float | str) and shown.strip():
        return [" ".join(shown.split())]  # (no control or format character: a bidi override reorders nothing)
    return []


def decision_of(record: InteractionRecord) -> Decision | None:
    """How the interaction was settled (None: it waits)."""
    if record.status == "expired":
        return "expired"
    if record.status != "answered":
        return None if record.status == "requested" else "superseded"
    response = record.response
    if record.name != APPROVAL_INTERRUPT or not isinstance(response, dict):
        return "answered"
    if response.get("decision") == "deny":
        return "denied"
    return "approved_with_edits" if approved_input(record) is not None else "approved"


def approved_input(record: InteractionRecord) -> Any:
    """The input an approval with edits approved, when it differs from the input asked (else None)."""
    response, reason = record.response, record.reason
    if record.status != "answered" or record.name != APPROVAL_INTERRUPT or not isinstance(response, dict):
        return None
    edited = response.get("input") if response.get("decision") == "approve" else None
    asked = reason.get("input") if isinstance(reason, dict) else None
    return edited if edited is not None and edited != asked else None


class ChildView(View):
    turn_id: str
    parent_turn_id: str | None
    agent: str
    agent_path: list[str]
    status: TurnStatus

    @classmethod
    def of(cls, record: TurnRecord) -> ChildView:
        return cls(
            turn_id=record.turn_id,
            parent_turn_id=record.parent_turn_id,
            agent=record.agent,
            agent_path=record.agent_path,
            status=record.status,
        )


ActionOutcome = Literal["unknown", "finished_late", "finished", "not_run"]


class ActionView(View):
    """An approved action whose outcome a run could not know (it found it started and not finished,
    and told the model so), with what is known of it now: still ``unknown``; ``finished_late`` (it
    ran, and its result was recorded after its runner had lost the turn: ``result``); ``not_run``
    (its runner lost the turn before it started it)."""

    turn_id: str
    tool: str
    agent_path: list[str]
    input: Any
    outcome: ActionOutcome
    result: Any
    started_at: str | None
    finished_at: str | None
    reported_unknown_at: str | None

    @classmethod
    def of(cls, record: ActionRecord) -> ActionView:
        outcome: ActionOutcome = (
            "unknown"
            if record.status == "started"
            else "not_run"
            if record.status == "not_run"
            else "finished_late"
            if record.late
            else "finished"
        )
        return cls(
            turn_id=record.turn_id,
            tool=record.tool,
            agent_path=record.agent_path,
            input=record.input,
            outcome=outcome,
            result=(record.result or {}).get("content"),
            started_at=iso(record.started_at),
            finished_at=iso(record.finished_at),
            reported_unknown_at=iso(record.outcome_unknown_at),
        )


def _in_doubt(action: ActionRecord, root: TurnRecord) -> bool:
    """Whether a person should be shown what became of an approved action: a run told the model its
    outcome is unknown, its result came in after its runner lost the turn, or its turn settled
    while it was started (or after it was found not run)."""
    return (
        action.outcome_unknown_at is not None
        or action.late
        or (root.settled and action.status in ("started", "not_run"))
    )


class TurnView(View):
    session_id: str
    turn_id: str
    status: TurnStatus
    output: str | None
    error: str | None
    interactions: list[InteractionView]
    children: list[ChildView]
    actions_in_doubt: list[ActionView]
    created_at: str | None
    updated_at: str | None

    @classmethod
    def of(cls, tree: TurnTree, turn_id: str | None = None) -> TurnView:
        """The view of the root turn, or of one of its child turns (with the interactions it owns)."""
        turn = tree.root
        children = sorted(tree.children, key=lambda c: (c.created_at, c.turn_id))
        interactions = sorted(tree.interactions, key=lambda i: (i.created_at, i.request_id))
        actions = sorted((a for a in tree.actions if _in_doubt(a, tree.root)), key=lambda a: (a.started_at, a.key))
        if turn_id is not None and turn_id != tree.root.turn_id:
            turn = next(c for c in tree.children if c.turn_id == turn_id)
            children = [c for c in children if c.parent_turn_id == turn_id]
            interactions = [i for i in interactions if i.turn_id == turn_id]
            actions = [a for a in actions if a.turn_id == turn_id]
        return cls(
            session_id=turn.session_id,
            turn_id=turn.turn_id,
            status=turn.status,
            output=turn.output,
            error=turn.error,
            interactions=[InteractionView.of(i) for i in interactions],
            children=[ChildView.of(c) for c in children],
            actions_in_doubt=[ActionView.of(a) for a in actions],
            created_at=iso(turn.created_at),
            updated_at=iso(turn.updated_at),
        )


class SessionView(View):
    """A session as its deletion and restore leave it."""

    session_id: str
    deleted: bool
    deletion_generation: int | None = Field(description="Which deletion of the session (1, 2, ...); null if live.")
    deleted_at: str | None
    deleted_by: str | None
    restorable_until: str | None = Field(
        description="A deleted session can be restored until then (POST /sessions/{sessionId}/restore)."
    )
    purge_at: str | None = Field(
        description="When its records' retention ends (null while a turn is active); a deleted session's is "
        "restorableUntil."
    )

    @classmethod
    def of(cls, record: SessionRecord) -> SessionView:
        return cls(
            session_id=record.session_id,
            deleted=record.deleted,
            deletion_generation=record.deleted_generation,
            deleted_at=iso(record.deleted_at),
            deleted_by=record.deleted_by,
            restorable_until=iso(record.purge_at) if record.deleted else None,
            purge_at=iso(record.purge_at),
        )

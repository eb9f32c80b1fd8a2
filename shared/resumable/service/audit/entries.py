"""The audit trail: who approved what, when, proving who they were how, seeing which input, and what
became of the action.

Every decision on an approval leaves append-only records (``AuditRecord``), each written in the same
transaction as what it records, so none is lost and none is written for what did not happen: a vote
that waits for more approvals (``vote``), the answer that settles the question (``decision``: with
every vote that counted, the deny message, who answered and how they were authenticated), and what
the approved action did (``action``: ran, failed, outcome unknown, or not run). Records live apart from
sessions: deleting a session, or its retention ending, leaves them; they go only at their own
retention (``AUDIT_RETENTION_DAYS``). Nothing in the API writes or deletes one.

Inputs are recorded as digests (``digest``); the inputs themselves show where ``AUDIT_INPUTS`` says:
``session`` (default) reads them from their question while its session exists (and only if they still
match the digest), ``keep`` keeps them in the record, ``digest`` never shows them.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from resumable.runtime.interrupts import APPROVAL_INTERRUPT
from resumable.service.access import rule_of
from resumable.service.caller import Caller, identity_of
from resumable.service.grants.giving import audited
from resumable.service.ids import request_id
from resumable.service.limits import is_preview
from resumable.store.records import (
    ActionRecord,
    AnswerRefusal,
    AuditOutcome,
    AuditRecord,
    AuditVote,
    GrantRecord,
    InteractionRecord,
    Vote,
)

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

MAX_REFUSAL_CHARS = 1000  # (of what a refused caller was told, kept in its record)
MAX_KEPT_BYTES = 16 * 1024
"""The most of an action's input a record keeps (a question's inputs are bounded where it is asked)."""


def digest(value: Any) -> str | None:
    """``sha256:`` and the hex SHA-256 of ``value``'s canonical JSON (keys sorted, no spaces, UTF-8):
    what an auditor computes from an input to check it is the one recorded. None for no value."""
    if value is None:
        return None
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def authentication_of(caller: Caller | None) -> dict[str, str]:
    """How ``caller`` proved who it was, as its request's authorizer said (``Caller.authentication``)."""
    if caller is None:
        return {"method": "application"}
    return dict(caller.authentication) or {"method": "unrecorded"}


def asked_input(interaction: InteractionRecord) -> Any:
    return interaction.reason.get("input") if isinstance(interaction.reason, dict) else None


def approved_as_asked(interaction: InteractionRecord) -> Any:
    """The input an approval without an edit approves: the one asked; None (not known here) where the
    question showed only a preview of it (the action's record has the digest of the whole)."""
    asked = asked_input(interaction)
    return None if is_preview(asked) else asked


def _entry(deps: Dependencies, interaction: InteractionRecord, at: float, **fields: Any) -> AuditRecord:
    keep = deps.settings.audit_inputs == "keep"
    asked = asked_input(interaction)
    approved = fields.pop("approved", None)
    return AuditRecord(
        at=at,
        session_id=interaction.session_id,
        root_turn_id=interaction.root_turn_id,
        turn_id=interaction.turn_id,
        request_id=interaction.request_id,
        tool=interaction.reason.get("tool") if isinstance(interaction.reason, dict) else None,
        agent_path=interaction.agent_path,
        input_asked_digest=digest(asked),
        input_approved_digest=digest(approved),
        input_asked=asked if keep else None,
        input_approved=approved if keep else None,
        inputs_kept=keep,
        purge_at=at + deps.settings.audit_retention_seconds,
        started_by=interaction.started_by,
        **fields,
    )


def decision_entry(
    deps: Dependencies,
    interaction: InteractionRecord,
    response: dict[str, Any],
    by: str,
    authentication: dict[str, str],
    at: float,
    *,
    rule: str | None = None,
    votes: dict[str, Vote] | None = None,
    grant: dict[str, Any] | None = None,
) -> AuditRecord | None:
    """The record of ``response`` settling the approval ``interaction`` (None for an interrupt of another
    kind: the trail is of approvals), with the ``votes`` given under its rule (the settling one too)."""
    if interaction.name != APPROVAL_INTERRUPT or response.get("decision") not in ("approve", "deny"):
        return None
    approving = response["decision"] == "approve"
    edited = response.get("input")
    return _entry(
        deps,
        interaction,
        at,
        kind="decision",
        outcome="approved" if approving else "denied",
        rule=rule,
        by=by,
        authentication=authentication,
        message=response.get("message"),
        votes=[
            AuditVote(by=who, at=v.at, authentication=v.authentication, message=v.message)
            for who, v in (votes or {}).items()
        ],
        approved=(edited if edited is not None else approved_as_asked(interaction)) if approving else None,
        grant=grant,
    )


def revoke_entry(
    deps: Dependencies, grant: GrantRecord, by: str, authentication: dict[str, str], at: float
) -> AuditRecord:
    """The record of ``by`` revoking ``grant`` (under the request id of the approval that gave it)."""
    return AuditRecord(
        kind="grant",
        outcome="revoked",
        at=at,
        session_id=grant.session_id,
        root_turn_id=grant.root_turn_id,
        turn_id=grant.root_turn_id,
        request_id=grant.request_id,
        tool=grant.tool or None,
        rule=grant.rule,
        by=by,
        authentication=authentication,
        grant=audited(grant),
        purge_at=at + deps.settings.audit_retention_seconds,
    )


def vote_entry(deps: Dependencies, interaction: InteractionRecord, by: str, vote: Vote, rule: str) -> AuditRecord:
    """The record of ``by``'s approval of ``interaction``, which waits for more under its ``rule``."""
    return _entry(
        deps,
        interaction,
        vote.at,
        kind="vote",
        outcome="voted",
        rule=rule,
        by=by,
        authentication=vote.authentication,
        message=vote.message,
        approved=vote.input if vote.input is not None else approved_as_asked(interaction),
    )


def refused_entry(
    deps: Dependencies, interaction: InteractionRecord, response: dict[str, Any], caller: Caller | None,
    refusal: AnswerRefusal, said: str, at: float,
) -> AuditRecord:  # fmt: skip
    """The record of an answer to ``interaction`` that was refused for ``refusal`` (``said``: what the
    caller was told), by a caller who may see the question."""
    rule = rule_of(interaction)
    edited = response.get("input")
    return _entry(
        deps,
        interaction,
        at,
        kind="refused",
        outcome="refused",
        refusal=refusal,
        rule=rule.title if rule is not None else None,
        by=identity_of(caller),
        authentication=authentication_of(caller),
        message=said[:MAX_REFUSAL_CHARS],
        approved=(edited if edited is not None else approved_as_asked(interaction))
        if response.get("decision") == "approve"
        else None,
    )


def action_entry(
    deps: Dependencies, root_turn_id: str, session_id: str, action: ActionRecord, outcome: AuditOutcome, at: float,
    ran_with: Any, rule: str | None = None, started_by: str | None = None, grant: dict[str, Any] | None = None,
) -> AuditRecord:  # fmt: skip
    """The record of what became of an approved action (``ran_with``: the input it was given; kept, where
    inputs are, up to ``MAX_KEPT_BYTES`` of JSON: the whole input is in the snapshot; ``rule``: the
    approval rule its approval was asked under, as its decision's record names it)."""
    keep = deps.settings.audit_inputs == "keep" and len(json.dumps(ran_with).encode()) <= MAX_KEPT_BYTES
    return AuditRecord(
        kind="action",
        outcome=outcome,
        at=at,
        rule=rule,
        started_by=started_by,
        session_id=session_id,
        root_turn_id=root_turn_id,
        turn_id=action.turn_id or root_turn_id,
        request_id=request_id(root_turn_id, action.key),
        tool=action.tool or None,
        agent_path=action.agent_path,
        input_approved_digest=digest(ran_with),
        input_approved=ran_with if keep else None,
        inputs_kept=keep,
        grant=grant,
        purge_at=at + deps.settings.audit_retention_seconds,
    )

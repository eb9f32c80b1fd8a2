"""The outbox: what each change says to the world, written in the change's own transaction, and the
numbering that gives a session's events their order when the publisher puts them on the bus.

An outbox item is ``entity = "event"``; its ``type`` is the event's detail type, its ``detail`` the
fields of that type (camelCase, as published). The publisher adds what every event carries: its
``eventId`` (from the item's key, so every delivery of it has the same), the session, the root turn,
the session's ``sequence`` number and ``occurredAt``.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any
from urllib.parse import quote

from pydantic.alias_generators import to_camel

from resumable.clock import iso
from resumable.runtime.interrupts import APPROVAL_INTERRUPT
from resumable.store.codec import pk
from resumable.store.records import ActionRecord, GrantRecord, InteractionRecord, OutboxEvent, TurnRecord

INTERACTION_REQUESTED = "Interaction Requested"
INTERACTION_ANSWERED = "Interaction Answered"
INTERACTION_CLOSED = "Interaction Closed"
INTERACTION_ESCALATED = "Interaction Escalated"
INTERACTION_VOTED = "Interaction Voted"
TURN_SETTLED = "Turn Settled"
ACTION_REPORTED = "Action Reported"
ACTION_GRANTED = "Action Granted"
SESSION_DELETED = "Session Deleted"
SESSION_RESTORED = "Session Restored"
DETAIL_TYPES = (
    INTERACTION_REQUESTED,
    INTERACTION_ANSWERED,
    INTERACTION_CLOSED,
    INTERACTION_ESCALATED,
    INTERACTION_VOTED,
    TURN_SETTLED,
    ACTION_REPORTED,
    ACTION_GRANTED,
    SESSION_DELETED,
    SESSION_RESTORED,
)

# A commit's events: TURN#<root>#EVENT#<root version>#<n> (numbered together, in n's order). Each
# holds how many the commit wrote (``COMMIT_EVENTS``), so the publisher knows them all without a read.
COMMIT_EVENT = re.compile(r"^(TURN#[^#]+#EVENT#\d{8}#)\d{5}$")
COMMIT_EVENTS = "commit_events"


def commit_event_sk(root_turn_id: str, version: int, n: int) -> str:
    """The key of the ``n``-th event a commit of the root turn at ``version`` writes."""
    return f"TURN#{root_turn_id}#EVENT#{version:08d}#{n:05d}"


def outbox_session(pk: str, sk: str) -> str | None:
    """The session whose outbox item has these keys (``SESSION#<id>``, a sort key with ``#EVENT#``); None
    for any other item of the table (a turn's, the audit trail's, a grant's, ...)."""
    return pk.removeprefix("SESSION#") if pk.startswith("SESSION#") and "#EVENT#" in sk else None


def is_commit_event(sk: str) -> bool:
    """Whether the outbox item at ``sk`` is one of a commit's events (numbered with the others)."""
    return COMMIT_EVENT.match(sk) is not None


def commit_events(sk: str, count: int) -> list[str]:
    """Every event of the commit whose event is at ``sk`` and which wrote ``count``, in its order."""
    commit = COMMIT_EVENT.match(sk)
    return [sk] if commit is None else [f"{commit.group(1)}{n:05d}" for n in range(count)]


_EVENT_IDS = uuid.UUID("6f1d0b5e-6c4e-4b43-9a55-3f0d2f4b7a10")
_SUMMARY_INPUT_CHARS = 400


def event_id(session_id: str, sk: str) -> str:
    """The stable id of the outbox item at ``sk``: the same for every delivery of its event."""
    return str(uuid.uuid5(_EVENT_IDS, f"{pk(session_id)}\n{sk}"))


def answer_path(session_id: str, root_turn_id: str, request_id: str) -> str:
    """The HTTP API path that answers the interaction (ids percent-encoded)."""
    return "/sessions/{}/turns/{}/interactions/{}".format(
        *(quote(part, safe="") for part in (session_id, root_turn_id, request_id))
    )


def _child(interaction: InteractionRecord) -> str | None:
    return None if interaction.turn_id == interaction.root_turn_id else interaction.turn_id


def _tool_call(interaction: InteractionRecord) -> tuple[str | None, Any]:
    """The tool and input an approval asks about (None for another kind of interrupt)."""
    reason = interaction.reason
    if interaction.name == APPROVAL_INTERRUPT and isinstance(reason, dict) and isinstance(reason.get("tool"), str):
        return reason["tool"], reason.get("input")
    return None, None


def summary(interaction: InteractionRecord) -> str:
    """One line a person reads: ``orchestrator -> db_admin wants to run delete_record {"name": "prod-db"}``."""
    path = " -> ".join(interaction.agent_path)
    tool, tool_input = _tool_call(interaction)
    if tool is not None:
        return f"{path} wants to run {tool} {_shown(tool_input)}"
    return f"{path} asks ({interaction.name}): {_shown(interaction.reason)}"


def _shown(value: object) -> str:
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= _SUMMARY_INPUT_CHARS else shown[:_SUMMARY_INPUT_CHARS] + "..."


def _to_answer(interaction: InteractionRecord) -> dict[str, Any]:
    """What an event of an open question says of it: which it is, until when, and where to answer it."""
    return {
        "requestId": interaction.request_id,
        "childTurnId": _child(interaction),
        "expiresAt": iso(interaction.expires_at),
        "answerPath": answer_path(interaction.session_id, interaction.root_turn_id, interaction.request_id),
    }


def interaction_requested(interaction: InteractionRecord) -> OutboxEvent:
    tool, tool_input = _tool_call(interaction)
    return OutboxEvent(
        type=INTERACTION_REQUESTED,
        turn_id=interaction.root_turn_id,
        detail=_to_answer(interaction)
        | {
            "agentPath": interaction.agent_path,
            "name": interaction.name,
            "tool": tool,
            "input": tool_input,
            "editable": interaction.editable,
            "rule": None if interaction.rule is None else {to_camel(k): v for k, v in interaction.rule.items()},
            "reason": interaction.reason,
            "summary": summary(interaction),
            **_judged(interaction),
        },
        created_at=interaction.created_at,
    )


def _judged(interaction: InteractionRecord) -> dict[str, Any]:
    """What a person judges a question by, as the inbox card shows it: the e-mail and Slack show it too."""
    return {
        "startedBy": interaction.started_by,
        "startedByName": interaction.started_by_name,
        "rootPrompt": interaction.root_prompt,
        "risk": interaction.risk,
        "impact": impact_of(interaction),
        "confirm": interaction.confirm,
    }


def impact_of(interaction: InteractionRecord) -> str | None:
    """One line of what the call touches: its rule's, else what the tool declared."""
    for said in (
        (interaction.rule or {}).get("impact"),
        (interaction.reason or {}).get("impact") if isinstance(interaction.reason, dict) else None,
    ):
        if isinstance(said, str) and said:
            return said
    return None


def interaction_voted(
    interaction: InteractionRecord, by: str, approvals: int, required: int, now: float
) -> OutboxEvent:
    """An approval of ``interaction`` under its rule that leaves it waiting for more: ``approvals`` of
    the ``required`` so far, ``by`` the latest."""
    return OutboxEvent(
        type=INTERACTION_VOTED,
        turn_id=interaction.root_turn_id,
        detail={
            "requestId": interaction.request_id,
            "childTurnId": _child(interaction),
            "by": by,
            "approvals": approvals,
            "required": required,
            "votedAt": iso(now),
        },
        created_at=now,
    )


def interaction_escalated(interaction: InteractionRecord, rule: str, to: list[str], now: float) -> OutboxEvent:
    """Nobody settled ``interaction`` in the time its rule gives: ``to`` may answer it now too."""
    return OutboxEvent(
        type=INTERACTION_ESCALATED,
        turn_id=interaction.root_turn_id,
        detail=_to_answer(interaction)
        | {"rule": rule, "escalatedTo": to, "summary": f"escalated to {', '.join(to)}: {summary(interaction)}"}
        | _judged(interaction),
        created_at=now,
    )


def interaction_answered(
    root_turn_id: str, request_id: str, response: Any, answered_by: str, now: float
) -> OutboxEvent:
    decision = response.get("decision") if isinstance(response, dict) else None
    return OutboxEvent(
        type=INTERACTION_ANSWERED,
        turn_id=root_turn_id,
        detail={
            "requestId": request_id,
            "decision": decision if isinstance(decision, str) else None,
            "response": response,
            "answeredBy": answered_by,
            "answeredAt": iso(now),
        },
        created_at=now,
    )


def interaction_closed(interaction: InteractionRecord, why: str) -> OutboxEvent:
    """``interaction`` as it became: ``superseded`` or ``expired`` (never answered)."""
    return OutboxEvent(
        type=INTERACTION_CLOSED,
        turn_id=interaction.root_turn_id,
        detail={
            "requestId": interaction.request_id,
            "childTurnId": _child(interaction),
            "status": interaction.status,
            "why": why,
        },
        created_at=interaction.updated_at,
    )


def turn_settled(root: TurnRecord, reason: str | None = None) -> OutboxEvent:
    """The root turn as it settled."""
    return OutboxEvent(
        type=TURN_SETTLED,
        turn_id=root.turn_id,
        detail={"status": root.status, "output": root.output, "error": root.error, "reason": reason},
        created_at=root.updated_at,
    )


def action_granted(root_turn_id: str, request_id: str, action: ActionRecord, grant: GrantRecord) -> OutboxEvent:
    """An approved call begins without a question (``request_id``: the one it would have had): the
    standing ``grant`` approved it."""
    return OutboxEvent(
        type=ACTION_GRANTED,
        turn_id=root_turn_id,
        detail={
            "requestId": request_id,
            "childTurnId": None if action.turn_id in ("", root_turn_id) else action.turn_id,
            "tool": action.tool,
            "agentPath": action.agent_path,
            "grantId": grant.grant_id,
            "grantedBy": grant.granted_by,
            "grantedAt": iso(grant.granted_at),
            "rule": grant.rule,
            "scope": grant.scope,
            "expiresAt": iso(grant.expires_at),
            "summary": f"{action.tool} ran without a question: {grant.granted_by} granted it ({grant.rule})",
        },
        created_at=action.started_at,
    )


def action_reported(root_turn_id: str, action: ActionRecord, outcome: str) -> OutboxEvent:
    """What became known of an approved action after its runner lost the turn."""
    return OutboxEvent(
        type=ACTION_REPORTED,
        turn_id=root_turn_id,
        detail={
            "outcome": outcome,
            "childTurnId": None if action.turn_id in ("", root_turn_id) else action.turn_id,
            "tool": action.tool,
            "agentPath": action.agent_path,
        },
        created_at=action.finished_at or action.started_at,
    )


def session_deleted(generation: int, by: str, now: float, purge_at: float) -> OutboxEvent:
    """The session was deleted: nothing of it shows any more; it can be restored until ``purge_at``."""
    return OutboxEvent(
        type=SESSION_DELETED,
        turn_id=None,
        detail={"generation": generation, "deletedBy": by, "restorableUntil": iso(purge_at)},
        created_at=now,
    )


def session_restored(generation: int, by: str, now: float) -> OutboxEvent:
    """The deleted session ``generation`` is back, as it was."""
    return OutboxEvent(
        type=SESSION_RESTORED, turn_id=None, detail={"generation": generation, "restoredBy": by}, created_at=now
    )

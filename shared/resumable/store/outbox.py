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

from botocore.exceptions import ClientError
from pydantic.alias_generators import to_camel

from resumable.clock import iso
from resumable.exceptions import NotPublishedError
from resumable.runtime.interrupts import APPROVAL_INTERRUPT
from resumable.store.codec import key, pk, value
from resumable.store.records import ActionRecord, InteractionRecord, OutboxEvent, TurnRecord
from resumable.store.resources import TTL_ATTRIBUTE
from resumable.store.table import (
    CONDITION_FAILED,
    TRANSACTION_CANCELED,
    Table,
    aws_call,
    code_of,
    condition_failed,
    refused_item,
)

INTERACTION_REQUESTED = "Interaction Requested"
INTERACTION_ANSWERED = "Interaction Answered"
INTERACTION_CLOSED = "Interaction Closed"
INTERACTION_ESCALATED = "Interaction Escalated"
TURN_SETTLED = "Turn Settled"
ACTION_REPORTED = "Action Reported"
SESSION_DELETED = "Session Deleted"
SESSION_RESTORED = "Session Restored"
DETAIL_TYPES = (
    INTERACTION_REQUESTED,
    INTERACTION_ANSWERED,
    INTERACTION_CLOSED,
    INTERACTION_ESCALATED,
    TURN_SETTLED,
    ACTION_REPORTED,
    SESSION_DELETED,
    SESSION_RESTORED,
)

# A published outbox item is deleted by DynamoDB's TTL this long after it was put on the bus: longer
# than the stream keeps a record (24 hours), so a redelivered record always finds its item (and its
# number). One the bus never took has no expiry: it waits to be published again.
PURGE_AFTER_SECONDS = 3 * 24 * 3600

# A commit's events: TURN#<root>#EVENT#<root version>#<n> (numbered together, in n's order).
_COMMIT_EVENT = re.compile(r"^(TURN#[^#]+#EVENT#\d{8}#)\d{5}$")
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
        },
        created_at=interaction.created_at,
    )


def interaction_escalated(interaction: InteractionRecord, rule: str, to: list[str], now: float) -> OutboxEvent:
    """Nobody settled ``interaction`` in the time its rule gives: ``to`` may answer it now too."""
    return OutboxEvent(
        type=INTERACTION_ESCALATED,
        turn_id=interaction.root_turn_id,
        detail=_to_answer(interaction)
        | {"rule": rule, "escalatedTo": to, "summary": f"escalated to {', '.join(to)}: {summary(interaction)}"},
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


def _gone(session_id: str, sk: str) -> NotPublishedError:
    return NotPublishedError(
        f"outbox item {sk!r} of session {session_id!r} is gone: its event cannot be numbered or published "
        "(was the session deleted?)"
    )


class OutboxItems(Table):
    """The publisher's side of the outbox: a session's events are numbered 1, 2, 3, ... in the order
    they are published (the session item keeps the last number given), each number given once."""

    @aws_call
    def last_sequence(self, session_id: str) -> int:
        """The last number given to one of the session's events (0: none yet)."""
        item = self.dynamodb.get_item(
            TableName=self.table,
            Key=key(session_id, "SESSION"),
            ConsistentRead=True,
            ProjectionExpression="published_sequence",
        ).get("Item", {})
        return int(item["published_sequence"]["N"]) if "published_sequence" in item else 0

    @aws_call
    def number_event(self, session_id: str, sk: str, after: int, now: float) -> tuple[int, int] | None:
        """The number of the outbox item at ``sk``: the one it was given before (a redelivery), or the
        next of the session's (its counter moved from ``after``), given with its expiry in the same
        transaction. The events of one commit are numbered together, in the order the commit lists
        them (DynamoDB Streams does not promise the order of one transaction's records). None: the
        session's counter was not at ``after`` (read it again and retry). Also returns where the
        counter is now, as far as this call knows."""
        commit = _COMMIT_EVENT.match(sk)
        if commit is None:
            return self._give(session_id, [sk], sk, after, now)
        group = self.dynamodb.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :commit)",
            ExpressionAttributeValues={":pk": value(pk(session_id)), ":commit": value(commit.group(1))},
            ProjectionExpression="sk, #sequence",
            ExpressionAttributeNames={"#sequence": "sequence"},
            ConsistentRead=True,
        ).get("Items", [])
        numbers = {item["sk"]["S"]: item.get("sequence") for item in group}
        if sk not in numbers:
            raise _gone(session_id, sk)
        given = numbers[sk]
        if given is not None:
            return int(given["N"]), after
        return self._give(session_id, sorted(s for s, n in numbers.items() if n is None), sk, after, now)

    def _give(self, session_id: str, sks: list[str], wanted: str, after: int, now: float) -> tuple[int, int] | None:
        """Number ``sks`` ``after + 1``, ``after + 2``, ... (a transaction per 99, each moving the
        counter); the number ``wanted`` got, or had. None: the counter or an item moved meanwhile."""
        for start in range(0, len(sks), 99):
            chunk = sks[start : start + 99]
            first = after + start
            counted = "attribute_exists(pk) AND " + (
                "attribute_not_exists(published_sequence)" if first == 0 else "published_sequence = :after"
            )
            writes: list[dict[str, Any]] = [
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": key(session_id, "SESSION"),
                        "UpdateExpression": "SET published_sequence = :next",
                        "ConditionExpression": counted,
                        "ExpressionAttributeValues": {
                            ":next": value(first + len(chunk)),
                            **({":after": value(first)} if first else {}),
                        },
                    }
                }
            ]
            writes += [
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": key(session_id, item_sk),
                        "UpdateExpression": "SET #sequence = :number",
                        "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(#sequence)",
                        "ExpressionAttributeNames": {"#sequence": "sequence"},
                        "ExpressionAttributeValues": {":number": value(first + 1 + n)},
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                }
                for n, item_sk in enumerate(chunk)
            ]
            try:
                self._transact_write(writes)
            except ClientError as error:
                if code_of(error) != TRANSACTION_CANCELED:
                    raise
                if not condition_failed(error):
                    raise
                if len(sks) == 1:
                    earlier = refused_item(error, 1)
                    if earlier is not None:
                        if "sequence" not in earlier:
                            raise _gone(session_id, wanted) from error
                        return int(earlier["sequence"]["N"]), after
                return None
        return after + 1 + sks.index(wanted), after + len(sks)

    @aws_call
    def mark_published(self, session_id: str, sk: str, now: float) -> None:
        """The outbox item at ``sk`` is on the bus: it is deleted (DynamoDB's TTL) ``PURGE_AFTER_SECONDS``
        from now. (An item the bus never took keeps no expiry: it waits to be published again.)"""
        try:
            self.dynamodb.update_item(
                TableName=self.table,
                Key=key(session_id, sk),
                UpdateExpression="SET published_at = :now, #purge = :purge",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames={"#purge": TTL_ATTRIBUTE},
                ExpressionAttributeValues={":now": value(now), ":purge": value(int(now + PURGE_AFTER_SECONDS))},
            )
        except ClientError as refused:  # gone meanwhile: nothing is left to expire
            if code_of(refused) != CONDITION_FAILED:
                raise

    @aws_call
    def republish(self, session_id: str, now: float) -> int:
        """Have the stream deliver the session's unpublished outbox items again (those the bus never
        took: the publisher never got to them, or the mapping gave up on them): each is marked
        ``republish_at``, a change the publisher's filter lets in once more. How many."""
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "FilterExpression": "entity = :event AND attribute_not_exists(published_at)",
            "ProjectionExpression": "sk",
            "ExpressionAttributeValues": {":pk": value(pk(session_id)), ":event": value("event")},
            "ConsistentRead": True,
        }
        marked = 0
        for item in self._query_items(request):
            try:
                self.dynamodb.update_item(
                    TableName=self.table,
                    Key=key(session_id, item["sk"]["S"]),
                    UpdateExpression="SET republish_at = :now",
                    ConditionExpression="attribute_exists(pk) AND attribute_not_exists(published_at)",
                    ExpressionAttributeValues={":now": value(now)},
                )
                marked += 1
            except ClientError as refused:
                if code_of(refused) != CONDITION_FAILED:
                    raise
                pass  # published meanwhile
        return marked

"""The detail of each event the publisher puts on the bus (source ``resumable``), one model per
detail type. The JSON Schemas in events/schemas/ are generated from these models
(``python -m resumable.events.schemas`` writes them; a test checks they are current).

Every event carries ``eventId`` (the same on every delivery of it: drop duplicates by it), the
session, its root turn (the turn a client reads and answers), the session's ``sequence`` number
(1, 2, 3, ... in the order its events were published, no gaps) and when it happened.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from resumable.store.outbox import (
    ACTION_GRANTED,
    ACTION_REPORTED,
    INTERACTION_ANSWERED,
    INTERACTION_CLOSED,
    INTERACTION_ESCALATED,
    INTERACTION_REQUESTED,
    INTERACTION_VOTED,
    SESSION_DELETED,
    SESSION_RESTORED,
    TURN_SETTLED,
)

SOURCE = "resumable"


class EventDetail(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", defer_build=True)

    event_id: str = Field(description="The same on every delivery of this event: drop duplicates by it.")
    session_id: str
    turn_id: str | None = Field(
        description="The root turn: the one a client reads (GET) and answers; null for an event of the whole "
        "session (Session Deleted, Session Restored)."
    )
    sequence: int = Field(ge=1, description="The session's events are numbered 1, 2, 3, ... in publishing order.")
    occurred_at: str = Field(description="When the change was committed, ISO 8601 UTC.")


# What a person judges a question by, as the inbox card shows it (none of it in events written before it was).
_STARTED_BY = "The principal who started the turn that asks."
_STARTED_BY_NAME = (
    "The name their sign-in token gives, where it gives one: a claim the person may be able to set, shown beside "
    "startedBy, never instead of it."
)
_ROOT_PROMPT = "The prompt that started the root turn (cut)."
_RISK = "low, medium, high or destructive (the tool's or its rule's)."
_IMPACT = "One line: what the call touches (the tool's or its rule's)."
_CONFIRM = "Approving needs a confirmation naming what will happen (destructive, or its rule's)."


class JudgedDetail(EventDetail):
    """What a person judges a question by, as the inbox card shows it (none of it in events written
    before it was): who started its turn, its prompt, the risk and impact, whether it asks to confirm."""

    started_by: str | None = Field(default=None, description=_STARTED_BY)
    started_by_name: str | None = Field(default=None, description=_STARTED_BY_NAME)
    root_prompt: str | None = Field(default=None, description=_ROOT_PROMPT)
    risk: str | None = Field(default=None, description=_RISK)
    impact: str | None = Field(default=None, description=_IMPACT)
    confirm: bool = Field(default=False, description=_CONFIRM)


class InteractionRequested(JudgedDetail):
    """A question waits for a person: everything needed to decide, and where to answer."""

    request_id: str
    child_turn_id: str | None = Field(description="The sub-agent's turn that asked, or null for the root agent.")
    agent_path: list[str] = Field(description="From the root agent to the agent that asks.")
    name: str = Field(description="The interrupt's name: 'approval' for a tool call that needs approval.")
    tool: str | None = Field(description="The tool an approval is for (null for another interrupt).")
    input: Any = Field(description="The tool input an approval is for.")
    editable: bool = Field(
        default=False,  # not in events written before edits existed
        description="Whether the answer may edit the input: {'decision': 'approve', 'input': {...}}.",
    )
    rule: dict[str, Any] | None = Field(
        default=None,  # not in events written before approval rules existed
        description="The approval rule it was asked under (who may answer, how many must agree); null: none.",
    )
    reason: Any = Field(description="What the agent said when it asked.")
    summary: str = Field(description="One line a person reads: 'a -> b wants to run tool {...}'.")
    expires_at: str
    answer_path: str = Field(description='POST {"response": ...} here to answer.')
    answer_url: str | None = Field(description="answerPath on the deployed HTTP API, when the publisher knows it.")
    inbox_url: str | None = Field(
        default=None,  # not in events written before it existed
        description="The inbox page focused on this question (/inbox#q-<requestId>), when the publisher knows the "
        "API: where a person decides (opening it decides nothing).",
    )


class InteractionVoted(EventDetail):
    """An approval under an approval rule that leaves the question waiting for more approvers."""

    request_id: str
    child_turn_id: str | None
    by: str = Field(description="Who approved.")
    approvals: int = Field(ge=1, description="How many distinct approvers have approved so far.")
    required: int = Field(ge=2, description="How many its rule requires.")
    voted_at: str


class InteractionAnswered(EventDetail):
    request_id: str
    decision: str | None = Field(description="'approve' or 'deny' for an approval; null for another answer.")
    response: Any = Field(description="The answer as given; an edited approval's holds the input it runs with.")
    answered_by: str
    answered_at: str


class InteractionClosed(EventDetail):
    """A question that will never be answered: superseded (its turn settled or moved on) or expired."""

    request_id: str
    child_turn_id: str | None
    status: Literal["superseded", "expired"]
    why: str


class InteractionEscalated(JudgedDetail):
    """Nobody settled a question in the time its approval rule gives: its escalateTo may answer it now."""

    request_id: str
    child_turn_id: str | None
    rule: str = Field(description="The approval rule's name.")
    escalated_to: list[str] = Field(description="Who may answer it now too (principal patterns, group:NAME).")
    summary: str
    expires_at: str
    answer_path: str = Field(description='POST {"response": ...} here to answer.')
    answer_url: str | None = Field(description="answerPath on the deployed HTTP API, when the publisher knows it.")
    inbox_url: str | None = Field(
        default=None,  # not in events written before it existed
        description="The inbox page focused on this question (/inbox#q-<requestId>), when the publisher knows the "
        "API: where a person decides (opening it decides nothing).",
    )


class TurnSettled(EventDetail):
    status: Literal["completed", "failed", "canceled", "interrupted", "expired"]
    output: str | None
    error: str | None
    reason: str | None = Field(description="Why a cancel, expiry or interruption settled it; null for a run.")


class ActionReported(EventDetail):
    """What became known of an approved action after the run that started it lost the turn."""

    outcome: Literal["not_run", "finished_late"]
    child_turn_id: str | None
    tool: str
    agent_path: list[str]


class ActionGranted(EventDetail):
    """An approved call began without a question: a standing grant covered it (docs/approval-rules.md#standing-grants).
    Published once per call, from the transaction that began its journal entry and checked the grant."""

    request_id: str = Field(description="The id its question would have had (the audit trail's action record has it).")
    child_turn_id: str | None
    tool: str
    agent_path: list[str]
    grant_id: str
    granted_by: str = Field(description="Who gave the grant, with the approval of request (the trail's decision).")
    granted_at: str
    rule: str = Field(description="The approval rule the grant was given under, and the call is under.")
    scope: Literal["session", "principal"]
    expires_at: str
    summary: str


class SessionDeleted(EventDetail):
    """The session was deleted by its owner (or an approver): none of its turns, interactions or events
    shows any more. Drop what you keep of it; it may come back (Session Restored) until restorableUntil."""

    generation: int = Field(ge=1, description="Which deletion of the session this is (1, 2, ...).")
    deleted_by: str
    restorable_until: str = Field(description="Until then POST /sessions/{sessionId}/restore brings it back.")


class SessionRestored(EventDetail):
    """The deleted session is back, exactly as it was when deleted."""

    generation: int = Field(ge=1, description="The deletion undone.")
    restored_by: str


MODELS: dict[str, type[EventDetail]] = {
    INTERACTION_REQUESTED: InteractionRequested,
    INTERACTION_ANSWERED: InteractionAnswered,
    INTERACTION_CLOSED: InteractionClosed,
    INTERACTION_ESCALATED: InteractionEscalated,
    INTERACTION_VOTED: InteractionVoted,
    TURN_SETTLED: TurnSettled,
    ACTION_REPORTED: ActionReported,
    ACTION_GRANTED: ActionGranted,
    SESSION_DELETED: SessionDeleted,
    SESSION_RESTORED: SessionRestored,
}

SCHEMAS = Path(__file__).resolve().parents[3] / "events" / "schemas"


def schema_file(detail_type: str) -> str:
    """``Interaction Requested`` -> ``interaction-requested.json``."""
    return detail_type.lower().replace(" ", "-") + ".json"


def json_schema(detail_type: str) -> dict[str, Any]:
    schema = MODELS[detail_type].model_json_schema(by_alias=True)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://resumable.dev/events/{schema_file(detail_type)}",
        "description": f"The detail of an event of source '{SOURCE}' and detail type '{detail_type}'. "
        + (schema.pop("description", "") or ""),
        **schema,
    }


def main() -> None:
    SCHEMAS.mkdir(parents=True, exist_ok=True)
    for detail_type in MODELS:
        path = SCHEMAS / schema_file(detail_type)
        path.write_text(json.dumps(json_schema(detail_type), indent=2) + "\n")
        print(path.relative_to(SCHEMAS.parents[1]), file=sys.stderr)


if __name__ == "__main__":
    main()

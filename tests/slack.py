"""Slack's interactivity requests as Slack sends them: a form field ``payload`` holding the JSON, signed
with the app's signing secret by slack_sdk's own signer (``X-Slack-Signature``, v0 HMAC-SHA256 of
``v0:<timestamp>:<body>``), timestamped (``X-Slack-Request-Timestamp``)."""

from __future__ import annotations

from typing import Any

from resumable.local import slack_standin
from resumable.slack.messages import DENY_MODAL, EDIT_MODAL, Asked, Opened

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
USER = {"id": "U0ANN", "username": "ann", "team_id": "T0TEAM"}


CHANNEL, MESSAGE_TS = "C0APPROVALS", "1700000000.000100"


def signed(
    payload: dict[str, Any], at: float | None = None, secret: str = SIGNING_SECRET
) -> tuple[str, dict[str, str]]:
    return slack_standin.signed(payload, secret, at)


def signed_body(body: str, at: float | None = None, secret: str = SIGNING_SECRET) -> tuple[str, dict[str, str]]:
    """``body`` as sent, with the headers Slack signs it with."""
    return slack_standin.signed_body(body, secret, at)


def button(action_id: str, asked: Asked, user: dict[str, str] = USER) -> dict[str, Any]:
    """A ``block_actions`` payload: ``user`` pressed the button ``action_id`` on a question's message."""
    return slack_standin.button_payload(action_id, asked.value(), user, CHANNEL, MESSAGE_TS)


def submitted(callback_id: str, asked: Asked, typed: str | None, user: dict[str, str] = USER) -> dict[str, Any]:
    """A ``view_submission`` payload: ``user`` submitted the deny or edit modal with ``typed`` in its field."""
    assert callback_id in (DENY_MODAL, EDIT_MODAL)
    opened = Opened(asked=asked, channel_id=CHANNEL, message_ts=MESSAGE_TS).model_dump_json()
    return slack_standin.submission_payload({"callback_id": callback_id, "private_metadata": opened}, typed, user)


def requested(request_id: str = "r1", **changed: Any) -> dict[str, Any]:
    """An ``Interaction Requested`` event's detail, as the bus carries it (camelCase), for the question
    ``request_id`` of session s1's turn t1: orchestrator -> db_admin wants to run delete_record."""
    return {
        "eventId": f"e-{request_id}",
        "sessionId": "s1",
        "turnId": "t1",
        "sequence": 1,
        "occurredAt": "2026-12-04T10:00:00Z",
        "requestId": request_id,
        "childTurnId": None,
        "agentPath": ["orchestrator", "db_admin"],
        "name": "approval",
        "tool": "delete_record",
        "input": {"name": "prod-db"},
        "editable": False,
        "reason": None,
        "summary": "orchestrator -> db_admin wants to run delete_record",
        "expiresAt": "2026-12-04T11:00:00Z",
        "answerPath": f"/sessions/s1/turns/t1/interactions/{request_id}",
        "answerUrl": None,
        "inboxUrl": None,
    } | changed

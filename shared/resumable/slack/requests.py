"""Slack's interactivity requests: checked for Slack's signature and timestamp (slack_sdk's
``SignatureVerifier``; a request older than five minutes is a replay and refused), then read into a
``Click``: a button pressed on a question's message, or a modal submitted (a deny's message, an
approval's edited input). Anything else is refused with what was wrong; nothing is answered.

A request the function answers later is handed on as Slack sent it (``SlackRequest``) and read
again, signature and all, by the invocation that answers it (``read_handed_on``): what is answered
is always what Slack signed, never a click written by whoever may invoke the function."""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import parse_qs

from pydantic import BaseModel, ConfigDict, ValidationError
from slack_sdk.signature import Clock, SignatureVerifier

from resumable.slack.messages import (
    APPROVE,
    DENY,
    DENY_MODAL,
    EDIT,
    EDIT_MODAL,
    INPUT_FIELD,
    MESSAGE_FIELD,
    Asked,
    Opened,
)

MAX_AGE_SECONDS = 5 * 60  # Slack's advice, and slack_sdk's own bound
# A request handed on is answered by an asynchronous invocation, which Lambda retries for up to an hour
# (template.yaml's EventInvokeConfig for the Slack function: MaximumEventAgeInSeconds 3600), of a request
# at most MAX_AGE_SECONDS old when it was acknowledged.
HANDED_ON_MAX_AGE_SECONDS = 3600 + MAX_AGE_SECONDS
_TIMESTAMP, _SIGNATURE = "x-slack-request-timestamp", "x-slack-signature"

Kind = Literal["approve", "deny", "edit", "deny_submitted", "edit_submitted"]
_BUTTONS: dict[str, Kind] = {APPROVE: "approve", DENY: "deny", EDIT: "edit"}
_MODALS: dict[str, Kind] = {DENY_MODAL: "deny_submitted", EDIT_MODAL: "edit_submitted"}


class SlackRequestError(Exception):
    """A request that is not Slack's, too old, or not one this app reads: ``status`` is the HTTP reply's."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class Click(BaseModel):
    """What a person did in Slack, and who (Slack's ids: the principal is ``people``'s to find)."""

    model_config = ConfigDict(extra="forbid")

    kind: Kind
    asked: Asked
    user_id: str
    team_id: str | None = None
    user_name: str | None = None
    trigger_id: str | None = None  # (a button's: what opens a modal)
    channel_id: str | None = None  # (the message the button is on, or the modal was opened from)
    message_ts: str | None = None
    message: str | None = None  # (a deny modal's)
    edited_input: str | None = None  # (an edit modal's, as typed)


def read(
    body: str | bytes,
    headers: Mapping[str, str],
    signing_secret: str,
    now: float | None = None,
    max_age: float = MAX_AGE_SECONDS,
) -> Click:
    """The click a request from Slack carries (``body`` exactly as received), once its signature and
    timestamp are checked: signed at most ``max_age`` seconds before ``now``."""
    lowered = {k.lower(): v for k, v in headers.items()}
    timestamp, signature = lowered.get(_TIMESTAMP), lowered.get(_SIGNATURE)
    if not timestamp or not signature:
        raise SlackRequestError("not a request from Slack: it carries no Slack signature; nothing was answered", 401)
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        raise SlackRequestError("the Slack timestamp is not a time in seconds; nothing was answered", 401)
    if not (signature.isascii() and signature.startswith("v0=")):
        raise SlackRequestError("the Slack signature is not one Slack makes (v0=...); nothing was answered", 401)
    at = time.time() if now is None else now
    age = at - int(timestamp)
    if age < -MAX_AGE_SECONDS:
        raise SlackRequestError(
            f"the request is dated {int(-age)} s in the future, more than {MAX_AGE_SECONDS} s ahead of this "
            "function's clock: refused; nothing was answered",
            401,
        )
    if age > max_age:
        raise SlackRequestError(
            f"the request was signed {int(age)} s ago, more than {int(max_age)} s: refused as a replay; "
            "nothing was answered",
            401,
        )
    try:  # (slack_sdk decodes it to check the signature: a body that is not UTF-8 is refused first)
        text = body.decode() if isinstance(body, bytes) else body
    except UnicodeDecodeError:
        raise SlackRequestError("the request's body is not UTF-8; nothing was answered", 400) from None
    # slack_sdk's verifier bounds the age by its clock too, at five minutes: dated at the request's own
    # time, it checks the signature alone (the age is checked above, against ``max_age``).
    if not SignatureVerifier(signing_secret, _At(int(timestamp))).is_valid(text, timestamp, signature):
        raise SlackRequestError("the Slack signature does not match the request; nothing was answered", 401)
    payload = _payload(text)
    try:
        return _click(payload)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, RecursionError, ValidationError) as error:
        raise SlackRequestError(f"not a click this app reads ({_wrong(error)}); nothing was answered", 400) from None


def _wrong(error: Exception) -> str:
    """What was wrong with a payload, in words (not Python's)."""
    if isinstance(error, KeyError):
        return f"it has no field {str(error.args[0])[:60]!r}"
    if isinstance(error, ValidationError):
        return "a button's value or a modal's metadata is not one this app made"
    if isinstance(error, ValueError) and "unpack" in str(error):
        return "a press carries exactly one action"
    if isinstance(error, ValueError):
        return str(error)[:200]
    return "a field is not of the type Slack sends"


class SlackRequest(BaseModel):
    """A request as Slack sent it, handed by the invocation that acknowledged it to the one that answers
    it (``{"slackRequest": ...}``): its body exactly as received (base64) and the two headers that sign it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    body: str
    timestamp: str
    signature: str

    @classmethod
    def of(cls, body: str | bytes, headers: Mapping[str, str]) -> SlackRequest:
        """The request ``read`` took (``body`` as received, ``headers`` with Slack's two)."""
        lowered = {k.lower(): v for k, v in headers.items()}
        raw = body.encode() if isinstance(body, str) else body
        return cls(body=base64.b64encode(raw).decode(), timestamp=lowered[_TIMESTAMP], signature=lowered[_SIGNATURE])


def read_handed_on(request: SlackRequest, signing_secret: str, now: float | None = None) -> Click:
    """The click of a request handed on, read again as ``read`` reads Slack's, with the signing secret,
    within ``HANDED_ON_MAX_AGE_SECONDS`` of its signing (Lambda's retries of the hand-on).

    What a replay within that window can do: whoever may invoke the function and holds a request Slack
    signed (the function's dead-letter queue keeps failed events whole) can hand it on again, and that is
    the same click again, by the same person, as they made it. An answer given again is the same answer,
    and answers are idempotent (nothing more is recorded); a second vote by the same person is refused;
    once the question is settled, nothing is recorded. The person is told in Slack what happened, as for
    any press. A press whose answering failed every attempt is answered as it was pressed, if its
    question still waits."""
    try:
        body = base64.b64decode(request.body, validate=True)
    except (binascii.Error, ValueError):
        raise SlackRequestError("the body handed on is not base64; nothing was answered", 400) from None
    headers = {_TIMESTAMP: request.timestamp, _SIGNATURE: request.signature}
    return read(body, headers, signing_secret, now, HANDED_ON_MAX_AGE_SECONDS)


class _At(Clock):
    def __init__(self, at: float) -> None:
        self.at = at

    def now(self) -> float:
        return self.at


def _payload(body: str) -> dict[str, Any]:
    fields = parse_qs(body, keep_blank_values=True)
    if "payload" not in fields:
        raise SlackRequestError("the request holds no interactivity payload; nothing was answered", 400)
    try:
        payload = json.loads(fields["payload"][0])
    except (ValueError, RecursionError):
        raise SlackRequestError("the interactivity payload is not JSON; nothing was answered", 400) from None
    if not isinstance(payload, dict):
        raise SlackRequestError("the interactivity payload is not an object; nothing was answered", 400)
    return payload


def _click(payload: dict[str, Any]) -> Click:
    user = payload["user"]
    who = {
        "user_id": user["id"],
        "team_id": (payload.get("team") or {}).get("id") or user.get("team_id"),
        "user_name": user.get("username") or user.get("name"),
    }
    if payload.get("type") == "block_actions":
        [action] = payload["actions"]
        if action["action_id"] not in _BUTTONS:
            raise ValueError(f"the button {action['action_id']!r} is not one of this app's")
        container = payload.get("container") or {}
        return Click(
            kind=_BUTTONS[action["action_id"]],
            asked=Asked.model_validate_json(action["value"]),
            trigger_id=payload.get("trigger_id"),
            channel_id=container.get("channel_id") or (payload.get("channel") or {}).get("id"),
            message_ts=container.get("message_ts") or (payload.get("message") or {}).get("ts"),
            **who,
        )
    if payload.get("type") == "view_submission":
        view = payload["view"]
        if view["callback_id"] not in _MODALS:
            raise ValueError(f"the modal {view['callback_id']!r} is not one of this app's")
        values = view["state"]["values"]
        field = MESSAGE_FIELD if view["callback_id"] == DENY_MODAL else INPUT_FIELD
        typed = values.get(field, {}).get(field, {}).get("value")
        if typed is not None and not isinstance(typed, str):
            raise TypeError(f"the modal's {field} is not text")
        opened = Opened.model_validate_json(view["private_metadata"])
        return Click(
            kind=_MODALS[view["callback_id"]],
            asked=opened.asked,
            channel_id=opened.channel_id,
            message_ts=opened.message_ts,
            message=typed if field == MESSAGE_FIELD else None,
            edited_input=typed if field == INPUT_FIELD else None,
            **who,
        )
    raise ValueError(f"a {payload.get('type')!r} payload is not one this app reads")

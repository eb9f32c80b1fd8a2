"""Slack's interactivity requests, in two steps, because Slack waits only three seconds for a reply
while an approval may resume a turn for longer: ``acknowledge`` checks and reads the request at once
(a refusal, a modal's JSON that does not parse, or an empty 200 that closes a submitted modal), and
``process`` answers the click and tells the person what happened (a modal opened for Deny and Edit,
or a note to them alone in the channel of the question's message; a direct message where a
submission came from nowhere known)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from resumable.service import Service
from resumable.slack.answers import answer
from resumable.slack.messages import INPUT_FIELD
from resumable.slack.people import People
from resumable.slack.requests import Click, SlackRequestError, read


class SlackWeb(Protocol):
    """What of slack_sdk's ``WebClient`` the processing of a click uses."""

    def views_open(self, **kwargs: Any) -> Any: ...

    def chat_postEphemeral(self, **kwargs: Any) -> Any: ...  # noqa: N802 (slack_sdk's name)

    def chat_postMessage(self, **kwargs: Any) -> Any: ...  # noqa: N802 (slack_sdk's name)


@dataclass(frozen=True)
class Ack:
    """The reply Slack gets at once (``status``, ``body``: JSON, or nothing), and the click to process
    after it (None: nothing to do)."""

    status: int
    body: dict[str, Any] | None
    click: Click | None


def acknowledge(body: str | bytes, headers: dict[str, str], signing_secret: str, now: float | None = None) -> Ack:
    try:
        click = read(body, headers, signing_secret, now)
    except SlackRequestError as error:
        code = "unauthorized" if error.status == 401 else "bad_request"  # (the API's error shape)
        return Ack(error.status, {"code": code, "message": str(error)}, None)
    if click.kind == "edit_submitted":
        try:
            json.loads(click.edited_input or "")
        except (ValueError, RecursionError) as error:
            said = f"Not JSON ({error}): nothing was approved"[:300]
            return Ack(200, {"response_action": "errors", "errors": {INPUT_FIELD: said}}, None)
    return Ack(200, None, click)


def process(click: Click, service: Service, people: People, slack: SlackWeb) -> str:
    """Answer ``click`` and tell its person what happened: what was done, in words."""
    reply = answer(service, click, people)
    if reply.modal is not None:
        slack.views_open(trigger_id=click.trigger_id, view=reply.modal)
        return f"{click.kind}: opened its modal for {click.user_id}"
    text = reply.text or "; ".join((reply.errors or {}).values()) or "Nothing was recorded."
    if click.channel_id:
        slack.chat_postEphemeral(channel=click.channel_id, user=click.user_id, text=text)
    else:
        slack.chat_postMessage(channel=click.user_id, text=text)
    return f"{click.kind}: told {click.user_id}: {text}"

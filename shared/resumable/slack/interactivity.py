"""Slack's interactivity requests, in two steps, because Slack waits only three seconds for a reply
while an approval may resume a turn for longer: ``acknowledge`` checks and reads the request at once
(a refusal, a modal's JSON that does not parse, or an empty 200 that closes a submitted modal), and
``process`` answers the click and tells the person what happened (a modal opened for Deny and Edit,
or a note to them alone in the channel of the question's message; a direct message where a
submission came from nowhere known)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Protocol

from resumable.service import Service
from resumable.service.ids import root_of
from resumable.slack.answers import answer
from resumable.slack.messages import INPUT_FIELD
from resumable.slack.people import People
from resumable.slack.requests import Click, SlackRequestError, read

logger = logging.getLogger(__name__)


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


class Redrawn(Protocol):
    """Where a question's message is drawn again as the table holds it (``Notices``)."""

    def refresh(self, session_id: str, root_turn_id: str, request_id: str, now: float | None = None) -> str: ...


def process(click: Click, service: Service, people: People, slack: SlackWeb, notices: Redrawn | None = None) -> str:
    """Answer ``click`` and tell its person what happened: what was done, in words. A vote that leaves
    the question waiting for more has its message drawn again (``notices``): the approvals so far."""
    reply = answer(service, click, people)
    if reply.modal is not None:
        slack.views_open(trigger_id=click.trigger_id, view=reply.modal)
        return f"{click.kind}: opened its modal for {click.user_id}"
    text = reply.text or "; ".join((reply.errors or {}).values()) or "Nothing was recorded."
    if click.channel_id:
        slack.chat_postEphemeral(channel=click.channel_id, user=click.user_id, text=text)
    else:
        slack.chat_postMessage(channel=click.user_id, text=text)
    if reply.voted and notices is not None:  # (after they were told: drawing it again may fail, the vote stands)
        asked = click.asked
        try:
            notices.refresh(asked.session_id, root_of(asked.turn_id), asked.request_id)
        except Exception:  # (any failure: the vote is recorded and its event draws it again)
            logger.exception(
                "request_id=<%s> | the vote is recorded; its message was not drawn again now", asked.request_id
            )
    return f"{click.kind}: told {click.user_id}: {text}"

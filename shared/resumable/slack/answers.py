"""A click in Slack answered through the same use case as the API's (``Service.submit_approval``):
exactly once, under the same rules, as the principal the Slack user maps to. What happened is told
back to the person who clicked (``Reply.text``, shown to them alone); a button that needs more
(Deny, Edit) opens its modal first (``Reply.modal``); an edit that is not JSON is refused in the
modal itself (``Reply.errors``)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from resumable.exceptions import (
    BadRequestError,
    ConflictError,
    ForbiddenError,
    GoneError,
    NotFoundError,
    ServiceError,
    TurnBusyError,
    ValidationFailedError,
)
from resumable.service import Service, TurnView
from resumable.service.caller import Caller
from resumable.service.limits import is_preview
from resumable.slack.messages import INPUT_FIELD, Opened, deny_modal, edit_modal, editable_text, escaped
from resumable.slack.people import LookupFailedError, People
from resumable.slack.requests import Click

UNMAPPED = (
    "Nothing was recorded: your Slack user is not mapped to anyone who may answer here. "
    "Ask whoever runs resumable to add your Slack id or e-mail address to its Slack mapping."
)
MAX_REPLY_CHARS = 1500
_REFUSALS: list[tuple[type[ServiceError], str]] = [
    (ConflictError, "Not recorded"),
    (GoneError, "Too late"),
    (ForbiddenError, "Not yours to answer"),
    (NotFoundError, "Not found"),
    (TurnBusyError, "Busy, nothing recorded: press again in a moment"),
    (ServiceError, "Not recorded"),
]
_DONE = {"approve": "approved it", "deny": "denied it"}


class Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str | None = None  # told to the person who clicked, to them alone (mrkdwn, escaped)
    modal: dict[str, Any] | None = None  # opened for them (views.open, with the click's trigger id)
    errors: dict[str, str] | None = None  # a modal's fields refused, shown in the modal
    voted: bool = False  # an approval recorded that leaves the question waiting for more: its message is drawn again


def _say(text: str) -> Reply:
    """A reply in words: what the service said may quote what others wrote, so it is escaped and capped."""
    return Reply(text=escaped(text, MAX_REPLY_CHARS))


def answer(service: Service, click: Click, people: People) -> Reply:
    try:
        caller = people.caller(click.user_id, click.team_id, click.user_name)
    except LookupFailedError as error:
        return _say(f"Nothing was recorded: Slack could not say who you are just now ({error}). Press again.")
    if caller is None:
        return _say(UNMAPPED)
    asked = click.asked
    if click.kind in ("deny", "edit"):
        return _modal(service, click, caller)
    if click.kind == "approve":
        response: dict[str, Any] = {"decision": "approve"}
    elif click.kind == "deny_submitted":
        message = (click.message or "").strip()
        response = {"decision": "deny", **({"message": message} if message else {})}
    else:
        try:
            response = {"decision": "approve", "input": json.loads(click.edited_input or "")}
        except json.JSONDecodeError as error:
            return Reply(errors={INPUT_FIELD: f"Not JSON ({error.msg} at line {error.lineno}): nothing was approved"})
        except (ValueError, RecursionError):
            return Reply(errors={INPUT_FIELD: "Not JSON this app reads (nested too deep): nothing was approved"})
    try:
        turn = service.submit_approval(asked.session_id, asked.turn_id, asked.request_id, response, caller)
    except (BadRequestError, ValidationFailedError) as error:
        if click.kind == "edit_submitted":
            return Reply(errors={INPUT_FIELD: escaped(str(error), 2000)})
        return _say(f"Not recorded: {error}")
    except ServiceError as error:
        return _say(_refused(error))
    told = _say(_told(turn, asked.request_id, response, caller.identity))
    question = next((i for i in turn.interactions if i.request_id == asked.request_id), None)
    waits = question is not None and question.status == "requested" and bool(question.approvals)
    return told.model_copy(update={"voted": waits})


def _modal(service: Service, click: Click, caller: Caller) -> Reply:
    """What Deny or Edit opens, once the question is found still open (and, for Edit, editable here)."""
    asked = click.asked
    try:
        turn = service.get_turn(asked.session_id, asked.turn_id, caller)
    except ServiceError as error:
        return _say(_refused(error))
    question = next((i for i in turn.interactions if i.request_id == asked.request_id), None)
    if question is None:
        return _say("Not found: the turn no longer holds this question; nothing was recorded.")
    if question.status != "requested":
        return _say(f"Nothing to answer: the question is {question.status} already.")
    opened = Opened(asked=asked, channel_id=click.channel_id, message_ts=click.message_ts)
    if click.kind == "deny":
        return Reply(modal=deny_modal(opened))
    if not question.editable:
        return _say("This question's input may not be edited: approve or deny it as asked.")
    tool_input = question.reason.get("input") if isinstance(question.reason, dict) else None
    text = None if is_preview(tool_input) else editable_text(tool_input)
    if text is None:
        return _say("This input is too large to edit in Slack: edit it on the inbox page, or approve or deny it here.")
    return Reply(modal=edit_modal(opened, text))


def _refused(error: ServiceError) -> str:
    prefix = next(p for kind, p in _REFUSALS if isinstance(error, kind))
    return f"{prefix}: {error}"


def _told(turn: TurnView, request_id: str, response: dict[str, Any], principal: str) -> str:
    question = next((i for i in turn.interactions if i.request_id == request_id), None)
    if question is None:
        return f"Recorded. The turn is {turn.status}."
    voters = [vote.by for vote in question.approvals]
    settled_by_this = question.status != "requested" and voters[-1:] == [principal]
    if question.rule is not None and principal in voters and not settled_by_this:
        if question.status == "requested":
            given, needed = len(voters), question.rule.required
            return f"Your approval is recorded: {given} of {needed}. It waits for {needed - given} more."
        return f"Your approval counted: the question is {question.status}. The turn is {turn.status}."
    if question.answered_by not in (None, principal):
        # (the same answer as another's is not refused, but it is theirs that stands)
        return f"Not recorded: {question.answered_by} gave the same answer first, and theirs stands."
    done = "approved it with your edits" if "input" in response else _DONE[response["decision"]]
    return f"You {done}. The turn is {turn.status}."

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
from resumable.service.access import Principal
from resumable.slack.messages import INPUT_FIELD, deny_modal, edit_modal
from resumable.slack.people import People
from resumable.slack.requests import Click

UNMAPPED = (
    "Nothing was recorded: your Slack user is not mapped to anyone who may answer here. "
    "Ask whoever runs resumable to add your Slack id or e-mail address to its Slack mapping."
)
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

    text: str | None = None  # told to the person who clicked, to them alone
    modal: dict[str, Any] | None = None  # opened for them (views.open, with the click's trigger id)
    errors: dict[str, str] | None = None  # a modal's fields refused, shown in the modal


def answer(service: Service, click: Click, people: People) -> Reply:
    principal = people.principal(click.user_id, click.team_id, click.user_name)
    if principal is None:
        return Reply(text=UNMAPPED)
    asked = click.asked
    if click.kind == "deny":
        return Reply(modal=deny_modal(asked))
    if click.kind == "edit":
        return _edit(service, click, principal)
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
    try:
        turn = service.submit_approval(asked.session_id, asked.turn_id, asked.request_id, response, principal)
    except (BadRequestError, ValidationFailedError) as error:
        if click.kind == "edit_submitted":
            return Reply(errors={INPUT_FIELD: str(error)})
        return Reply(text=f"Not recorded: {error}")
    except ServiceError as error:
        return Reply(text=_refused(error))
    return Reply(text=_told(turn, asked.request_id, response, principal))


def _edit(service: Service, click: Click, principal: Principal) -> Reply:
    asked = click.asked
    try:
        turn = service.get_turn(asked.session_id, asked.turn_id, principal)
    except ServiceError as error:
        return Reply(text=_refused(error))
    question = next((i for i in turn.interactions if i.request_id == asked.request_id), None)
    if question is None:
        return Reply(text="Not found: the turn no longer holds this question; nothing was recorded.")
    if question.status != "requested":
        return Reply(text=f"Nothing to edit: the question is {question.status} already.")
    if not question.editable:
        return Reply(text="This question's input may not be edited: approve or deny it as asked.")
    reason = question.reason if isinstance(question.reason, dict) else {}
    return Reply(modal=edit_modal(asked, reason.get("input")))


def _refused(error: ServiceError) -> str:
    prefix = next(p for kind, p in _REFUSALS if isinstance(error, kind))
    return f"{prefix}: {error}"


def _told(turn: TurnView, request_id: str, response: dict[str, Any], principal: Principal) -> str:
    question = next((i for i in turn.interactions if i.request_id == request_id), None)
    if question is not None and question.answered_by not in (None, principal):
        # (the same answer as another's is not refused, but it is theirs that stands)
        return f"Not recorded: {question.answered_by} gave the same answer first, and theirs stands."
    if question is not None and question.status == "requested" and question.rule is not None:
        given, needed = len(question.approvals), question.rule.required
        return f"Your approval is recorded: {given} of {needed}. It waits for {needed - given} more."
    done = "approved it with your edits" if "input" in response else _DONE[response["decision"]]
    return f"You {done}. The turn is {turn.status}."

"""The routes of one-click decision links (``DecisionLinksAnswerAs``; docs/desk.md), with no
authorizer: the signed, issued link is the credential. Both answer a page for a person, not JSON.
Only the DecisionLinks function serves them (``resumable.api.app.build_app(links=True)``).

| route | reply |
|---|---|
| ``GET /decide/{token}`` | 200 the question and its forms; it decides nothing (mail scanners open links) |
| ``POST /decide/{token}`` (a form: ``decision=approve|deny|reply``, ``text``, ``confirm=yes``) | 200 what came of it |

Once the link's approval is in and its question waits for other approvers, the page shows that, with no
form.

A refusal is its status (404 not a link of this deployment, 403 for an approver links no longer
answer as, 409 used already or settled, 410 expired) with a page saying why.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from resumable.api.routes import path_param
from resumable.exceptions import ServiceError
from resumable.service import Service

link_router = APIGatewayHttpRouter()
MAX_FORM_CHARS = 64_000  # (a form's body: 2,000 characters percent-encoded take up to 18,000)
MAX_TEXT_CHARS = 2000
_STATUS = {"bad_request": 400, "not_found": 404, "forbidden": 403, "conflict": 409, "gone": 410, "turn_busy": 409}
_TITLES = {
    400: "Nothing was decided",
    404: "Not a link that decides",
    403: "Not yours to decide",
    409: "Nothing was decided",
    410: "Too late",
}


def service() -> Service:
    """The service of the request being resolved (``resumable.api.app`` puts it in the context)."""
    served: Service = link_router.context["service"]
    return served


def _html(status: int, body: str) -> Response[Any]:
    from resumable.web.decision_page import HEADERS  # (the pages' module: imported by the routes that draw them)

    return Response(status_code=status, content_type="text/html; charset=utf-8", body=body, headers=HEADERS)


def _refused(error: ServiceError) -> Response[Any]:
    from resumable.web.decision_page import outcome

    status = _STATUS.get(error.code, 400)
    return _html(status, outcome(_TITLES.get(status, "Nothing was decided"), f"Refused: {error}"))


@link_router.get("/decide/<token>", include_in_schema=False)
def open_link(token: str) -> Response[Any]:
    from resumable.web.decision_page import confirmation

    try:
        return _html(200, confirmation(*service().decision_link(path_param("token", token))))
    except ServiceError as error:
        return _refused(error)


@link_router.post("/decide/<token>", include_in_schema=False)
def use_link(token: str) -> Response[Any]:
    from resumable.web.decision_page import outcome

    body = link_router.current_event.decoded_body or ""
    if len(body) > MAX_FORM_CHARS:
        said = f"The form is larger than this page's forms are ({len(body)} characters sent): nothing was decided."
        return _html(400, outcome("Nothing was decided", said))
    form = parse_qs(body, keep_blank_values=True)
    unknown = sorted(set(form) - {"decision", "text", "confirm"})
    if unknown:  # (a field this form does not have would be lost: a deny's reason as "message", say)
        said = f"The form has a field it does not take ({unknown[0][:40]!r}; it takes decision, text and confirm)"
        said += ": open the link again."
        return _html(400, outcome("Nothing was decided", said + " Nothing was decided."))
    decisions, texts, confirms = form.get("decision") or [], form.get("text") or [], form.get("confirm") or []
    if len(decisions) != 1 or decisions[0] not in ("approve", "deny", "reply") or len(texts) > 1 or len(confirms) > 1:
        said = "The form must say one of approve, deny or reply (and at most one text): open the link again."
        return _html(400, outcome("Nothing was decided", said + " Nothing was decided."))
    # (a browser sends a line break as \r\n, which its maxlength counts as one character)
    decision, text = decisions[0], (texts[0].replace("\r\n", "\n").strip() if texts else "") or None
    if text is not None and len(text) > MAX_TEXT_CHARS:
        said = f"The text is {len(text)} characters, the most is {MAX_TEXT_CHARS}: shorten it. Nothing was decided."
        return _html(400, outcome("Nothing was decided", said))
    confirmed = confirms == ["yes"]  # (the box naming what will run, ticked: a destructive approval needs it)
    try:
        request_id, turn = service().decide_by_link(path_param("token", token), decision, text, confirmed)  # type: ignore[arg-type]
    except ServiceError as error:
        return _refused(error)
    from resumable.web.decision_page import standing

    question = next((i for i in turn.interactions if i.request_id == request_id), None)
    # (this function runs no agents: a turn with every answer in is handed to the one that does)
    goes_on = turn.status == "waiting" and not any(i.status == "requested" for i in turn.interactions)
    state = "going on: its agents run now" if goes_on else turn.status
    now = f"{standing(question)}; the turn is {state}." if question else f"The turn is {state}."
    done = {"approve": "approval", "deny": "denial", "reply": "answer"}[decision]
    return _html(200, outcome("Recorded", f"Your {done} is recorded, as the link's approver. {now}"))

"""The HTTP API's routes, shared by every Lambda function: parse, call the service, shape the reply.

| route | body | reply |
|---|---|---|
| ``POST /sessions/{sessionId}/turns`` | ``{"prompt": str}`` | 201 Turn |
| ``GET /sessions/{sessionId}/turns/{turnId}`` | | 200 Turn |
| ``GET /sessions/{sessionId}/turns/{turnId}/conversation[?before=N][&limit=N]`` | | 200 a page of messages |
| ``POST /sessions/{sessionId}/turns/{turnId}/interactions/{requestId}`` | ``{"response": <json>}`` | 200 Turn |
| ``POST``/``DELETE /sessions/{sessionId}/turns/{turnId}/interactions/{requestId}/dismiss`` | | 200 Interaction |
| ``POST /sessions/{sessionId}/turns/{turnId}/cancel`` | | 200 Turn |
| ``GET /sessions/{sessionId}/interactions?status=requested`` | | 200 ``{"interactions": [...]}`` |
| ``GET /interactions?status=requested[&limit=N][&cursor=C][&dismissed=true]`` | | 200 ``{"interactions", "cursor"}`` |
| ``GET /interactions/{requestId}`` | | 200 Interaction |
| ``DELETE /sessions/{sessionId}`` | | 200 Session (deleted) |
| ``POST /sessions/{sessionId}/restore`` | | 200 Session (restored) |

The audit trail and the operator's routes are in resumable.api.operator_routes.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Annotated, Any, Literal
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from resumable.api.openapi import responses
from resumable.api.schemas import ANSWER_SCHEMA, GRANT_SCHEMA
from resumable.exceptions import BadRequestError
from resumable.metrics import count
from resumable.service import InboxPage, InteractionView, Service, SessionView, TurnView
from resumable.service.caller import SAID_VIAS, Caller
from resumable.service.cursor import MAX_CURSOR_CHARS
from resumable.service.limits import bounded_json, bounded_reason
from resumable.service.reading.conversation import MAX_PAGE as MAX_CONVERSATION_PAGE
from resumable.service.reading.conversation import ConversationPage
from resumable.service.reading.inbox import DEFAULT_PAGE, MAX_PAGE
from resumable.store.records import InteractionStatus

router = APIGatewayHttpRouter()

LOCAL_PRINCIPAL = "arn:aws:iam::000000000000:user/local"


class StartTurnBody(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    prompt: str = Field(
        min_length=1,
        max_length=16_000,
        description="What to ask the session's root agent (not blank; at most 16,000 characters).",
        examples=["delete the prod-db record"],
        # Not blank: a character that is not white space (the service says so itself when it is).
        json_schema_extra={"pattern": r"\S"},
    )


class AnswerBody(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    response: Annotated[Any, WithJsonSchema(ANSWER_SCHEMA)]
    grant: Annotated[Any, WithJsonSchema(GRANT_SCHEMA)] = None


class InteractionList(BaseModel):
    model_config = ConfigDict(defer_build=True)
    interactions: list[InteractionView]


def service() -> Service:
    """The service of the request being resolved (``resumable.api.app`` puts it in the context)."""
    served: Service = router.context["service"]
    return served


_NAME_CLAIMS = ("name", "email", "preferred_username", "cognito:username")
"""The sign-in token's claims that name the person, in the order tried (shown to approvers only)."""


def caller() -> Caller:
    """Who called: the IAM principal that signed the request (API Gateway's IAM authorization), or the
    subject of the sign-in token API Gateway's JWT authorizer checked, with the token's groups; and
    where from, as the caller says (``X-Resumable-Via``: ``cli`` or ``page`` only, shown as the caller's
    word; a channel the service itself tells, ``slack`` or ``email``, is never taken from a header)."""
    via = (router.current_event.headers.get("x-resumable-via") or "").strip().lower()
    return replace(_identity(), via=via if via in SAID_VIAS else None)


def _identity() -> Caller:
    event = router.current_event
    authorizer = event.request_context.authorizer
    claims = authorizer.jwt_claim if authorizer else {}
    if claims:
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise BadRequestError("the sign-in token names no subject (sub); nothing was done: sign in again")
        groups_claim = service().settings.jwt_groups_claim
        issuer = claims.get("iss")
        return Caller(
            subject,
            frozenset(token_groups(event.headers.get("authorization"), subject, groups_claim)),
            {"method": "jwt", "subject": subject, "issuer": issuer if isinstance(issuer, str) else ""},
            next((n for c in _NAME_CLAIMS if isinstance(n := claims.get(c), str) and n.strip()), None),
        )
    if service().settings.auth_mode == "JWT":
        # API Gateway's JWT authorizer hands on the claims of every request it lets through: none
        # means the request did not come through it, and nobody may stand in for a person.
        raise BadRequestError("the request carries no sign-in token's claims; nothing was done: sign in and retry")
    iam = authorizer.iam if authorizer else None
    if iam is None or not iam.user_arn:
        # (no authorizer: a caller of the handler itself, locally; API Gateway always names one)
        return Caller(LOCAL_PRINCIPAL, frozenset(), {"method": "none"})
    signed = {"method": "iam", "arn": iam.user_arn}
    if iam.access_key:
        signed["accessKey"] = iam.access_key  # (what CloudTrail names the same caller by)
    return Caller(iam.user_arn, frozenset(), signed)


def token_groups(authorization: str | None, subject: str, claim: str) -> tuple[str, ...]:
    """The groups the sign-in token names in ``claim``, read from the token itself: API Gateway hands an
    array claim on flattened (``[Backup approvers]``), where a group's name could not be told from
    two. Its JWT authorizer has checked the token (its identity source is this header); only one for
    ``subject`` is read, and only a list of strings is groups. Anything else names none."""
    token = (authorization or "").strip()
    token = token[7:].strip() if token[:7].lower() == "bearer " else token
    parts = token.split(".")
    if len(parts) != 3:
        return ()
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, UnicodeDecodeError):
        return ()
    if not isinstance(payload, dict) or payload.get("sub") != subject:
        return ()
    groups = payload.get(claim)
    if isinstance(groups, str):
        groups = [groups]
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        return ()
    return tuple(groups)


def path_param(name: str, captured: str) -> str:
    """A path parameter as API Gateway hands it to Lambda: percent-decoded (the event's
    ``pathParameters``), never as the raw path spells it; for an event without them, the route's
    capture decoded the same way."""
    given: dict[str, str] = router.current_event.path_parameters or {}
    return given.get(name, unquote(captured))


MAX_REPLY_BYTES = 5 * 1024 * 1024
"""The most JSON one reply holds: Lambda answers API Gateway with at most 6 MB."""
_COMPACT_BYTES = 1024


def json_reply(view: Any, status: int = 200) -> Response[Any]:
    """``view`` as the reply; a turn (or list) whose questions are too many to show whole in one reply
    shows each question's input, answer and approved input as a preview (``"truncated": true``), as
    the table holds larger ones; each question whole is in the inbox, a page at a time."""
    if isinstance(view, TurnView | InteractionList) and len(view.model_dump_json(by_alias=True)) > MAX_REPLY_BYTES:
        shown = [
            i.model_copy(
                update={
                    "reason": bounded_reason(i.reason, _COMPACT_BYTES),
                    "response": bounded_json(i.response, _COMPACT_BYTES),
                    "approved_input": bounded_json(i.approved_input, _COMPACT_BYTES),
                }
            )
            for i in view.interactions
        ]
        # Thousands of questions even so: the open ones first, as many as fit (the inbox has them all).
        shown.sort(key=lambda i: i.status != "requested")
        room, kept = MAX_REPLY_BYTES - len(view.model_copy(update={"interactions": []}).model_dump_json()), []
        for interaction in shown:
            room -= len(interaction.model_dump_json(by_alias=True)) + 1
            if room < 0:
                break
            kept.append(interaction)
        view = view.model_copy(update={"interactions": kept})
    return Response(status_code=status, content_type="application/json", body=view)


@router.post(
    "/sessions/<sessionId>/turns",
    operation_id="startTurn",
    summary="Start a turn: run the session's root agent until it pauses for people or settles",
    responses=responses(
        201, "The Turn: waiting for answers, settled, or running (checkpointed: poll it)", TurnView, 400, 404, 409, 422
    ),
)
def start_turn(sessionId: str, body: Annotated[StartTurnBody, Body()]) -> Response[TurnView]:  # noqa: N803
    turn = service().start_turn(path_param("sessionId", sessionId), body.prompt, caller())
    count("TurnsStarted")  # (a start refused, 4xx, is no start)
    return json_reply(turn, 201)


@router.get(
    "/sessions/<sessionId>/turns/<turnId>",
    operation_id="getTurn",
    summary="Read a turn (a root or child turn), its interactions and its child turns",
    responses=responses(200, "The Turn", TurnView, 404),
)
def get_turn(sessionId: str, turnId: str) -> Response[TurnView]:  # noqa: N803
    return json_reply(service().get_turn(path_param("sessionId", sessionId), path_param("turnId", turnId), caller()))


@router.get(
    "/sessions/<sessionId>/turns/<turnId>/conversation",
    operation_id="getConversation",
    summary="A turn's conversation so far (a root or child turn), read-only, the latest page first",
    responses=responses(
        200, "A page of messages, oldest first, and where the earlier ones end", ConversationPage, 404, 422
    ),
)
def get_conversation(
    sessionId: str,  # noqa: N803
    turnId: str,  # noqa: N803
    before: Annotated[
        int | None, Query(ge=0, le=1_000_000, description="Messages before this position (default: the latest).")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_CONVERSATION_PAGE, description="At most this many.")] = 20,
) -> Response[ConversationPage]:
    ids = path_param("sessionId", sessionId), path_param("turnId", turnId)
    return json_reply(service().conversation(*ids, caller(), before, limit))


@router.post(
    "/sessions/<sessionId>/turns/<turnId>/interactions/<requestId>",
    operation_id="submitApproval",
    summary="Answer an interaction, once (under an approval rule, one of the approvals it needs); "
    "the last answer resumes the turn",
    responses=responses(
        200, "The Turn after the answer (resumed, or still waiting)", TurnView, 400, 404, 409, 410, 422
    ),
)
def submit_approval(
    sessionId: str,  # noqa: N803
    turnId: str,  # noqa: N803
    requestId: str,  # noqa: N803
    body: Annotated[AnswerBody, Body()],
) -> Response[TurnView]:
    ids = path_param("sessionId", sessionId), path_param("turnId", turnId), path_param("requestId", requestId)
    turn = service().submit_approval(*ids, body.response, caller(), body.grant)
    if any(i.request_id == ids[2] and i.status != "requested" for i in turn.interactions):
        count("ApprovalsSettled")  # (not a vote that waits for more approvals)
    if turn.status != "waiting":
        count("Resumes")
    return json_reply(turn)


@router.post(
    "/sessions/<sessionId>/turns/<turnId>/interactions/<requestId>/dismiss",
    operation_id="dismissInteraction",
    summary="Dismiss a question you will not answer: hidden from your inbox, still waiting for everyone else",
    responses=responses(200, "The interaction, dismissed by you", InteractionView, 404, 409, 410, 422),
)
def dismiss(sessionId: str, turnId: str, requestId: str) -> Response[InteractionView]:  # noqa: N803
    ids = path_param("sessionId", sessionId), path_param("turnId", turnId), path_param("requestId", requestId)
    return json_reply(service().dismiss(*ids, caller()))


@router.delete(
    "/sessions/<sessionId>/turns/<turnId>/interactions/<requestId>/dismiss",
    operation_id="undismissInteraction",
    summary="Take back a dismissal: the question shows in your inbox again",
    responses=responses(200, "The interaction, in your inbox again", InteractionView, 404, 409, 410),
)
def undismiss(sessionId: str, turnId: str, requestId: str) -> Response[InteractionView]:  # noqa: N803
    ids = path_param("sessionId", sessionId), path_param("turnId", turnId), path_param("requestId", requestId)
    return json_reply(service().dismiss(*ids, caller(), dismissed=False))


@router.post(
    "/sessions/<sessionId>/turns/<turnId>/cancel",
    operation_id="cancelTurn",
    summary="Cancel a turn and every child turn under it",
    responses=responses(200, "The Turn, canceled (or as it settled before)", TurnView, 404),
)
def cancel(sessionId: str, turnId: str) -> Response[TurnView]:  # noqa: N803
    done = service().cancel(path_param("sessionId", sessionId), path_param("turnId", turnId), caller())
    count("Cancels")  # (only what was done: a refusal counts nothing)
    return json_reply(done)


@router.get(
    "/sessions/<sessionId>/interactions",
    operation_id="listInteractions",
    summary="List a session's interactions, oldest first, optionally by status",
    responses=responses(200, "The session's interactions", InteractionList, 404, 422),
)
def list_interactions(
    sessionId: str,  # noqa: N803
    status: Annotated[
        InteractionStatus | None,
        Query(description="Only interactions in this status (one past its expiry counts as expired)."),
    ] = None,
) -> Response[InteractionList]:
    listed = service().list_interactions(path_param("sessionId", sessionId), status, caller())
    return json_reply(InteractionList(interactions=listed))


@router.get(
    "/interactions",
    operation_id="listInbox",
    summary="The inbox: open questions you may answer, across sessions, most urgent first (by the hour they "
    "expire in, then the riskiest, then the earliest expiry)",
    responses=responses(200, "A page of the inbox, and the cursor of the next", InboxPage, 422),
)
def list_inbox(
    status: Annotated[
        Literal["requested"], Query(description="Only requested interactions (an expired one never shows).")
    ] = "requested",
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description=f"At most this many (1 to {MAX_PAGE}).")] = DEFAULT_PAGE,
    cursor: Annotated[
        str | None,
        Query(min_length=1, max_length=MAX_CURSOR_CHARS, description="The previous page's cursor, as it came."),
    ] = None,
    dismissed: Annotated[
        bool, Query(description="Also the questions you dismissed (each with dismissedByYou: true).")
    ] = False,
    started: Annotated[
        bool,
        Query(
            description="Instead: the open questions of the turns you started (each with startedByYou: true), "
            "which may wait for others: you may deny (withdraw) them, or cancel their turn (dismissed or not)."
        ),
    ] = False,
) -> Response[InboxPage]:
    return json_reply(service().inbox(caller(), status, limit, cursor, dismissed, started))


@router.get(
    "/interactions/<requestId>",
    operation_id="getInteraction",
    summary="One question by its request id alone (as Slack, e-mail and the events name it), whatever its status: "
    "for its session's principal, an approver, or who started its turn",
    responses=responses(200, "The interaction, as you see it", InteractionView, 404),
)
def get_interaction(requestId: str) -> Response[InteractionView]:  # noqa: N803
    return json_reply(service().show_interaction(path_param("requestId", requestId), caller()))


@router.delete(
    "/sessions/<sessionId>",
    operation_id="deleteSession",
    summary="Delete a session: cancel its active turn, then hide all of it (restorable until its retention ends)",
    responses=responses(200, "The Session, deleted (or as an earlier deletion left it)", SessionView, 404, 409),
)
def delete_session(sessionId: str) -> Response[SessionView]:  # noqa: N803
    done = service().delete_session(path_param("sessionId", sessionId), caller())
    count("SessionsDeleted")  # (only what was done: a refusal counts nothing)
    return json_reply(done)


@router.post(
    "/sessions/<sessionId>/restore",
    operation_id="restoreSession",
    summary="Restore a deleted session, exactly as it was, while its retention lasts",
    responses=responses(200, "The Session, restored (or as it was, if it was not deleted)", SessionView, 404, 409),
)
def restore_session(sessionId: str) -> Response[SessionView]:  # noqa: N803
    done = service().restore_session(path_param("sessionId", sessionId), caller())
    count("SessionsRestored")  # (only what was done: a refusal counts nothing)
    return json_reply(done)

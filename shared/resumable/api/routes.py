"""The HTTP API's routes, shared by every Lambda function: parse, call the service, shape the reply.

| route | body | reply |
|---|---|---|
| ``POST /sessions/{sessionId}/turns`` | ``{"prompt": str}`` | 201 Turn |
| ``GET /sessions/{sessionId}/turns/{turnId}`` | | 200 Turn |
| ``POST /sessions/{sessionId}/turns/{turnId}/interactions/{requestId}`` | ``{"response": <json>}`` | 200 Turn |
| ``POST /sessions/{sessionId}/turns/{turnId}/cancel`` | | 200 Turn |
| ``GET /sessions/{sessionId}/interactions?status=requested`` | | 200 ``{"interactions": [...]}`` |
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ConfigDict

from resumable.api.observability import count
from resumable.service import InteractionView, Service, TurnView
from resumable.store.records import InteractionStatus

router = APIGatewayHttpRouter()

LOCAL_PRINCIPAL = "arn:aws:iam::000000000000:user/local"


class StartTurnBody(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    prompt: str


class AnswerBody(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    response: Any


class InteractionList(BaseModel):
    interactions: list[InteractionView]


class ErrorBody(BaseModel):
    """Every error reply: a machine-readable ``code`` and a human ``message``."""

    code: str
    message: str


_services: list[Service] = []


def serve(service: Service) -> None:
    """Route this process's requests to ``service`` (its AWS clients are reused; agents never are)."""
    _services[:] = [service]


def service() -> Service:
    return _services[0]


def principal() -> str:
    """The IAM principal that signed the request (API Gateway's IAM authorization)."""
    iam = router.current_event.request_context.authorizer.iam
    return (iam.user_arn if iam else None) or LOCAL_PRINCIPAL


def _path(name: str, captured: str) -> str:
    """A path parameter as API Gateway hands it to Lambda: percent-decoded (the event's
    ``pathParameters``), never as the raw path spells it; for an event without them, the route's
    capture decoded the same way."""
    given: dict[str, str] = router.current_event.path_parameters or {}
    return given.get(name, unquote(captured))


def _json(view: Any, status: int = 200) -> Response[Any]:
    return Response(status_code=status, content_type="application/json", body=view)


@router.post("/sessions/<sessionId>/turns", responses={201: {"description": "the turn, paused or settled"}})
def start_turn(sessionId: str, body: Annotated[StartTurnBody, Body()]) -> Response[TurnView]:  # noqa: N803
    count("TurnsStarted")
    return _json(service().start_turn(_path("sessionId", sessionId), body.prompt, principal()), 201)


@router.get("/sessions/<sessionId>/turns/<turnId>")
def get_turn(sessionId: str, turnId: str) -> Response[TurnView]:  # noqa: N803
    return _json(service().get_turn(_path("sessionId", sessionId), _path("turnId", turnId), principal()))


@router.post("/sessions/<sessionId>/turns/<turnId>/interactions/<requestId>")
def submit_approval(
    sessionId: str,  # noqa: N803
    turnId: str,  # noqa: N803
    requestId: str,  # noqa: N803
    body: Annotated[AnswerBody, Body()],
) -> Response[TurnView]:
    turn = service().submit_approval(
        _path("sessionId", sessionId),
        _path("turnId", turnId),
        _path("requestId", requestId),
        body.response,
        principal(),
    )
    count("ApprovalsSettled")
    if turn.status != "waiting":
        count("Resumes")
    return _json(turn)


@router.post("/sessions/<sessionId>/turns/<turnId>/cancel")
def cancel(sessionId: str, turnId: str) -> Response[TurnView]:  # noqa: N803
    count("Cancels")
    return _json(service().cancel(_path("sessionId", sessionId), _path("turnId", turnId), principal()))


@router.get("/sessions/<sessionId>/interactions")
def list_interactions(
    sessionId: str,  # noqa: N803
    status: Annotated[InteractionStatus | None, Query()] = None,
) -> Response[InteractionList]:
    listed = service().list_interactions(_path("sessionId", sessionId), status, principal())
    return _json(InteractionList(interactions=listed))

"""Direct invocation (a Step Functions Task state, another Lambda function): the same use cases as the
HTTP routes, without API Gateway.

The event is the use case's input (below); the reply is the Turn, in the API's JSON shape. A refused
request raises its service error, so the Lambda error type is its class name (``NotFoundError``,
``TurnBusyError``, ``ConflictError``, ``GoneError``, ``ValidationFailedError``, ...), which a state
machine can catch. Whoever may invoke the function directly is trusted by IAM, like the application
itself: ``principal`` says on whose behalf it acts (who owns a session it starts, who answered).

| function | event |
|---|---|
| StartTurn | ``{"sessionId", "prompt", "principal", "workflow": bool}`` (``workflow``: a state machine waits on it) |
| GetTurn | ``{"sessionId", "turnId"}`` (settles it first if it is overdue, like the HTTP route) |
| SubmitApproval | ``{"sessionId", "turnId", "requestId", "response", "principal"}`` |
| Cancel | ``{"sessionId", "turnId"}`` |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from resumable.exceptions import ValidationFailedError
from resumable.service import Service, TurnView


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    session_id: str = Field(alias="sessionId")


class StartTurnEvent(_Event):
    prompt: str
    principal: str = Field(min_length=1)
    workflow: bool = False


class TurnEvent(_Event):
    turn_id: str = Field(alias="turnId")


class AnswerEvent(TurnEvent):
    request_id: str = Field(alias="requestId")
    response: Any
    principal: str = Field(min_length=1)


Direct = Callable[[Service, dict[str, Any]], TurnView]
_E = TypeVar("_E", bound=_Event)


def _parse(model: type[_E], event: dict[str, Any]) -> _E:
    try:
        return model.model_validate(event)
    except ValidationError as error:
        described = "; ".join(
            f"{'.'.join(str(part) for part in p['loc']) or 'event'}: {p['msg']}" for p in error.errors()
        )
        raise ValidationFailedError(f"the event is not a {model.__name__}: {described}; nothing was done") from None


def start_turn(service: Service, event: dict[str, Any]) -> TurnView:
    e = _parse(StartTurnEvent, event)
    return service.start_turn(e.session_id, e.prompt, e.principal, workflow=e.workflow)


def get_turn(service: Service, event: dict[str, Any]) -> TurnView:
    e = _parse(TurnEvent, event)
    return service.get_turn(e.session_id, e.turn_id)


def submit_approval(service: Service, event: dict[str, Any]) -> TurnView:
    e = _parse(AnswerEvent, event)
    return service.submit_approval(e.session_id, e.turn_id, e.request_id, e.response, e.principal)


def cancel(service: Service, event: dict[str, Any]) -> TurnView:
    e = _parse(TurnEvent, event)
    return service.cancel(e.session_id, e.turn_id)

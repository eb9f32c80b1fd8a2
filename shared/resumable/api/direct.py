"""Direct invocation by the approval state machine (a Step Functions Task state): start a turn, read it.

| function | event |
|---|---|
| StartTurn | ``{"sessionId", "prompt", "principal", "workflow": bool, "callbackId": str, "heartbeatSeconds": int}`` |
| GetTurn | ``{"sessionId", "turnId"}`` (settles it first if it is overdue, and requests a continuation if it stalled) |
| Sweeper | the schedule's event (``"detail-type": "Scheduled Event"``): one run of the sweeper |

``workflow``: a state machine waits on the turn. ``callbackId``: a Lambda durable function does, on that
callback (``resumable.integrations.durable``); the turn is started once per callback, and a start again
with the same callback replies with that turn as it is now. ``heartbeatSeconds``: the callback's heartbeat
timeout, which the sweeper keeps while the turn waits.

The state machine's functions reply ``{"turn": Turn, "waitSeconds": int}``: the Turn in the API's
JSON shape (cut to fit a Step Functions payload if it must be: ``"truncated": true``), and how long
the workflow should wait before reading it again (until its earliest open interaction expires, or
the approval expiry). A refused request raises its service error, so the Lambda error type is its class name
(``NotFoundError``, ``TurnBusyError``, ``ValidationFailedError``, ``AwsError``, ...).

Whoever may invoke these functions directly (in the template: the state machine) is trusted like
the application: ``principal`` is who owns a session the start creates. Answers and cancels come
only through the HTTP API, where IAM says who the caller is; SubmitApproval and Cancel refuse
direct events (SubmitApproval takes only ``{"continueTurn": ...}``, which continues a turn with the
answers already recorded).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from resumable.exceptions import ValidationFailedError
from resumable.service import Service, TurnView
from resumable.service.advancing.outcome import MAX_OUTPUT_BYTES, fitted


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True, populate_by_name=True)

    session_id: str = Field(alias="sessionId")


class StartTurnEvent(_Event):
    prompt: str
    principal: str = Field(min_length=1)
    workflow: bool = False
    # (Lambda's form of a callback id: SendDurableExecutionCallback* refuse any other)
    callback_id: str | None = Field(
        None, alias="callbackId", min_length=1, max_length=1024, pattern=r"^[A-Za-z0-9+/]+={0,2}$"
    )
    heartbeat_seconds: int | None = Field(None, alias="heartbeatSeconds", gt=0, le=366 * 24 * 3600, strict=True)


class TurnEvent(_Event):
    turn_id: str = Field(alias="turnId")


Direct = Callable[[Service, dict[str, Any]], dict[str, Any]]
_E = TypeVar("_E", bound=_Event)


def _parse(model: type[_E], event: dict[str, Any]) -> _E:
    try:
        return model.model_validate(event)
    except ValidationError as error:
        described = "; ".join(
            f"{'.'.join(str(part) for part in p['loc']) or 'event'}: {p['msg']}" for p in error.errors()
        )
        raise ValidationFailedError(f"the event is not a {model.__name__}: {described}; nothing was done") from None


def _reply(service: Service, turn: TurnView) -> dict[str, Any]:
    expiries = [
        datetime.fromisoformat(i.expires_at).timestamp()
        for i in turn.interactions
        if i.status == "requested" and i.expires_at
    ]
    wait = service.settings.approval_expiry_seconds
    if expiries:
        wait = max(1, math.ceil(min(expiries) - service.clock.now()) + 1)
    # The envelope adds a few dozen bytes to the Turn.
    return {"turn": json.loads(fitted(turn, MAX_OUTPUT_BYTES - 256)), "waitSeconds": wait}


def start_turn(service: Service, event: dict[str, Any]) -> dict[str, Any]:
    e = _parse(StartTurnEvent, event)
    turn = service.start_turn(
        e.session_id,
        e.prompt,
        e.principal,
        workflow=e.workflow,
        callback_id=e.callback_id,
        heartbeat_seconds=e.heartbeat_seconds,
    )
    return _reply(service, turn)


def get_turn(service: Service, event: dict[str, Any]) -> dict[str, Any]:
    e = _parse(TurnEvent, event)
    return _reply(service, service.get_turn(e.session_id, e.turn_id))


SCHEDULED_EVENT = "Scheduled Event"


def sweep(service: Service, event: dict[str, Any]) -> dict[str, Any]:
    """One run of the sweeper, on the schedule's event; what it found and did."""
    if event.get("detail-type") != SCHEDULED_EVENT:
        raise ValidationFailedError(
            f"the Sweeper runs on its schedule's events (detail-type {SCHEDULED_EVENT!r}), got "
            f"{str(event.get('detail-type'))[:80]!r}; nothing was swept"
        )
    report = service.sweep(service.settings.sweep_limit)
    return {
        "looked": report.looked,
        "moved": dict(report.moved),
        "notYet": report.not_yet,
        "givenUp": report.given_up,
        "stuck": report.stuck,
        "failed": report.failed,
        "expired": report.expired,
    }

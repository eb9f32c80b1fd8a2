"""Waiting for a turn from a Lambda durable function (AWS's durable execution SDK), as a Step Functions
state machine waits for one.

    from resumable.integrations.durable import TurnNotCompleted, wait_for_turn

    @durable_execution
    def handler(event, context):
        claim = context.step(intake(event))
        turn = wait_for_turn(context, claim["sessionId"], f"Settle claim {claim['id']}")
        context.step(pay(claim, turn["output"]))

``wait_for_turn`` waits through the SDK's ``wait_for_callback``: its submitter starts the turn by
invoking the StartTurn function directly (``RESUMABLE_START_TURN_FUNCTION``, or ``function``) with the
callback's id, and the workflow waits, without running, until the turn settles. Whatever settles it
completes the callback with the Turn (the API's JSON shape, as the state machine is sent): the
completed Turn is returned; a turn canceled, failed, expired or interrupted raises ``TurnCanceled``,
``TurnFailed``, ``TurnExpired`` or ``TurnInterrupted`` (each a ``TurnNotCompleted``, with the Turn),
which the workflow catches by name. The SDK's own ``CallbackTimeoutError`` (the wait's ``timeout``)
passes through.

The submitter is run at least once (a replay of its step, a retry of it, a process that died after it
started the turn): each run names the same turn, whose id is derived from the callback's, so one turn
is started for one callback, and a run again replies with it (resumable.service.advancing.start).

The turn is started as ``principal``: by default the durable function itself (its ARN, without a
version), as a state machine starts turns as its own ARN. Questions the turn asks carry it as who
started the turn, and approval rules and the audit trail treat it as they treat the state machine.

Imports the SDK only when called: ``import resumable`` never does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from typing import Any

START_TURN_FUNCTION = "RESUMABLE_START_TURN_FUNCTION"
DEFAULT_TIMEOUT_SECONDS = 7 * 24 * 3600
MIN_HEARTBEAT_SECONDS = 300  # (resumable.service.advancing.start's: the sweeper sends them)

Start = Callable[[dict[str, Any]], dict[str, Any]]
"""Starts a turn from StartTurn's direct event (``{"sessionId", "prompt", "principal", "callbackId"}``)
and returns its reply; by default, the StartTurn function invoked directly."""


class TurnNotCompleted(Exception):  # noqa: N818 (what the workflow catches: the turn did not complete)
    """The turn the workflow waited for settled without completing: ``status`` and the Turn."""

    error = "Turn.NotCompleted"

    def __init__(self, turn: dict[str, Any] | None, message: str | None = None) -> None:
        self.turn = turn or {}
        self.status = str(self.turn.get("status", ""))
        said = f"turn {self.turn.get('turnId', '?')} of session {self.turn.get('sessionId', '?')} ended {self.status}"
        super().__init__(message or said)


class TurnCanceled(TurnNotCompleted):
    error = "Turn.Canceled"


class TurnFailed(TurnNotCompleted):
    error = "Turn.Failed"


class TurnExpired(TurnNotCompleted):
    error = "Turn.Expired"


class TurnInterrupted(TurnNotCompleted):
    error = "Turn.Interrupted"


NOT_COMPLETED: dict[str, type[TurnNotCompleted]] = {
    kind.error: kind for kind in (TurnCanceled, TurnFailed, TurnExpired, TurnInterrupted)
}


def wait_for_turn(
    context: Any,
    session_id: str | None,
    prompt: str,
    *,
    name: str = "turn",
    principal: str | None = None,
    function: str | None = None,
    start: Start | None = None,
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS,
    heartbeat_seconds: int | None = None,
) -> dict[str, Any]:
    """Start a turn of ``prompt`` in ``session_id`` and wait until it settles (see the module); the
    completed Turn. ``session_id`` must be the same at every replay (from the event, or a step's result:
    never made anew, as a random id would be); None: a session of the turn's own, named after the
    callback. ``name`` names the wait in the execution's history (one per wait in a workflow).
    ``heartbeat_seconds`` (at least 300): the callback fails unless it hears from the service that
    often while the turn waits for people; the service's sweeper sends a heartbeat every third of it."""
    from aws_durable_execution_sdk_python.config import Duration, WaitForCallbackConfig
    from aws_durable_execution_sdk_python.exceptions import CallbackExternalError

    if heartbeat_seconds is not None and heartbeat_seconds < MIN_HEARTBEAT_SECONDS:  # (StartTurn would refuse it)
        raise ValueError(
            f"wait_for_turn: heartbeat_seconds is at least {MIN_HEARTBEAT_SECONDS}, not {heartbeat_seconds}"
        )
    starting = start or invoking(function or os.environ.get(START_TURN_FUNCTION, ""))
    who = principal or workflow_of(context)

    def submit(callback_id: str, _: Any) -> None:
        session = session_id or callback_session_id(callback_id, execution_of(context))
        event = {"sessionId": session, "prompt": prompt, "principal": who, "callbackId": callback_id}
        starting(event | ({"heartbeatSeconds": heartbeat_seconds} if heartbeat_seconds else {}))

    config = WaitForCallbackConfig(
        timeout=Duration.from_seconds(timeout_seconds),
        heartbeat_timeout=Duration.from_seconds(heartbeat_seconds or 0),
        retry_strategy=_retried,
    )
    try:
        said = context.wait_for_callback(submit, name=name, config=config)
    except CallbackExternalError as error:
        # (the SDK keeps the failure's own type, Turn.Canceled, off the error it raises: the Turn it
        # carries says how the turn ended)
        turn = _turn(error.data)
        kind = NOT_COMPLETED.get(f"Turn.{str(turn.get('status', '')).capitalize()}")
        if kind is None:
            raise
        raise kind(turn, error.message) from error
    turn = _turn(said)
    if turn.get("status") != "completed":  # (never sent so: the service completes the callback on settling)
        raise TurnNotCompleted(turn)
    return turn


# What StartTurn refuses for good (a bad session id or prompt, a session the workflow may not use, the same
# callback with another prompt): its submitter is not run again for these. Anything else (Lambda
# throttled or failed, the session busy with another turn) is retried as the SDK retries a step.
REFUSED = frozenset(
    {"BadRequestError", "ValidationFailedError", "ForbiddenError", "GrantRefusedError", "NotFoundError"}
    | {"ConflictError", "GoneError", "InvalidInvocationError"}
)


def _retried(error: Exception, attempts: int) -> Any:
    """The submitter's retry decision: never for a start StartTurn refused for good (see ``REFUSED``)."""
    from aws_durable_execution_sdk_python.retries import RetryDecision, RetryPresets

    said = getattr(error, "error_type", None) or type(error).__name__  # (invoked: FunctionError names it)
    if said in REFUSED:
        return RetryDecision.no_retry()
    return RetryPresets.default()(error, attempts)  # (what the SDK retries a step by)


def callback_session_id(callback_id: str, execution_arn: str = "") -> str:
    """The session of a turn whose workflow named none: the same for every run of the callback's
    submitter, and named after its execution where the execution's ARN names it (Lambda's do:
    ``...:function:NAME:VERSION/durable-execution/EXECUTION/ID``), so that people answering the question
    see which execution asks (``durable-claim-17-3f2a9c1d0e4b5a6f``)."""
    digest = hashlib.sha256(callback_id.encode()).hexdigest()
    parts = execution_arn.split("/")
    named = parts[-2] if len(parts) >= 3 and parts[-3] == "durable-execution" else ""
    if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", named):
        return f"durable-{named}-{digest[:16]}"
    return f"durable-{digest[:32]}"


def execution_of(context: Any) -> str:
    """The ARN of the durable execution ``context`` runs in ("" where it says none)."""
    return str(getattr(getattr(context, "state", None), "durable_execution_arn", "") or "")


def _turn(said: Any) -> dict[str, Any]:
    """The Turn a callback carried (JSON, as text or bytes)."""
    if isinstance(said, bytes | bytearray):
        said = said.decode()
    turn = json.loads(said) if isinstance(said, str) and said else said
    return turn if isinstance(turn, dict) else {}


def workflow_of(context: Any) -> str:
    """The durable function's ARN without its version or alias: who starts the turn by default."""
    arn = str(getattr(getattr(context, "lambda_context", None), "invoked_function_arn", "") or "")
    if not arn:
        raise ValueError("wait_for_turn: this context names no function; pass principal= (who starts the turn)")
    return ":".join(arn.split(":")[:7])


def invoking(function: str) -> Start:
    """A start that invokes ``function`` (StartTurn) directly and returns its reply."""
    if not function:
        raise ValueError(
            f"wait_for_turn: no StartTurn function to start the turn with: set {START_TURN_FUNCTION} (the stack's "
            "StartTurnFunction) or pass function="
        )

    def start(event: dict[str, Any]) -> dict[str, Any]:
        from resumable.aws.lambdas import Lambdas
        from resumable.config import Settings

        return Lambdas(Settings.from_env()).invoke(function, event)

    return start

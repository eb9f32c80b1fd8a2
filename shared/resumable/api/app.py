"""The resolver every function uses: the shared routes, errors as ``{"code", "message"}``, the
OpenAPI document, logging and metrics.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from resumable.api import routes
from resumable.api.bodies import read_json_object
from resumable.api.direct import Direct
from resumable.api.errors import error_response
from resumable.api.observability import count, logger, metrics
from resumable.api.openapi import document
from resumable.api.routes import router, serve
from resumable.aws.lambdas import Lambdas
from resumable.config import Settings
from resumable.exceptions import (
    BadRequestError,
    ConflictError,
    GoneError,
    ServiceError,
    StoreError,
    ValidationFailedError,
)
from resumable.service import Service

_PLACES = {"body": "body field", "query": "query parameter", "path": "path parameter"}


def describe(problem: Any) -> str:
    """One validation problem in words a person reads: which field, and what is wrong with it."""
    place, *names = [str(part) for part in problem.get("loc", ())] or ["body"]
    field = ".".join(names)
    what = f"{_PLACES.get(place, place)} '{field}'" if field else f"the {place}"
    kind = problem.get("type")
    if kind == "missing":
        return f"{what} is required"
    if kind == "extra_forbidden":
        return f"{what} is not one this route takes"
    return f"{what}: {problem.get('msg', kind)}"


def build_app(service: Service | None = None) -> APIGatewayHttpResolver:
    """The resolver with every route; ``service`` defaults to one built from the environment."""
    app = APIGatewayHttpResolver(enable_validation=True, json_body_deserializer=read_json_object)
    app.include_router(router)
    serve(service or Service.from_settings(Settings.from_env()))

    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> Response[Any]:
        return Response(status_code=200, content_type="application/json", body=json.dumps(document(app)))

    @app.exception_handler(ServiceError)
    def service_error(error: ServiceError) -> Response[Any]:
        if isinstance(error, ConflictError):
            count("Conflicts")
        if isinstance(error, GoneError) and "expired" in str(error):
            count("Expiries")
        logger.info("request refused", extra={"code": error.code, "reason": str(error)})
        return error_response(error.code, str(error))  # type: ignore[arg-type]

    @app.exception_handler(RequestValidationError)
    def invalid_request(error: RequestValidationError) -> Response[Any]:
        problems = error.errors()
        if any(tuple(p.get("loc", ())) == ("body",) and p.get("type") == "missing" for p in problems):
            refused = BadRequestError('the body is empty: it must be a JSON object such as {"prompt": "..."}')
            return error_response("bad_request", f"{refused}; nothing was done")
        described = "; ".join(describe(p) for p in problems)
        return error_response("validation_failed", f"{described}; nothing was done")

    @app.exception_handler(UnicodeDecodeError)
    def not_text(error: UnicodeDecodeError) -> Response[Any]:
        return error_response("bad_request", f"the body is not UTF-8 text ({error}); nothing was done")

    @app.exception_handler(StoreError)
    def aws_failed(error: StoreError) -> Response[Any]:
        logger.error("an AWS call failed", extra={"reason": str(error)})
        count("AwsFailures")
        return error_response("aws_failed", str(error))

    return app


_apps: list[APIGatewayHttpResolver] = []


def forget() -> None:
    """Drop this process's resolver and service, so the next request builds them from the environment
    again (the local server and tests do this when they change the settings)."""
    _apps.clear()
    _lambdas.clear()


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics(raise_on_empty_metrics=False)
def handle(
    event: dict[str, Any], context: Any, direct: Direct | None = None, *, continues: bool = False
) -> dict[str, Any]:
    """Every function's handler. An API Gateway HTTP API (v2) event is resolved by the shared routes;
    any other event is a direct invocation of the function's use case ``direct`` (the state
    machine's; see ``resumable.api.direct``), or, where ``continues``, a turn's continuation.

    The resolver (and the service with its AWS clients) is built on the first request, not at import,
    so a cold start pays only for what the request needs.
    """
    if not _apps:
        _apps.append(build_app())
    service = routes.service()
    service.continuation = _continuation(service, context, continues)
    http = "requestContext" in event
    keys = (event.get("pathParameters") or {}) if http else event.get(CONTINUE_EVENT, event)
    keys = keys if isinstance(keys, dict) else {}
    logger.append_keys(session_id=keys.get("sessionId"), turn_id=keys.get("turnId"), request_id=keys.get("requestId"))
    count("Requests")
    if http:
        reply: dict[str, Any] = _apps[0].resolve(as_json(event), context)
        return reply
    try:
        if CONTINUE_EVENT in event and continues:
            return _continue(service, event[CONTINUE_EVENT])
        if CONTINUE_EVENT in event or direct is None:
            raise BadRequestError(
                "this function takes only API Gateway HTTP API events"
                + (" and its direct events" if direct else "")
                + ("; turns are continued by the function CONTINUE_FUNCTION names" if CONTINUE_EVENT in event else "")
                + "; nothing was done"
            )
        return direct(service, event)
    except ServiceError as error:
        logger.info("direct invocation refused", extra={"code": error.code, "reason": str(error)})
        raise


def as_json(event: dict[str, Any]) -> dict[str, Any]:
    """The API speaks JSON only: a body is read as JSON whatever ``Content-Type`` it claims (so
    ``curl -d`` works, and a form is refused as not JSON rather than parsed as a form)."""
    headers = {name: value for name, value in (event.get("headers") or {}).items() if name.lower() != "content-type"}
    return {**event, "headers": {**headers, "content-type": "application/json"}}


# The event a function sends itself to continue a checkpointed turn: {"continueTurn": {"sessionId", "turnId"}}.
CONTINUE_EVENT = "continueTurn"
_lambdas: list[Lambdas] = []


def _continuation(service: Service, context: Any, continues: bool) -> Callable[[str, str], None] | None:
    """How a turn is continued from here: an asynchronous invocation of ``CONTINUE_FUNCTION`` (the
    SubmitApproval function), or, without one, of this function itself if it is the one that takes
    continuations. Otherwise none: runs here never checkpoint (nobody would continue them)."""
    itself = getattr(context, "invoked_function_arn", None) if continues else None
    function = service.settings.continue_function or itself
    if not function:
        return None
    if not _lambdas:
        _lambdas.append(Lambdas(service.settings))

    def continuation(session_id: str, turn_id: str) -> None:
        _lambdas[0].invoke_async(function, {CONTINUE_EVENT: {"sessionId": session_id, "turnId": turn_id}})

    return continuation


def _continue(service: Service, target: Any) -> dict[str, Any]:
    """Continue a checkpointed or stalled turn (the asynchronous invocation ``_continuation`` sends)."""
    if not isinstance(target, dict) or not isinstance(target.get("sessionId"), str) or not target.get("turnId"):
        raise ValidationFailedError(f"{CONTINUE_EVENT} needs sessionId and turnId, got {target!r}; nothing was done")
    logger.append_keys(session_id=target["sessionId"], turn_id=target["turnId"])
    count("Continuations")
    turn = service.recover(target["sessionId"], str(target["turnId"]))
    return turn.model_dump(mode="json")


logging.getLogger("resumable").setLevel(logging.INFO)

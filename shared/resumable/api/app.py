"""The resolver every function uses: the shared routes, errors as ``{"code", "message"}``, the
OpenAPI document, logging and metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from resumable.api import routes
from resumable.api.direct import Direct
from resumable.api.observability import count, logger, metrics
from resumable.api.routes import ErrorBody, router, serve
from resumable.config import Settings
from resumable.exceptions import BadRequestError, ConflictError, GoneError, ServiceError, ValidationFailedError
from resumable.service import Service
from resumable.store.lambdas import Lambdas

# The HTTP status of each service error code: the one place it is decided.
HTTP_STATUS: dict[str, int] = {
    "bad_request": 400,
    "not_found": 404,
    "conflict": 409,
    "turn_busy": 409,
    "gone": 410,
    "validation_failed": 422,
}


def _error(status: int, code: str, message: str) -> Response[Any]:
    return Response(
        status_code=status,
        content_type="application/json",
        body=ErrorBody(code=code, message=message).model_dump_json(),
    )


def build_app(service: Service | None = None) -> APIGatewayHttpResolver:
    """The resolver with every route; ``service`` defaults to one built from the environment."""
    app = APIGatewayHttpResolver(enable_validation=True)
    app.include_router(router)
    serve(service or Service.from_settings(Settings.from_env()))

    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> Response[Any]:
        return Response(
            status_code=200,
            content_type="application/json",
            body=app.get_openapi_json_schema(title="resumable", version="1"),
        )

    @app.exception_handler(ServiceError)
    def service_error(error: ServiceError) -> Response[Any]:
        if isinstance(error, ConflictError):
            count("Conflicts")
        if isinstance(error, GoneError) and "expired" in str(error):
            count("Expiries")
        logger.info("request refused", extra={"code": error.code, "reason": str(error)})
        return _error(HTTP_STATUS[error.code], error.code, str(error))

    @app.exception_handler(RequestValidationError)
    def invalid_request(error: RequestValidationError) -> Response[Any]:
        problems = error.errors()
        if any(p.get("type") == "json_invalid" for p in problems):
            return _error(HTTPStatus.BAD_REQUEST, "bad_request", "the body is not valid JSON; nothing was done")
        described = "; ".join(
            f"{'.'.join(str(part) for part in p.get('loc', ()))}: {p.get('msg', p.get('type'))}" for p in problems
        )
        return _error(HTTPStatus.UNPROCESSABLE_ENTITY, "validation_failed", f"{described}; nothing was done")

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
        reply: dict[str, Any] = _apps[0].resolve(event, context)
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

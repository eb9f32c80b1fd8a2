"""The resolver every function uses: the shared routes, errors as ``{"code", "message"}``, the
OpenAPI document, logging and metrics.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from resumable.api.bodies import read_json_object
from resumable.api.errors import error_response
from resumable.api.grant_routes import grant_router
from resumable.api.observability import logger
from resumable.api.openapi import document
from resumable.api.routes import router
from resumable.config import Settings
from resumable.exceptions import (
    AwsError,
    BadRequestError,
    ConflictError,
    GoneError,
    ServiceError,
    ValidationFailedError,
)
from resumable.metrics import count, flushing
from resumable.service import Service
from resumable.service.dependencies import Continuation

if TYPE_CHECKING:
    from resumable.aws.lambdas import Lambdas

# The use cases a function runs for its direct invocations (resumable.api.direct, imported by the first one).
DirectUseCase = Literal["start_turn", "get_turn", "sweep"]

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
    if place == "query" and isinstance(problem.get("input"), list):
        # (Powertools reads a value sent twice, which API Gateway joins with a comma, as a list)
        return f"{what} was sent more than once, or holds a comma: send one value"
    return f"{what}: {problem.get('msg', kind)}"


def _known_query_only(app: APIGatewayHttpResolver, next_middleware: Callable[..., Response[Any]]) -> Response[Any]:
    """A query parameter the route does not take is refused, not ignored (``?stauts=requested`` would
    otherwise list everything). The page (/inbox, which the sign-in redirect comes back to with its own
    parameters) and the document take any."""
    route = app.context.get("_route")
    # (not for a path no route takes: Powertools' not-found route is its own, and the answer is a 404)
    if route is not None and route.include_in_schema and route.func.__module__.startswith("resumable."):
        taken = {parameter.alias for parameter in route.dependant.query_params}
        unknown = sorted(set(app.current_event.query_string_parameters or {}) - taken)
        if unknown:
            offered = ", ".join(sorted(taken)) or "none"
            raise ValidationFailedError(
                f"query parameter {unknown[0][:64]!r} is not one this route takes (it takes: {offered}); "
                "nothing was done"
            )
    return next_middleware(app)


# The paths of the routes few requests take: the audit trail, the operator's reads and moves
# (resumable.api.operator_routes), and the document that describes them all. A function's resolver
# takes them on the first request for one of them, so that a cold start serving a turn's route does not
# import them (a test holds these to the routers' paths).
# A path ending in "/" is a prefix; any other is the whole path.
ASIDE_PATHS = ("/audit", "/audit/verify", "/admin/", "/openapi.json")
_ASIDE_WHOLE = frozenset(path for path in ASIDE_PATHS if not path.endswith("/"))
_ASIDE_PREFIXES = tuple(path for path in ASIDE_PATHS if path.endswith("/"))
_with_aside: weakref.WeakSet[APIGatewayHttpResolver] = weakref.WeakSet()


def takes_aside(event: dict[str, Any]) -> bool:
    """Whether an API Gateway event's route is one of ``ASIDE_PATHS`` (by the route API Gateway
    matched, which no stage or base path changes). An event without one (``$default``, a hand-made
    event) may be for any route: True."""
    path = str(event.get("routeKey") or "").partition(" ")[2]
    return not path or path in _ASIDE_WHOLE or path.startswith(_ASIDE_PREFIXES)


def include_aside(app: APIGatewayHttpResolver) -> None:
    """Add the routes of ``ASIDE_PATHS`` to ``app``, once (Powertools takes routes after its first request)."""
    if app in _with_aside:
        return
    from resumable.api.operator_routes import operator_router

    app.include_router(operator_router)
    _with_aside.add(app)


def build_app(service: Service | None = None, *, aside: bool = True, links: bool = False) -> APIGatewayHttpResolver:
    """The resolver with every route (without ``aside``: without the routes of ``ASIDE_PATHS``, which
    ``include_aside`` adds); with ``links``, the decision links' routes and nothing else (the
    DecisionLinks function's: no other function serves them). Each request's service is in the
    resolver's context (``handle`` puts it there); with ``service``, every request is served by it."""
    app = APIGatewayHttpResolver(enable_validation=True, json_body_deserializer=read_json_object)
    if links:
        from resumable.api.link_routes import link_router

        app.include_router(link_router)
    else:
        app.include_router(router)
        app.include_router(grant_router)
        if aside:
            include_aside(app)
    if service is not None:

        def serve(app: APIGatewayHttpResolver, next_middleware: Callable[..., Response[Any]]) -> Response[Any]:
            app.append_context(service=service)
            return next_middleware(app)

        app.use(middlewares=[serve])
    app.use(middlewares=[_known_query_only])
    if not links:
        _pages(app)
    _errors(app)
    return app


def _pages(app: APIGatewayHttpResolver) -> None:
    """The routes of the API's document and the inbox page."""

    # The document, made once for each way of signing in (30 ms each, 300 ms the first): the routes are
    # all in once the aside ones are, and none is added after.
    documents: dict[bool, str] = {}

    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> Response[Any]:
        service = app.context.get("service")
        signed_in = service is not None and service.settings.auth_mode == "JWT"
        if signed_in not in documents:
            include_aside(app)  # (handle has, for this route: a resolver resolving it itself may not have)
            documents[signed_in] = json.dumps(document(app, signed_in))
        return Response(status_code=200, content_type="application/json", body=documents[signed_in])

    @app.get("/inbox", include_in_schema=False)
    def inbox() -> Response[Any]:
        # The page holds no data (the route has no authorizer); what it reads, it reads through the API.
        from resumable.web import content_security_policy, inbox_page

        settings: Settings = app.context["service"].settings
        return Response(
            status_code=200,
            content_type="text/html; charset=utf-8",
            body=inbox_page(settings),
            headers={
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer",
                "Content-Security-Policy": content_security_policy(settings),
            },
        )


def _errors(app: APIGatewayHttpResolver) -> None:
    """Refusals as ``{"code", "message"}``."""

    @app.exception_handler(ServiceError)
    def service_error(error: ServiceError) -> Response[Any]:
        if isinstance(error, ConflictError):
            count("Conflicts")
        if isinstance(error, GoneError) and "expired" in str(error):
            count("Expiries")
        logger.info("request refused", extra={"code": error.code, "reason": str(error)})
        answered = error.answered if isinstance(error, ConflictError) else None
        return error_response(error.code, str(error), answered=answered)  # type: ignore[arg-type]

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

    @app.exception_handler(AwsError)
    def aws_failed(error: AwsError) -> Response[Any]:
        logger.error("an AWS call failed", extra={"reason": str(error)})
        count("AwsFailures")
        return error_response("aws_failed", str(error))


@functools.cache
def resolver() -> APIGatewayHttpResolver:
    """This process's resolver, built on its first request (not at import: a cold start pays only for
    what the request needs), without the routes of ``ASIDE_PATHS``."""
    return build_app(aside=False)


@functools.cache
def link_resolver() -> APIGatewayHttpResolver:
    """The DecisionLinks function's resolver: the decision links' routes only."""
    return build_app(links=True)


def check_settings() -> None:
    """Read the settings when the function starts (its init), as its requests will: a bad one (an
    approval rule that is not one) stops the start with the error that names it, rather than failing
    each of its requests. What is read is not kept: the service reads them again on its first request
    (the local run sets the embedded AWS's environment after it has imported the handlers)."""
    Settings.from_env()


@functools.cache
def process_service() -> Service:
    """This process's service and its AWS clients, from the environment, built once."""
    return Service.from_settings(Settings.from_env())


@functools.cache
def service_for(continue_function: str | None, runs_agents: bool = True) -> Service:
    """The process's service, with turns continued by ``continue_function`` (None: never checkpoint);
    without ``runs_agents``, every run of agents is handed to it."""
    service = process_service()
    return service.continued_by(_continuation(continue_function) if continue_function else None, runs_agents)


# Powertools keeps the request being resolved in process-wide state (Lambda runs one invocation at a
# time per process), so a process that serves several at once (the local server) resolves one at a time.
_resolving = threading.Lock()


def forget() -> None:
    """Drop this process's resolver and service, so the next request builds them from the environment
    again (the local server and tests do this when they change the settings)."""
    with _resolving:  # (not while a request is being resolved by the resolver dropped)
        for cached in (resolver, link_resolver, process_service, service_for, _lambdas):
            cached.cache_clear()


@logger.inject_lambda_context(clear_state=True)
@flushing
def handle(
    event: dict[str, Any],
    context: Any,
    direct: DirectUseCase | None = None,
    *,
    continues: bool = False,
    links: bool = False,
) -> dict[str, Any]:
    """Every function's handler. An API Gateway HTTP API (v2) event is resolved by the shared routes
    (with ``links``, by the decision links' routes only, and every run of agents is handed to
    ``CONTINUE_FUNCTION``); any other event is a direct invocation of the function's use case
    ``direct`` (the state machine's; see ``resumable.api.direct``), or, where ``continues``, a turn's
    continuation."""
    cf = continue_function(process_service().settings, context, continues)
    service = service_for(cf, not links)
    http = "requestContext" in event
    keys = (event.get("pathParameters") or {}) if http else event.get(CONTINUE_EVENT, event)
    keys = keys if isinstance(keys, dict) else {}
    logger.append_keys(session_id=keys.get("sessionId"), turn_id=keys.get("turnId"), request_id=keys.get("requestId"))
    count("Requests")
    if http:
        with _resolving:  # (the resolver is built under it too: two built at once would share one router)
            app = link_resolver() if links else resolver()
            if not links and takes_aside(event):
                include_aside(app)  # (once: the first request for one of ASIDE_PATHS)
            app.append_context(service=service)
            reply: dict[str, Any] = app.resolve(as_json(event), context)
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
        from resumable.api import direct as direct_events  # (its event models: not in an HTTP cold start)

        use_case: direct_events.Direct = getattr(direct_events, direct)
        return use_case(service, event)
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


def continue_function(settings: Settings, context: Any, continues: bool) -> str | None:
    """The function that continues this function's checkpointed turns: ``CONTINUE_FUNCTION`` (the
    SubmitApproval function), or, without one, this function itself if it takes continuations
    (``continues``). None otherwise: its runs never checkpoint (nobody would continue them)."""
    itself = getattr(context, "invoked_function_arn", None) if continues else None
    return settings.continue_function or itself


@functools.cache
def _lambdas() -> Lambdas:
    from resumable.aws.lambdas import Lambdas  # (only a function that continues turns needs it)

    return Lambdas(process_service().settings)


def _continuation(function: str) -> Continuation:
    """How a turn is continued from here: an asynchronous invocation of ``function`` (``CONTINUE_FUNCTION``,
    the SubmitApproval function, or this function itself if it is the one that takes continuations)."""

    def continuation(session_id: str, turn_id: str) -> None:
        _lambdas().invoke_async(function, {CONTINUE_EVENT: {"sessionId": session_id, "turnId": turn_id}})

    return continuation


def _continue(service: Service, target: Any) -> dict[str, Any]:
    """Continue a checkpointed or stalled turn (the asynchronous invocation ``_continuation`` sends)."""
    if not isinstance(target, dict) or not isinstance(target.get("sessionId"), str) or not target.get("turnId"):
        raise ValidationFailedError(f"{CONTINUE_EVENT} needs sessionId and turnId, got {target!r}; nothing was done")
    logger.append_keys(session_id=target["sessionId"], turn_id=target["turnId"])
    count("Continuations")
    turn = service.recover(target["sessionId"], str(target["turnId"]))
    return turn.model_dump(mode="json")


# Info and above, unless LOG_LEVEL names another level (make run's LOG_LEVEL=DEBUG shows more).
_LEVEL = os.environ.get("LOG_LEVEL", "").strip().upper()
logging.getLogger("resumable").setLevel(_LEVEL if _LEVEL in ("DEBUG", "INFO", "WARNING", "ERROR") else logging.INFO)

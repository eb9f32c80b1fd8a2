"""A function's resolver starts without the routes few requests take (the audit trail, the operator's,
the document) and takes them on the first request for one. Which requests those are is
said by ``ASIDE_PATHS``: a route of the aside routers it missed would be a 404 on a fresh function, and a
turn's route it caught would bring them into every cold start. The decision links' routes are served by
the DecisionLinks function's resolver alone (``build_app(links=True)``), and it serves nothing else.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from resumable.api.app import build_app, include_aside, takes_aside
from resumable.api.grant_routes import grant_router
from resumable.api.link_routes import link_router
from resumable.api.operator_routes import operator_router
from resumable.api.routes import router
from resumable.local.functions import load_template, routes


def api_gateway_path(rule: str) -> str:
    """A Powertools rule (``/sessions/<sessionId>``) as API Gateway writes it (``/sessions/{sessionId}``)."""
    return re.sub(r"<(\w+)>", r"{\1}", rule)


def route_keys(routes: dict[tuple[object, ...], object]) -> set[str]:
    """A router's routes as API Gateway names them: ``GET /sessions/{sessionId}``."""
    keys = set()
    for rule, methods, *_ in routes:
        path = api_gateway_path(str(rule))
        keys |= {f"{method} {path}" for method in (methods if isinstance(methods, tuple) else (methods,))}
    return keys


ASIDE = route_keys(operator_router._routes) | {"GET /openapi.json"}
TURNS = route_keys(router._routes) | route_keys(grant_router._routes) | {"GET /inbox"}
LINKS = route_keys(link_router._routes)


def test_the_aside_routers_routes_are_aside_and_no_other_is() -> None:
    assert ASIDE and TURNS and LINKS and not ASIDE & TURNS and not LINKS & (ASIDE | TURNS)
    assert [key for key in sorted(ASIDE) if not takes_aside({"routeKey": key})] == []
    assert [key for key in sorted(TURNS) if takes_aside({"routeKey": key})] == []


def test_every_route_the_template_declares_is_served_by_the_resolver_its_requests_get() -> None:
    template = load_template()
    declared = {f"{route.method} {route.path}" for route in routes(template)}
    assert declared - {"POST /slack/interactions"} - LINKS <= ASIDE | TURNS  # (Slack's route: a handler of its own)
    assert {key for key in declared if takes_aside({"routeKey": key})} == ASIDE & declared
    links = template["Resources"]["DecisionLinksFunction"]
    served_by_links = {
        f"{e['Properties']['Method']} {e['Properties']['Path']}" for e in links["Properties"]["Events"].values()
    }
    assert served_by_links == LINKS and links["Condition"] == "HasDecisionLinks"


def test_an_event_without_a_matched_route_gets_every_route() -> None:
    """``$default`` or a hand-made event: which route it is for is not known, so none is left out."""
    assert takes_aside({"routeKey": "$default", "rawPath": "/sessions"})
    assert takes_aside({"rawPath": "/sessions"})


def served(app: APIGatewayHttpResolver) -> set[str]:
    return {f"{route.method} {api_gateway_path(route.path)}" for route in app._static_routes + app._dynamic_routes}


def test_the_whole_resolver_has_every_route_and_the_first_none_of_the_aside_routers() -> None:
    assert served(build_app()) == ASIDE | TURNS
    assert served(build_app(aside=False)) == TURNS | {"GET /openapi.json"}


def test_the_links_resolver_has_the_links_routes_and_no_other() -> None:
    """A request the DecisionLinks function is handed for another route (by a direct invocation) finds none."""
    assert served(build_app(links=True)) == LINKS


def test_the_aside_routes_are_added_once_however_often_asked() -> None:
    app = build_app(aside=False)
    include_aside(app)
    once = [(route.method, route.path) for route in app._static_routes + app._dynamic_routes]
    include_aside(app)
    assert [(route.method, route.path) for route in app._static_routes + app._dynamic_routes] == once


def test_a_path_no_route_takes_is_a_404_with_or_without_a_query() -> None:
    """(The check that refuses a query parameter a route does not take is for resumable's routes only.)"""
    for query in ("", "x=1"):
        event = {
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": "/nosuch",
            "rawQueryString": query,
            "queryStringParameters": {"x": "1"} if query else None,
            "headers": {},
            "requestContext": {"http": {"method": "GET", "path": "/nosuch"}, "stage": "$default"},
            "isBase64Encoded": False,
        }
        assert build_app().resolve(event, {})["statusCode"] == 404, query


def test_the_document_has_the_aside_routes_and_is_made_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """However its resolver was built: made when first asked for (some 30 ms), then served as made."""
    from resumable.api import app as api_app

    made: list[bool] = []
    document = api_app.document
    monkeypatch.setattr(api_app, "document", lambda app, signed_in: made.append(signed_in) or document(app, signed_in))
    event = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/openapi.json",
        "rawQueryString": "",
        "headers": {},
        "requestContext": {"http": {"method": "GET", "path": "/openapi.json"}, "stage": "$default"},
        "isBase64Encoded": False,
    }
    app = build_app(aside=False)
    first, again = app.resolve(event, {}), app.resolve(event, {})
    assert first["statusCode"] == 200 and first["body"] == again["body"]
    assert {"/audit", "/admin/stuck"} <= set(json.loads(first["body"])["paths"])
    assert made == [False]
    signing_in = SimpleNamespace(settings=SimpleNamespace(auth_mode="JWT"))  # (what the route reads of a service)
    app.append_context(service=signing_in)
    signed_in = app.resolve(event, {})
    app.append_context(service=signing_in)
    assert app.resolve(event, {})["body"] == signed_in["body"] != first["body"]
    assert list(json.loads(signed_in["body"])["components"]["securitySchemes"]) == ["signIn"]
    assert made == [False, True]

"""Every sample event in events/ runs through the handler template.yaml routes it to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from resumable.config import Settings
from resumable.local_server import ROOT, load_template, routes
from tools.invoke import invoke

EVENTS = sorted((ROOT / "events").glob("*.json"))
# What each event gets from a store that has never seen its session: the start creates a turn, the
# reads of ids that do not exist are 404 with {code, message}, the listing is empty.
EXPECTED = {
    "start_turn": 201,
    "get_turn": 404,
    "submit_approval": 404,
    "cancel": 404,
    "list_interactions": 200,
    "openapi": 200,
}


def test_there_is_an_event_for_every_route() -> None:
    declared = {f"{r.method} {r.path}" for r in routes(load_template())}
    covered = {json.loads(path.read_text())["routeKey"] for path in EVENTS}
    assert covered == declared


@pytest.mark.parametrize("path", EVENTS, ids=[p.stem for p in EVENTS])
def test_every_event_runs_through_its_function(path: Path, handler_environment: Settings) -> None:
    event: dict[str, Any] = json.loads(path.read_text())
    assert set(event["requestContext"]) >= {"accountId", "apiId", "authorizer", "http", "requestId", "routeKey"}
    route = next(r for r in routes(load_template()) if f"{r.method} {r.path}" == event["routeKey"])
    reply = invoke(route.function, event)
    assert reply["statusCode"] == EXPECTED[path.stem]
    body = json.loads(reply["body"])
    if reply["statusCode"] >= 400:
        assert set(body) == {"code", "message"}

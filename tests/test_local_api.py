"""`make run`'s local API: template.yaml's routes over real HTTP, against the embedded AWS."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from resumable.config import Settings
from resumable.local_server import PRINCIPAL_HEADER, load_template, make_server
from resumable.local_server import routes as template_routes

MALLORY = "arn:aws:iam::000000000000:user/mallory"
APPROVER = "arn:aws:iam::000000000000:user/approver-ann"


@pytest.fixture(scope="module")
def url(handler_environment: Settings) -> Iterator[str]:
    server = make_server(port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def call(url: str, method: str, path: str, body: Any = None, principal: str | None = None) -> tuple[int, Any]:
    headers = {"content-type": "application/json"} | ({PRINCIPAL_HEADER: principal} if principal else {})
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_every_route_of_the_template_is_served() -> None:
    declared = {(r.method, r.path) for r in template_routes(load_template())}
    assert declared == {
        ("POST", "/sessions/{sessionId}/turns"),
        ("GET", "/sessions/{sessionId}/turns/{turnId}"),
        ("POST", "/sessions/{sessionId}/turns/{turnId}/interactions/{requestId}"),
        ("POST", "/sessions/{sessionId}/turns/{turnId}/cancel"),
        ("GET", "/sessions/{sessionId}/interactions"),
        ("GET", "/openapi.json"),
    }


@pytest.mark.slow
def test_the_walkthrough_start_approve_complete_and_start_cancel(url: str) -> None:
    status, turn = call(url, "POST", "/sessions/walk/turns", {"prompt": "delete the prod-db record"})
    assert (status, turn["status"]) == (201, "waiting")
    [interaction] = turn["interactions"]
    assert interaction["reason"]["input"] == {"name": "prod-db"}
    assert call(url, "GET", "/sessions/walk/interactions?status=requested")[1]["interactions"] == [interaction]
    path = f"/sessions/walk/turns/{turn['turnId']}/interactions/{interaction['requestId']}"
    # Another principal cannot see, answer or cancel the session; an approver principal can answer.
    assert call(url, "GET", f"/sessions/walk/turns/{turn['turnId']}", principal=MALLORY)[0] == 404
    assert call(url, "GET", "/sessions/walk/interactions", principal=MALLORY)[0] == 404
    assert call(url, "POST", path, {"response": {"decision": "approve"}}, principal=MALLORY)[0] == 404
    assert call(url, "POST", f"/sessions/walk/turns/{turn['turnId']}/cancel", principal=MALLORY)[0] == 404
    assert call(url, "POST", "/sessions/walk/turns", {"prompt": "delete test-db"}, principal=MALLORY)[0] == 404
    assert call(url, "GET", f"/sessions/walk/turns/{turn['turnId']}")[1]["status"] == "waiting"
    status, done = call(url, "POST", path, {"response": {"decision": "approve"}}, principal=APPROVER)
    assert (status, done["status"], done["output"]) == (200, "completed", "record prod-db deleted")
    assert done["interactions"][0]["answeredBy"] == APPROVER

    _, other = call(url, "POST", "/sessions/walk-2/turns", {"prompt": "delete the test-db record"})
    status, canceled = call(url, "POST", f"/sessions/walk-2/turns/{other['turnId']}/cancel")
    assert (status, canceled["status"]) == (200, "canceled")
    assert call(url, "GET", "/nowhere")[0] == 404

"""`make run`'s local API: template.yaml's routes over real HTTP, against the embedded AWS."""

from __future__ import annotations

from pathlib import Path

import pytest

from resumable.api.app import forget
from resumable.embedded_template import functions_in_process
from resumable.local_server import load_template
from resumable.local_server import routes as template_routes
from tests.factories import LEDGER_ENV, executions
from tests.local_api import APPROVER, MALLORY, call


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


@pytest.mark.slow
def test_a_turn_over_the_time_budget_replies_running_and_continues_asynchronously(
    url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """StartTurn checkpoints the turn (budget 0), replies 201 running and invokes itself asynchronously
    (run in-process here, as Lambda would); the client polls until the turn waits for its approval."""
    ledger = tmp_path / "executions.log"
    monkeypatch.setenv("TURN_BUDGET_SECONDS", "0")
    monkeypatch.setenv("AGENT_FACTORY", "tests.factories:looks_then_deletes")
    monkeypatch.setenv(LEDGER_ENV, str(ledger))
    forget()
    try:
        with functions_in_process() as lambdas:
            status, turn = call(url, "POST", "/sessions/long/turns", {"prompt": "delete prod-db"})
            assert (status, turn["status"], turn["interactions"]) == (201, "running", [])
            assert lambdas.wait(), "the continuation did not finish"
            polled = call(url, "GET", f"/sessions/long/turns/{turn['turnId']}")[1]
            assert polled["status"] == "waiting"
            [interaction] = polled["interactions"]
            path = f"/sessions/long/turns/{turn['turnId']}/interactions/{interaction['requestId']}"
            status, done = call(url, "POST", path, {"response": {"decision": "approve"}})
            assert (status, done["status"], done["output"]) == (200, "completed", "The record is gone.")
        assert executions(ledger) == ["delete prod-db"]
    finally:
        monkeypatch.undo()
        forget()


@pytest.mark.slow
def test_path_parameters_are_percent_decoded_as_api_gateway_does_then_validated(url: str) -> None:
    status, turn = call(url, "POST", "/sessions/team%3Aalpha/turns", {"prompt": "delete the test-db record"})
    assert (status, turn["sessionId"]) == (201, "team:alpha")
    for spelled in ("team:alpha", "team%3Aalpha", "team%3aalpha"):
        status, read = call(url, "GET", f"/sessions/{spelled}/turns/{turn['turnId']}")
        assert (status, read["turnId"]) == (200, turn["turnId"])
        assert call(url, "GET", f"/sessions/{spelled}/interactions")[0] == 200
    # Decoded, these are not ids: '/' splits the path (no route), '%' and ' ' are outside the alphabet.
    assert call(url, "GET", f"/sessions/team%2Falpha/turns/{turn['turnId']}")[0] == 404
    assert call(url, "GET", f"/sessions/team%25alpha/turns/{turn['turnId']}")[0] == 404
    status, refused = call(url, "POST", "/sessions/team%20alpha/turns", {"prompt": "delete prod-db"})
    assert (status, refused["code"]) == (422, "validation_failed")
    assert "letters, digits" in refused["message"]
    call(url, "POST", f"/sessions/team:alpha/turns/{turn['turnId']}/cancel")

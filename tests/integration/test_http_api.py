"""The HTTP API's routes, through Powertools' resolver, with API Gateway HTTP API (v2) events."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from resumable import Agent, ScriptedModel
from resumable.api import routes
from resumable.api.app import build_app
from resumable.service import Service
from tests.agents import calls, says
from tests.factories import delete_record, executions
from tests.integration.helpers import ALICE
from tests.integration.helpers import http as request


@pytest.fixture
def api(make_service: Callable[..., Service]) -> APIGatewayHttpResolver:
    return build_app(make_service("nested"))


def test_start_approve_and_read_a_turn_over_http(api: APIGatewayHttpResolver, session_id: str, ledger: Path) -> None:
    status, turn = request(api, "POST", f"/sessions/{session_id}/turns", {"prompt": "delete the prod-db record"})
    assert (status, turn["status"]) == (201, "waiting")
    [interaction] = turn["interactions"]
    assert set(interaction) >= {
        "requestId",
        "interruptId",
        "name",
        "reason",
        "agentPath",
        "status",
        "response",
        "answeredBy",
        "answeredAt",
        "expiresAt",
    }
    assert set(turn) >= {
        "sessionId",
        "turnId",
        "status",
        "output",
        "interactions",
        "children",
        "createdAt",
        "updatedAt",
    }
    assert request(api, "GET", f"/sessions/{session_id}/interactions", query="status=requested") == (
        200,
        {"interactions": [interaction]},
    )
    path = f"/sessions/{session_id}/turns/{turn['turnId']}/interactions/{interaction['requestId']}"
    status, done = request(api, "POST", path, {"response": {"decision": "approve"}})
    assert (status, done["status"], done["interactions"][0]["answeredBy"]) == (200, "completed", ALICE)
    assert request(api, "GET", f"/sessions/{session_id}/turns/{turn['turnId']}") == (200, done)
    assert executions(ledger) == ["delete prod-db"]


@pytest.mark.parametrize(
    ("body", "raw", "status", "code"),
    [
        ({"prompt": "x", "extra": 1}, None, 422, "validation_failed"),
        ({}, None, 422, "validation_failed"),
        (None, "{not json", 400, "bad_request"),
        ({"prompt": "   "}, None, 422, "validation_failed"),
    ],
    ids=["extra field", "no prompt", "not json", "blank prompt"],
)
def test_a_bad_body_gets_an_error_with_a_code_and_a_message(
    api: APIGatewayHttpResolver, session_id: str, body: Any, raw: str | None, status: int, code: str
) -> None:
    got, error = request(api, "POST", f"/sessions/{session_id}/turns", body, raw=raw)
    assert (got, error["code"]) == (status, code)
    assert "nothing was" in error["message"]


def test_service_errors_map_to_their_http_status(api: APIGatewayHttpResolver, session_id: str) -> None:
    _, turn = request(api, "POST", f"/sessions/{session_id}/turns", {"prompt": "delete"})
    path = f"/sessions/{session_id}/turns/{turn['turnId']}/interactions/{turn['interactions'][0]['requestId']}"
    assert request(api, "POST", path, {"response": {"decision": "approve"}})[0] == 200
    status, conflict = request(api, "POST", path, {"response": {"decision": "deny", "message": "no"}})
    assert (status, conflict["code"]) == (409, "conflict")
    assert request(api, "GET", f"/sessions/{session_id}/turns/{'0' * 32}")[1]["code"] == "not_found"
    other = f"{session_id}-other"
    _, second = request(api, "POST", f"/sessions/{other}/turns", {"prompt": "delete again"})
    status, busy = request(api, "POST", f"/sessions/{other}/turns", {"prompt": "and again"})
    assert (status, busy["code"]) == (409, "turn_busy")
    assert request(api, "POST", f"/sessions/{other}/turns/{second['turnId']}/cancel")[1]["status"] == "canceled"
    late = f"/sessions/{other}/turns/{second['turnId']}/interactions/{second['interactions'][0]['requestId']}"
    status, gone = request(api, "POST", late, {"response": {"decision": "approve"}})
    assert (status, gone["code"]) == (410, "gone")


def test_the_openapi_document_lists_every_route(api: APIGatewayHttpResolver) -> None:
    status, document = request(api, "GET", "/openapi.json")
    assert status == 200
    assert set(document["paths"]) == {
        "/sessions/{sessionId}/turns",
        "/sessions/{sessionId}/turns/{turnId}",
        "/sessions/{sessionId}/turns/{turnId}/conversation",
        "/sessions/{sessionId}/turns/{turnId}/interactions/{requestId}",
        "/sessions/{sessionId}/turns/{turnId}/interactions/{requestId}/dismiss",
        "/sessions/{sessionId}/turns/{turnId}/cancel",
        "/sessions/{sessionId}/interactions",
        "/interactions",
        "/interactions/{requestId}",
        "/sessions/{sessionId}",
        "/sessions/{sessionId}/restore",
        "/audit",
        "/audit/verify",
        "/grants",
        "/grants/{grantId}",
        "/admin/stuck",
        "/admin/sessions/{sessionId}/turns/{turnId}",
        "/admin/sessions/{sessionId}/turns/{turnId}/recover",
        "/admin/sessions/{sessionId}/republish",
    }


def test_an_answer_of_300_kb_is_refused_whole_and_the_question_still_waits(
    api: APIGatewayHttpResolver, session_id: str, ledger: Path
) -> None:
    """Under API Gateway's 10 MB and over the API's own 128 KB: refused before anything is read or
    written (an answer is kept on its question, a 400 KB item, and published whole, a 256 KB event)."""
    _, turn = request(api, "POST", f"/sessions/{session_id}/turns", {"prompt": "delete the prod-db record"})
    [question] = turn["interactions"]
    path = f"/sessions/{session_id}/turns/{turn['turnId']}/interactions/{question['requestId']}"
    edited = {"response": {"decision": "approve", "input": {"name": "x" * 300_000}}}

    status, refused = request(api, "POST", path, edited)

    assert (status, refused["code"]) == (422, "validation_failed")
    assert refused["message"].endswith("bytes, the limit is 131072; nothing was done")
    _, read = request(api, "GET", f"/sessions/{session_id}/turns/{turn['turnId']}")
    assert (read["status"], read["interactions"][0]["status"], executions(ledger)) == ("waiting", "requested", [])


def test_a_turn_whose_output_is_7_mb_replies_well_under_lambdas_6_mb_with_the_output_cut_saying_so(
    make_service: Callable[..., Service], session_id: str
) -> None:
    """Lambda's synchronous reply holds 6 MB: the output is kept (and shown) cut at 64 KB; the whole
    text stays in the turn's snapshot."""

    def says_seven_megabytes(context: Any) -> Agent:
        return Agent(name="writer", model=ScriptedModel([says("y" * 7_000_000)]))

    api = build_app(make_service(says_seven_megabytes))
    status, turn = request(api, "POST", f"/sessions/{session_id}/turns", {"prompt": "write a lot"})

    assert (status, turn["status"]) == (201, "completed")
    assert len(json.dumps(turn).encode()) < 100 * 1024
    assert turn["output"].endswith("[cut at 65536 bytes; the whole text is in the snapshot]")


def test_a_query_parameter_the_route_does_not_take_is_refused_not_ignored(
    api: APIGatewayHttpResolver, session_id: str
) -> None:
    """``?stauts=requested`` would otherwise list every question, as if the filter had been applied."""
    request(api, "POST", f"/sessions/{session_id}/turns", {"prompt": "delete the prod-db record"})
    status, refused = request(api, "GET", f"/sessions/{session_id}/interactions", query="stauts=requested")
    assert (status, refused["code"]) == (422, "validation_failed")
    assert refused["message"] == (
        "query parameter 'stauts' is not one this route takes (it takes: status); nothing was done"
    )
    assert request(api, "GET", f"/sessions/{session_id}/interactions", query="status=requested")[0] == 200


def test_a_turn_of_more_questions_than_one_reply_holds_whole_shows_each_input_as_a_preview(
    make_service: Callable[..., Service], session_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lambda's reply holds 6 MB (a reply holds at most MAX_REPLY_BYTES, 5 MiB; 1 MiB here, so eighty
    questions of 14 KB pass it): each input is shown as a preview saying so; each whole is in the inbox."""
    assert routes.MAX_REPLY_BYTES == 5 * 1024 * 1024
    monkeypatch.setattr(routes, "MAX_REPLY_BYTES", 1024 * 1024)

    def eighty_questions(context: Any) -> Agent:
        uses = [(f"t-{n}", "delete_record", {"name": f"{n:02d}-" + "x" * 14_000}) for n in range(80)]
        return Agent(name="orchestrator", model=ScriptedModel([calls(*uses), says("done")]), tools=[delete_record])

    api = build_app(make_service(eighty_questions))
    status, turn = request(api, "POST", f"/sessions/{session_id}/turns", {"prompt": "delete eighty"})

    assert (status, turn["status"], len(turn["interactions"])) == (201, "waiting", 80)
    assert len(json.dumps(turn).encode()) < 1024 * 1024
    assert all(i["reason"]["input"]["truncated"] is True for i in turn["interactions"])
    _, read = request(api, "GET", f"/sessions/{session_id}/turns/{turn['turnId']}")
    assert len(read["interactions"]) == 80 and len(json.dumps(read).encode()) < 1024 * 1024
    _, page = request(api, "GET", "/interactions", query="limit=1")
    assert page["interactions"][0]["reason"]["input"]["name"].endswith("x" * 100), "whole in the inbox"

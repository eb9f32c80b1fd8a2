"""MCPClient against a real MCP server (tests/mcp_server.py, the official SDK's server) over both
transports: stdio (the client starts the server) and streamable HTTP (a server process on 127.0.0.1).

Each test starts a server process, hence ``slow``. No AWS: the agents run in this process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from resumable import Agent, ScriptedModel
from resumable.runtime.mcp import MCPClient, MCPTool
from tests.agents import approve, calls, says
from tests.factories import executions
from tests.mcp_servers import CALLER_HEADER, RecordsServer, alive, serving_records, stdio_records

pytestmark = pytest.mark.slow


@pytest.fixture
def client(records: RecordsServer) -> Iterator[MCPClient]:
    with records.connect() as connected:
        yield connected


def result_of(tools: list[MCPTool], name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """The toolResult an agent records when its model calls ``name`` with ``tool_input``."""
    agent = Agent(name="ops", model=ScriptedModel([calls(("t-1", name, tool_input)), says("done")]), tools=tools)
    assert agent("go").stop_reason == "end_turn"
    [result] = [b["toolResult"] for m in agent.messages for b in m["content"] if "toolResult" in b]
    return dict(result)


def test_the_servers_tools_are_listed_with_their_names_descriptions_and_input_schemas(client: MCPClient) -> None:
    tools = {t.name: t for t in client.tools()}

    assert set(tools) == {"lookup", "describe", "list_records", "delete_record", "refuse", "wait_forever", "whoami"}
    lookup = tools["lookup"]
    assert lookup.spec["description"] == "Look a database record up."
    schema = lookup.spec["inputSchema"]["json"]
    assert (schema["properties"]["name"]["type"], schema["required"]) == ("string", ["name"])
    assert not any(t.approval for t in tools.values())


def test_a_call_gives_the_model_the_servers_text_as_a_successful_result(client: MCPClient) -> None:
    result = result_of(client.tools(), "lookup", {"name": "prod-db"})

    assert result == {
        "toolUseId": "t-1",
        "status": "success",
        "content": [{"text": "prod-db is a production database"}],
    }


def test_a_tool_that_fails_on_the_server_gives_the_model_an_error_result(client: MCPClient) -> None:
    result = result_of(client.tools(), "refuse", {"reason": "no such record"})

    assert result["status"] == "error"
    assert "no such record" in result["content"][0]["text"]


def test_structured_content_reaches_the_model_as_json_unless_the_text_already_says_it(client: MCPClient) -> None:
    tools = client.tools()

    listed = result_of(tools, "list_records", {})
    described = result_of(tools, "describe", {"name": "prod-db"})

    assert listed["content"] == [{"text": "2 records"}, {"json": {"records": ["a-db", "b-db"]}}]
    [said] = described["content"]
    assert json.loads(said["text"]) == {"name": "prod-db", "kind": "database"}


def test_a_prefix_names_the_tools_apart_and_approval_true_asks_before_every_call(
    client: MCPClient, ledger: Path
) -> None:
    tools = client.tools(prefix="records_", approval=True)
    assert all(t.name.startswith("records_") and t.approval for t in tools)
    agent = Agent(
        name="ops",
        model=ScriptedModel([calls(("t-1", "records_delete_record", {"name": "prod-db"})), says("done")]),
        tools=tools,
    )

    paused = agent("delete prod-db")

    [question] = paused.interrupts
    assert question.reason == {"agent": "ops", "tool": "records_delete_record", "input": {"name": "prod-db"}}
    assert executions(ledger) == []
    assert agent([approve(question.id)]).stop_reason == "end_turn"
    [result] = [b["toolResult"] for m in agent.messages for b in m["content"] if "toolResult" in b]
    assert result["content"][0] == {"text": "deleted prod-db"}
    assert executions(ledger) == ["delete prod-db"]


def test_a_call_without_an_answer_in_time_tells_the_model_its_outcome_is_unknown(records: RecordsServer) -> None:
    with records.connect() as client:
        tools = client.tools()  # (listing is not what is timed here: a busy machine may take its time)

        client.timeout = 0.5  # the call that never answers
        result = result_of(tools, "wait_forever", {})
        client.timeout = 30.0

        assert result["status"] == "error"
        assert (
            "did not answer the call of 'wait_forever' within 0.5 s: whether it ran is unknown"
            in (result["content"][0]["text"])
        )
        assert result_of(tools, "lookup", {"name": "a-db"})["status"] == "success", "the session goes on"


def test_an_http_server_receives_the_clients_headers(records_url: str) -> None:
    with MCPClient.http(records_url, headers={CALLER_HEADER: "alice"}) as client:
        assert result_of(client.tools(), "whoami", {})["content"][0] == {"text": "alice"}


def test_a_server_gone_mid_session_makes_a_call_an_error_that_names_it(ledger: Path) -> None:
    with serving_records(ledger) as url:
        client = MCPClient.http(url)
        client.start()
        tools = client.tools()
    try:
        result = result_of(tools, "delete_record", {"name": "prod-db"})
    finally:
        client.close()

    assert result["status"] == "error"
    assert url in result["content"][0]["text"]
    assert executions(ledger) == []


def test_closing_a_stdio_client_stops_its_server_process(ledger: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    with stdio_records(ledger, pids) as client:
        [pid] = map(int, pids.read_text().split())
        assert alive(pid)
        assert client.connected

    assert not client.connected
    assert not alive(pid)

"""MCP tools through the service, over the embedded AWS, over both transports: an agent factory that
connects an MCP client on every request (as it builds its agents afresh), an approval policy guarding
the server's ``delete_*`` tools, a pause, a rebuild, an answer, and the action run once on the server.

Every request's client is closed when its run ends: ``records.running()`` lists the stdio server
processes still alive, ``mcp_threads()`` the clients still open in this process."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from resumable import Agent, ApprovalPolicy, ScriptedModel
from resumable.runtime.mcp import MCPClient
from resumable.service import AgentContext, Service
from resumable.service.agent_factory import AgentFactory
from resumable.store import DynamoDBStore
from tests.agents import calls, says
from tests.factories import executions
from tests.integration.helpers import APPROVE
from tests.mcp_servers import RecordsServer, mcp_threads

pytestmark = pytest.mark.slow


class Operator:
    """A model that looks prod-db up, then deletes it, then answers with what the deletion's tool result
    said (so the turn's output shows what the model was told)."""

    def converse(self, messages: list[dict[str, Any]], system_prompt: Any, tool_specs: Any) -> dict[str, Any]:
        replies = sum(1 for m in messages if m["role"] == "assistant")
        if replies == 0:
            return calls(("t-1", "lookup", {"name": "prod-db"}))
        if replies == 1:
            return calls(("t-2", "delete_record", {"name": "prod-db"}))
        [result] = [block["toolResult"] for block in messages[-1]["content"]]
        return says(" ".join(c["text"] for c in result["content"] if "text" in c))


def operator(records: RecordsServer, clients: list[MCPClient], **agent: Any) -> AgentFactory:
    """A factory that connects a client of ``records`` (kept in ``clients``) and gives its tools to an
    agent whose policy asks before every ``delete_*`` call; ``agent`` overrides the Agent's arguments."""

    def build(context: AgentContext) -> Agent:
        client = context.enter_context(records.connect())
        clients.append(client)
        arguments = {"model": Operator(), "approval_policy": ApprovalPolicy(require=("delete_*",))} | agent
        return Agent(name="ops", tools=client.tools(), **arguments)

    return build


def assert_all_closed(records: RecordsServer, clients: list[MCPClient]) -> None:
    assert not any(client.connected for client in clients), "a request left its MCP client open"
    assert mcp_threads() == []
    assert records.running() == [], "a request left its stdio MCP server running"


def test_an_mcp_tool_call_the_policy_guards_pauses_then_runs_once_on_the_server_after_a_rebuild_and_approval(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str, ledger: Path, records: RecordsServer
) -> None:
    clients: list[MCPClient] = []
    factory = operator(records, clients)

    started = make_service(factory).start_turn(session_id, "delete the prod-db record")

    assert started.status == "waiting"
    [interaction] = started.interactions
    assert interaction.reason == {"agent": "ops", "tool": "delete_record", "input": {"name": "prod-db"}}
    assert executions(ledger) == []
    assert len(clients) == 1
    assert_all_closed(records, clients)

    done = make_service(factory).submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE)

    assert (done.status, done.output) == ("completed", "deleted prod-db")
    assert executions(ledger) == ["delete prod-db"]
    assert len(clients) == 2, "the approval's request rebuilt the agent and connected a client of its own"
    assert_all_closed(records, clients)
    tree = store.load_tree(session_id, started.turn_id)
    assert tree is not None
    [action] = tree.actions
    assert (action.tool, action.status, action.input) == ("delete_record", "finished", {"name": "prod-db"})

    again = make_service(factory).submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE)

    assert (again.status, again.output) == ("completed", "deleted prod-db")
    assert executions(ledger) == ["delete prod-db"]
    assert_all_closed(records, clients)


def test_a_denied_mcp_tool_call_never_reaches_the_server_and_the_turn_completes(
    make_service: Callable[..., Service], session_id: str, ledger: Path, records: RecordsServer
) -> None:
    clients: list[MCPClient] = []
    factory = operator(records, clients)
    started = make_service(factory).start_turn(session_id, "delete the prod-db record")
    [interaction] = started.interactions

    done = make_service(factory).submit_approval(
        session_id, started.turn_id, interaction.request_id, {"decision": "deny", "message": "not prod"}
    )

    assert (done.status, done.output) == ("completed", "DENIED: not prod. The tool 'delete_record' did not run.")
    assert executions(ledger) == []
    assert_all_closed(records, clients)


def test_the_mcp_client_of_a_run_that_fails_is_closed_too(
    make_service: Callable[..., Service], session_id: str, records: RecordsServer
) -> None:
    clients: list[MCPClient] = []
    factory = operator(records, clients, model=ScriptedModel([]))  # no reply: the model fails

    failed = make_service(factory).start_turn(session_id, "delete the prod-db record")

    assert failed.status == "failed"
    assert len(clients) == 1
    assert_all_closed(records, clients)


class Waiter:
    """A model that calls wait_forever (a tool that never answers), then says what it was told."""

    def converse(self, messages: list[dict[str, Any]], system_prompt: Any, tool_specs: Any) -> dict[str, Any]:
        if not any(m["role"] == "assistant" for m in messages):
            return calls(("t-1", "wait_forever", {}))
        [result] = [block["toolResult"] for block in messages[-1]["content"]]
        return says(" ".join(c["text"] for c in result["content"] if "text" in c))


def test_an_approved_mcp_call_that_never_answers_is_recorded_in_doubt_never_as_done(
    make_service: Callable[..., Service], session_id: str, records: RecordsServer
) -> None:
    def build(context: AgentContext) -> Agent:
        client = context.enter_context(records.connect())
        tools = client.tools()  # (listing is not what is timed here: a busy machine may take its time)
        client.timeout = 0.5  # the approved call that never answers
        return Agent(name="ops", model=Waiter(), tools=tools, approval_policy=ApprovalPolicy(require=("wait_*",)))

    started = make_service(build).start_turn(session_id, "wait")
    [interaction] = started.interactions
    done = make_service(build).submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE)
    assert done.status == "completed"
    assert "outcome of this approved action is UNKNOWN" in (done.output or "")
    [in_doubt] = done.actions_in_doubt
    assert in_doubt.tool == "wait_forever"


def test_an_mcp_server_that_is_down_fails_a_new_turn_saying_so_and_leaves_the_session_free(
    make_service: Callable[..., Service], session_id: str, records: RecordsServer
) -> None:
    with socket.socket() as bound:  # a port nothing serves
        bound.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{bound.getsockname()[1]}/mcp"

        def unreachable(context: AgentContext) -> Agent:
            context.enter_context(MCPClient.http(down, connect_timeout=2))
            raise AssertionError("connected to a port nothing serves")

        failed = make_service(unreachable).start_turn(session_id, "delete the prod-db record")

    assert failed.status == "failed"
    assert "agent factory raised MCPServerError" in (failed.error or "")
    assert "no agent ran" in (failed.error or "")
    again = make_service(operator(records, [])).start_turn(session_id, "delete the prod-db record")
    assert again.status == "waiting", "the failed turn left the session free"


def test_a_resume_whose_factory_fails_waits_with_its_answer_kept_and_recover_finishes_it(
    make_service: Callable[..., Service], session_id: str, ledger: Path, records: RecordsServer
) -> None:
    clients: list[MCPClient] = []
    working = operator(records, clients)
    server_down = [False]

    def factory(context: AgentContext) -> Agent:
        if server_down[0]:
            raise ConnectionError("the records server is down")
        return working(context)

    started = make_service(factory).start_turn(session_id, "delete the prod-db record")
    [interaction] = started.interactions
    server_down[0] = True
    waiting = make_service(factory).submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE)

    assert waiting.status == "waiting"
    assert "the agent factory raised ConnectionError" in (waiting.error or "")
    assert [i.status for i in waiting.interactions] == ["answered"], "the answer is kept"
    assert executions(ledger) == []
    server_down[0] = False
    done = make_service(factory).recover(session_id, started.turn_id)
    assert (done.status, done.output) == ("completed", "deleted prod-db")
    assert executions(ledger) == ["delete prod-db"]
    assert_all_closed(records, clients)

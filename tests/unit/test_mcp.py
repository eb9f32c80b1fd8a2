"""MCP tools without an MCP server: how a result reaches the model, what a listed tool becomes, and the
errors of a client that has no server to talk to (none there, not started, misconfigured)."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from mcp_types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from mcp_types import Tool as ListedTool

from resumable import Agent, ScriptedModel
from resumable.exceptions import MCPServerError
from resumable.runtime.invocation import Invocation
from resumable.runtime.mcp import MCPClient, MCPTool, converse_result
from resumable.runtime.tools import ToolContext
from tests.agents import calls, says
from tests.mcp_servers import mcp_threads

LOOKUP = ListedTool(
    name="lookup",
    description="Look a database record up.",
    input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
)


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A URL on 127.0.0.1 whose port is bound (nobody else takes it) and not listening: refused."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}/mcp"


# -- what the model gets ---------------------------------------------------------------------------------


def test_text_content_is_a_successful_result_of_text_blocks() -> None:
    result = CallToolResult(content=[TextContent(text="one"), TextContent(text="two")])

    assert converse_result("t-1", result) == {
        "toolUseId": "t-1",
        "status": "success",
        "content": [{"text": "one"}, {"text": "two"}],
    }


def test_is_error_makes_an_error_result() -> None:
    result = CallToolResult(content=[TextContent(text="no such record")], is_error=True)

    assert converse_result("t-1", result) == {
        "toolUseId": "t-1",
        "status": "error",
        "content": [{"text": "no such record"}],
    }


def test_structured_content_is_json_after_the_text() -> None:
    result = CallToolResult(content=[TextContent(text="2 records")], structured_content={"records": ["a", "b"]})

    assert converse_result("t-1", result)["content"] == [{"text": "2 records"}, {"json": {"records": ["a", "b"]}}]


def test_structured_content_alone_is_json() -> None:
    result = CallToolResult(content=[], structured_content={"count": 2})

    assert converse_result("t-1", result)["content"] == [{"json": {"count": 2}}]


@pytest.mark.parametrize(
    ("text", "structured"),
    [
        ('{\n  "count": 2\n}', {"count": 2}),  # the JSON, serialised again as text (the spec asks servers to)
        ("deleted a-db", {"result": "deleted a-db"}),  # a plain value, which the SDKs' servers wrap
        ("2", {"result": 2}),
    ],
)
def test_structured_content_a_text_block_already_says_is_not_repeated(text: str, structured: Any) -> None:
    result = CallToolResult(content=[TextContent(text=text)], structured_content=structured)

    assert converse_result("t-1", result)["content"] == [{"text": text}]


def test_no_content_at_all_says_so() -> None:
    assert converse_result("t-1", CallToolResult(content=[]))["content"] == [{"text": "(no output)"}]


def test_resources_are_text_and_binary_content_is_named_not_sent() -> None:
    result = CallToolResult(
        content=[
            EmbeddedResource(resource=TextResourceContents(uri="file:///notes.txt", text="the notes")),
            ResourceLink(uri="file:///big.csv", name="big.csv"),
            ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
        ]
    )

    assert converse_result("t-1", result)["content"] == [
        {"text": "the notes"},
        {"text": "[a link to the resource file:///big.csv (big.csv)]"},
        {"text": "[an image (image/png), not shown]"},
    ]


# -- what a listed tool becomes --------------------------------------------------------------------------


def test_a_listed_tool_keeps_its_name_description_and_input_schema() -> None:
    tool = MCPTool(MCPClient.stdio("unused"), LOOKUP)

    assert tool.spec == {
        "name": "lookup",
        "description": "Look a database record up.",
        "inputSchema": {"json": LOOKUP.input_schema},
    }
    assert (tool.server_name, tool.approval, tool.journals_approved_calls) == ("lookup", False, True)


def test_a_name_a_model_cannot_take_is_made_one_it_can_and_the_server_still_gets_its_own() -> None:
    dotted = ListedTool(name="files.read/v2" + "x" * 70, input_schema={"type": "object"})
    tool = MCPTool(MCPClient.stdio("unused"), dotted, prefix="fs.")
    assert tool.name == ("fs_files_read_v2" + "x" * 70)[:64]
    assert tool.server_name == "files.read/v2" + "x" * 70


def test_a_prefix_renames_the_tool_for_the_model_and_keeps_its_name_on_the_server() -> None:
    tool = MCPTool(MCPClient.stdio("unused"), LOOKUP, prefix="records_", approval=True)

    assert (tool.name, tool.server_name, tool.approval) == ("records_lookup", "lookup", True)


def test_a_tool_listed_without_a_description_is_described_by_its_title_or_name() -> None:
    titled = ListedTool(name="lookup", title="Look up", input_schema={"type": "object"})
    bare = ListedTool(name="lookup", input_schema={"type": "object"})

    assert MCPTool(MCPClient.stdio("unused"), titled).description == "Look up"
    assert MCPTool(MCPClient.stdio("unused"), bare).description == "lookup"


def test_a_call_through_a_client_never_started_tells_the_model_it_did_not_happen() -> None:
    tool = MCPTool(MCPClient.stdio("records-server"), LOOKUP)
    agent = Agent(
        name="ops", model=ScriptedModel([calls(("t-1", "lookup", {"name": "a"})), says("done")]), tools=[tool]
    )

    agent("look a up")

    [result] = [b["toolResult"] for m in agent.messages for b in m["content"] if "toolResult" in b]
    assert result["status"] == "error"
    assert "is not connected, so the call of 'lookup' did not happen" in result["content"][0]["text"]


def test_an_input_that_is_not_an_object_is_refused_without_a_call() -> None:
    tool = MCPTool(MCPClient.stdio("records-server"), LOOKUP)
    agent = Agent(name="ops", model=ScriptedModel([]))
    context = ToolContext(agent, {"toolUseId": "t-1", "name": "lookup", "input": ["a"]}, Invocation())

    result = tool.invoke(["a"], context)

    assert result["status"] == "error"
    assert result["content"] == [{"text": "The input of 'lookup' must be a JSON object; it did not run"}]


# -- no server to talk to --------------------------------------------------------------------------------


def test_a_stdio_server_that_cannot_start_is_an_error_saying_nothing_was_called() -> None:
    client = MCPClient.stdio("/nonexistent/records-server", ["--fast"])

    with pytest.raises(MCPServerError) as raised:
        client.start()

    message = str(raised.value)
    assert message.startswith("the MCP server stdio:/nonexistent/records-server --fast could not be connected")
    assert "FileNotFoundError" in message
    assert "nothing was called" in message
    assert not client.connected
    assert mcp_threads() == []


def test_an_http_server_that_is_down_is_an_error_saying_nothing_was_called(refused_url: str) -> None:
    client = MCPClient.http(refused_url, headers={"authorization": "Bearer secret"})

    with pytest.raises(MCPServerError) as raised:
        client.start()

    message = str(raised.value)
    assert message.startswith(f"the MCP server {refused_url} could not be connected (ConnectError")
    assert "nothing was called" in message
    assert "secret" not in message
    assert mcp_threads() == []


def test_a_server_that_never_answers_the_handshake_is_an_error_after_connect_timeout() -> None:
    silent = MCPClient.stdio(sys.executable, ["-c", "import sys; sys.stdin.read()"], connect_timeout=0.5)

    with pytest.raises(MCPServerError, match=r"did not connect within 0\.5 s: nothing was called"):
        silent.start()

    assert mcp_threads() == []


def test_a_client_started_without_the_mcp_sdk_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # what an environment without resumable[mcp] imports

    with pytest.raises(ModuleNotFoundError, match=r"install resumable\[mcp\].*nothing was started"):
        MCPClient.stdio("records-server").start()

    assert mcp_threads() == []


def test_the_url_a_client_shows_leaves_out_credentials() -> None:
    client = MCPClient.http("https://user:pass@mcp.example.com:8443/mcp?token=secret")

    assert repr(client) == "MCPClient(https://mcp.example.com:8443/mcp)"


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: MCPClient.stdio("server", "--fast"), "as a list of strings"),  # type: ignore[arg-type]
        (lambda: MCPClient.http("127.0.0.1:8000/mcp"), "needs an http:// or https:// URL"),
        (lambda: MCPClient.stdio("server", timeout=0), "timeouts must be positive"),
    ],
)
def test_a_misconfigured_client_is_refused_when_it_is_made(make: Any, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        make()

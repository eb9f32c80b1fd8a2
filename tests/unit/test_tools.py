"""``@tool``: the schema and description it builds, and what the agent does with each kind of tool call.

Behaviour is driven end to end through an Agent and a ScriptedModel; the tool results are read from
``agent.messages``, which is exactly what the model is sent on its next call.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Literal

import pytest

from resumable import Agent, ScriptedModel, ToolContext, tool
from resumable.runtime.tools import FunctionTool
from tests.agents import calls, make_delete_record, says


class RecordingModel(ScriptedModel):
    """A ScriptedModel that keeps a copy of the conversation it was sent on every call."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        super().__init__(replies)
        self.seen: list[list[dict[str, Any]]] = []

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        self.seen.append(copy.deepcopy(messages))
        return super().converse(messages, system_prompt, tool_specs)


def tool_results(agent: Agent) -> list[dict[str, Any]]:
    """Every toolResult block in the agent's conversation, in order."""
    return [
        block["toolResult"]
        for message in agent.messages
        if message["role"] == "user"
        for block in message["content"]
        if "toolResult" in block
    ]


def run_one_call(function_tool: FunctionTool, tool_input: Any) -> tuple[Agent, dict[str, Any]]:
    """Let a scripted model call ``function_tool`` once, then answer; return the agent and the tool result."""
    agent = Agent(
        name="assistant",
        model=ScriptedModel([calls(("t-1", function_tool.name, tool_input)), says("done")]),
        tools=[function_tool],
    )
    result = agent("go")
    assert (result.stop_reason, result.text) == ("end_turn", "done")
    [only] = tool_results(agent)
    return agent, only


def all_keys(schema: Any) -> list[str]:
    """Every key of every object nested anywhere in ``schema``."""
    if isinstance(schema, dict):
        return [key for key, value in schema.items() for key in [key, *all_keys(value)]]
    if isinstance(schema, list):
        return [key for item in schema for key in all_keys(item)]
    return []


# --- the schema and the description -------------------------------------------------------------------------


def test_input_schema_types_and_required_fields_come_from_type_hints() -> None:
    @tool
    def book(room: str, people: int, guests: list[str], hours: int = 1, note: str = "") -> str:
        return "booked"

    assert book.input_schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "room": {"type": "string"},
            "people": {"type": "integer"},
            "guests": {"type": "array", "items": {"type": "string"}},
            "hours": {"type": "integer", "default": 1},
            "note": {"type": "string", "default": ""},
        },
        "required": ["room", "people", "guests"],
    }
    assert book.spec["inputSchema"] == {"json": book.input_schema}


def test_description_comes_from_the_docstring_and_parameter_descriptions_from_args_lines() -> None:
    @tool
    def send(channel: str, text: str, urgent: bool = False) -> str:
        """Post a message to a chat channel.

        Args:
            channel: The channel to post in.
            text (str): What to say.
        """
        return "sent"

    assert send.name == "send"
    assert send.description == "Post a message to a chat channel."
    properties = send.input_schema["properties"]
    assert properties["channel"]["description"] == "The channel to post in."
    assert properties["text"]["description"] == "What to say."
    assert "description" not in properties["urgent"]
    assert send.spec["description"] == "Post a message to a chat channel."


def test_name_and_description_arguments_override_the_function_name_and_docstring() -> None:
    @tool(name="post_message", description="Post to Slack.")
    def send(channel: str) -> str:
        """Something else entirely."""
        return "sent"

    assert (send.spec["name"], send.spec["description"]) == ("post_message", "Post to Slack.")


def test_a_tool_without_docstring_is_described_by_its_name() -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert ping.description == "ping"
    assert ping.input_schema["properties"] == {}


def test_no_title_keys_leak_into_the_schema() -> None:
    @tool
    def search(query: str, limit: int = 10, tags: list[str] | None = None) -> list[str]:
        """Search the index.

        Args:
            query: Words to look for.
            limit: At most this many hits.
            tags: Only hits with these tags.
        """
        return []

    assert "title" not in all_keys(search.input_schema)
    assert all("title" not in prop for prop in search.input_schema["properties"].values())


def _decorated_again(default: Any) -> FunctionTool:
    """The same function decorated again, as a factory that builds its agents per request does."""

    @tool
    def act(name: str, times: Any = default) -> str:
        """Act.

        Args:
            name: What on.
        """
        return name

    return act


def test_a_function_decorated_again_gets_its_own_schema_and_the_same_inputs_still_checked() -> None:
    first, second = _decorated_again(1), _decorated_again(1)
    assert first.input_model is second.input_model, "made once for the same inputs"
    assert first.input_schema == second.input_schema
    first.input_schema["properties"]["name"]["description"] = "changed by a caller"
    assert second.input_schema["properties"]["name"]["description"] == "What on."
    assert _decorated_again(1).input_schema["properties"]["name"]["description"] == "What on."
    assert second.invalid_input({"name": "x", "extra": 1}) is not None
    assert second.invalid_input({"name": "x"}) is None


@pytest.mark.parametrize(
    "defaults",
    [
        (1, True),
        (1, 1.0),
        (0.0, -0.0),
        ([1], [2]),
        ((1,), (True,)),
        (frozenset({1}), frozenset({True})),
        (Decimal("1.0"), Decimal("1.00")),
        (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))),
    ],
    ids=repr,
)
def test_tools_whose_defaults_differ_keep_their_own_defaults(defaults: tuple[Any, Any]) -> None:
    """Defaults that are equal but not the same (1, 1.0 and True; -0.0; tuples, sets and Decimals of
    them; one instant in two zones), and defaults that cannot be keys (lists), alike."""
    one, other = (_decorated_again(d) for d in defaults)
    for made, default in ((one, defaults[0]), (other, defaults[1])):
        validated = made.input_model.model_validate({"name": "x"})
        assert repr(validated.times) == repr(default) and type(validated.times) is type(default)


def test_tools_whose_literal_choices_differ_in_order_keep_their_own_order() -> None:
    def decorated(choices: Any) -> FunctionTool:
        def pick(which: str) -> str:
            return which

        pick.__annotations__["which"] = choices  # (as a closure's annotation, evaluated when it is made)
        return tool(pick)

    assert decorated(Literal["a", "b"]).input_schema["properties"]["which"]["enum"] == ["a", "b"]
    assert decorated(Literal["b", "a"]).input_schema["properties"]["which"]["enum"] == ["b", "a"]


def test_a_returns_section_after_args_stays_out_of_the_description() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: The first number.
            b: The second number.

        Returns:
            The sum of a and b.
        """
        return a + b

    assert add.description == "Add two numbers."


def test_a_multi_line_argument_description_is_kept_whole() -> None:
    @tool
    def add(a: int) -> int:
        """Add one.

        Args:
            a: The number to add one to,
                which may be negative.
        """
        return a + 1

    description = add.input_schema["properties"]["a"]["description"]
    assert description.startswith("The number to add one to,")
    assert description.endswith("which may be negative.")


# --- declaration errors ---------------------------------------------------------------------------------------


def test_context_true_without_a_context_parameter_is_a_value_error_saying_what_to_do() -> None:
    def lookup(key: str) -> str:
        return key

    with pytest.raises(ValueError, match="context=True") as caught:
        tool(context=True)(lookup)

    message = str(caught.value)
    assert "'lookup'" in message
    assert "no 'context' parameter" in message
    assert "add `context: ToolContext` to its signature or drop context=True" in message


@pytest.mark.parametrize(
    "function",
    [
        pytest.param(lambda *items: None, id="*args"),
        pytest.param(lambda **options: None, id="**kwargs"),
    ],
)
def test_star_args_and_star_star_kwargs_are_rejected(function: Callable[..., Any]) -> None:
    with pytest.raises(ValueError, match=r"cannot take \*args or \*\*kwargs: name every input"):
        tool(name="variadic")(function)


def test_a_context_tool_gets_its_tool_context_and_context_is_not_in_its_schema() -> None:
    seen: list[tuple[str, str, int]] = []

    @tool(context=True)
    def whoami(times: int, context: ToolContext) -> str:
        seen.append((context.agent.name, context.tool_use_id, times))
        return "ok"

    assert whoami.input_schema["properties"] == {"times": {"type": "integer"}}
    assert whoami.input_schema["required"] == ["times"]

    _, result = run_one_call(whoami, {"times": 3})

    assert result["status"] == "success"
    assert seen == [("assistant", "t-1", 3)]


# --- invalid input ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool_input", "problem"),
    [
        pytest.param({"name": "a", "count": "many"}, "count: Input should be a valid integer", id="wrong-type"),
        pytest.param({"name": "a"}, "count: Field required", id="missing-field"),
        pytest.param({"name": "a", "count": 1, "colour": "red"}, "colour: Extra inputs are not permitted", id="extra"),
        pytest.param("a, 1", "input: Input should be a valid dictionary", id="not-an-object"),
    ],
)
def test_invalid_input_gives_an_error_result_and_the_function_does_not_run(tool_input: Any, problem: str) -> None:
    runs: list[tuple[str, int]] = []

    @tool
    def record(name: str, count: int) -> str:
        runs.append((name, count))
        return "recorded"

    _, result = run_one_call(record, tool_input)

    assert runs == []
    assert result["toolUseId"] == "t-1"
    assert result["status"] == "error"
    [content] = result["content"]
    assert content["text"].startswith("Invalid input for tool 'record', it did not run: ")
    assert problem in content["text"]


def test_valid_input_runs_the_function_once_with_the_validated_arguments() -> None:
    runs: list[tuple[str, int]] = []

    @tool
    def record(name: str, count: int = 5) -> str:
        runs.append((name, count))
        return "recorded"

    _, result = run_one_call(record, {"name": "a"})

    assert runs == [("a", 5)]
    assert result == {"toolUseId": "t-1", "status": "success", "content": [{"text": "recorded"}]}


def test_an_approval_tool_with_invalid_input_returns_the_error_without_raising_an_interrupt() -> None:
    executions: list[str] = []
    agent = Agent(
        name="db_admin",
        model=ScriptedModel([calls(("w-1", "delete_record", {"nam": "prod-db"})), says("I could not delete it.")]),
        tools=[make_delete_record(executions)],
    )

    result = agent("delete prod-db")

    assert result.stop_reason == "end_turn"
    assert result.interrupts == []
    assert not agent.interrupt_state.activated
    assert agent.interrupt_state.pending == {}
    assert executions == []
    [error] = tool_results(agent)
    assert error["status"] == "error"
    assert error["content"][0]["text"].startswith("Invalid input for tool 'delete_record', it did not run: ")


# --- what a tool returns ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "content"),
    [
        pytest.param({"total": 3, "items": ["a"]}, {"json": {"total": 3, "items": ["a"]}}, id="dict-is-json"),
        pytest.param([1, 2], {"json": [1, 2]}, id="list-is-json"),
        pytest.param("three items", {"text": "three items"}, id="str-is-text"),
        pytest.param(3, {"text": "3"}, id="int-is-text"),
        pytest.param(None, {"text": "(no output)"}, id="none-says-no-output"),
        pytest.param("", {"text": "(no output)"}, id="empty-says-no-output"),
    ],
)
def test_the_return_value_becomes_json_or_text_content(output: Any, content: dict[str, Any]) -> None:
    @tool
    def produce() -> Any:
        return output

    _, result = run_one_call(produce, {})

    assert result == {"toolUseId": "t-1", "status": "success", "content": [content]}


def test_a_tool_that_raises_gives_an_error_result_and_the_model_sees_it_and_the_turn_continues() -> None:
    @tool
    def save(path: str) -> str:
        raise OSError(f"disk full writing {path}")

    model = RecordingModel([calls(("t-1", "save", {"path": "/tmp/x"})), says("The disk is full.")])
    agent = Agent(name="assistant", model=model, tools=[save])

    result = agent("save it")

    assert (result.stop_reason, result.text) == ("end_turn", "The disk is full.")
    expected = {
        "toolUseId": "t-1",
        "status": "error",
        "content": [{"text": "Error: OSError: disk full writing /tmp/x"}],
    }
    assert tool_results(agent) == [expected]
    assert len(model.seen) == 2
    assert model.seen[1][-1] == {"role": "user", "content": [{"toolResult": expected}]}


def test_a_tool_that_raises_does_not_stop_the_other_calls_of_the_same_step() -> None:
    ran: list[str] = []

    @tool
    def fail() -> str:
        raise RuntimeError("boom")

    @tool
    def work() -> str:
        ran.append("work")
        return "worked"

    agent = Agent(
        name="assistant",
        model=ScriptedModel([calls(("t-1", "fail", {}), ("t-2", "work", {})), says("done")]),
        tools=[fail, work],
    )

    agent("go")

    assert ran == ["work"]
    assert [(r["toolUseId"], r["status"]) for r in tool_results(agent)] == [("t-1", "error"), ("t-2", "success")]


def test_a_call_to_an_unknown_tool_gives_an_error_result_listing_the_available_tools() -> None:
    @tool
    def beta() -> str:
        return "b"

    @tool
    def alpha() -> str:
        return "a"

    model = RecordingModel([calls(("t-1", "delete_everything", {"now": True})), says("I cannot do that.")])
    agent = Agent(name="assistant", model=model, tools=[beta, alpha])

    result = agent("delete everything")

    assert (result.stop_reason, result.text) == ("end_turn", "I cannot do that.")
    expected = {
        "toolUseId": "t-1",
        "status": "error",
        "content": [{"text": "Unknown tool 'delete_everything'; available tools: ['alpha', 'beta']"}],
    }
    assert tool_results(agent) == [expected]
    assert model.seen[1][-1] == {"role": "user", "content": [{"toolResult": expected}]}

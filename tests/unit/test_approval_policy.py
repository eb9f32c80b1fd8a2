"""Approval for tools you did not write (an agent's policy, the deployment's default), its precedence,
a rebuilt agent with another policy, and approving with an edited input."""

from __future__ import annotations

from typing import Any

import pytest

from resumable import Agent, ApprovalPolicy, Invocation, ScriptedModel, Tool, ToolContext, tool
from resumable.runtime.tools import tool_result
from tests.agents import approve, calls, says


class ThirdPartyTool(Tool):
    """A tool from elsewhere: no @tool, no approval declared."""

    def __init__(self, name: str, ran: list[Any]) -> None:
        self.name, self.description, self.ran = name, f"the {name} tool", ran
        self.input_schema = {"type": "object", "properties": {"table": {"type": "string"}}, "required": ["table"]}

    def invoke(self, tool_input: Any, context: ToolContext) -> dict[str, Any]:
        self.ran.append((self.name, tool_input))
        return tool_result(context.tool_use_id, f"{self.name} done")


def agent(tools: list[Tool], policy: ApprovalPolicy | None = None, name: str = "ops") -> Agent:
    return Agent(
        name=name,
        model=ScriptedModel([calls(("t-1", tools[0].name, {"table": "users"})), says("done")]),
        tools=tools,
        approval_policy=policy,
    )


def run(built: Agent, prompt: Any, default: ApprovalPolicy | None = None) -> Any:
    return built.invoke(prompt, Invocation(agent_path=(built.name,), default_policy=default))


@pytest.mark.parametrize(
    ("declared", "policy", "default", "asks"),
    [
        (False, None, None, False),
        (False, ApprovalPolicy(require=("drop_*",)), None, True),
        (False, ApprovalPolicy(require=("drop_*",), exempt=("drop_table",)), None, False),
        (False, None, ApprovalPolicy(require=("drop_*",)), True),
        (False, ApprovalPolicy(exempt=("drop_*",)), ApprovalPolicy(require=("drop_*",)), False),
        (False, ApprovalPolicy(require=("other",)), ApprovalPolicy(require=("drop_*",)), True),
        (True, ApprovalPolicy(exempt=("*",)), None, True),
    ],
    ids=[
        "nothing says so",
        "the agent's policy requires it",
        "the agent's policy exempts it",
        "the deployment's default requires it",
        "the agent's exemption wins over the default",
        "the default decides what the agent's policy does not",
        "a declaration cannot be exempted",
    ],
)
def test_who_decides_that_a_call_needs_approval(
    declared: bool, policy: ApprovalPolicy | None, default: ApprovalPolicy | None, asks: bool
) -> None:
    ran: list[Any] = []
    drop = ThirdPartyTool("drop_table", ran)
    drop.approval = declared
    result = run(agent([drop], policy), "drop it", default)
    if asks:
        assert result.stop_reason == "interrupt" and ran == []
        [question] = result.interrupts
        assert question.name == "approval"
        assert question.reason == {"agent": "ops", "tool": "drop_table", "input": {"table": "users"}}
    else:
        assert result.stop_reason == "end_turn" and ran == [("drop_table", {"table": "users"})]


def test_a_third_party_tool_under_a_policy_runs_once_approved() -> None:
    ran: list[Any] = []
    built = agent([ThirdPartyTool("drop_table", ran)], ApprovalPolicy(require=("drop_*",)))
    [question] = run(built, "drop it").interrupts
    done = run(built, [approve(question.id)])
    assert done.stop_reason == "end_turn"
    assert ran == [("drop_table", {"table": "users"})]


def test_a_rebuilt_agent_whose_policy_no_longer_requires_approval_still_honours_the_asked_call() -> None:
    ran: list[Any] = []
    asked = agent([ThirdPartyTool("drop_table", ran)], ApprovalPolicy(require=("drop_*",)))
    [question] = run(asked, "drop it").interrupts
    stored = asked.snapshot()

    rebuilt = agent([ThirdPartyTool("drop_table", ran)], ApprovalPolicy(exempt=("drop_*",)))
    rebuilt.restore(stored)
    denied = run(rebuilt, [{"interruptResponse": {"interruptId": question.id, "response": {"decision": "deny"}}}])
    assert denied.stop_reason == "end_turn"
    assert ran == [], "the call was asked about and denied: a new policy does not run it"


def test_a_rebuilt_agent_resumed_with_other_answers_still_waits_for_the_asked_approval() -> None:
    ran: list[Any] = []

    @tool(context=True)
    def confirm(context: ToolContext) -> str:
        """Ask for a confirmation."""
        return str(context.interrupt("confirm", "sure?"))

    def build(policy: ApprovalPolicy) -> Agent:
        model = ScriptedModel([calls(("t-1", "drop_table", {"table": "users"}), ("t-2", "confirm", {})), says("done")])
        return Agent(
            name="ops", model=model, tools=[ThirdPartyTool("drop_table", ran), confirm], approval_policy=policy
        )

    asked = build(ApprovalPolicy(require=("drop_*",)))
    questions = {i.name: i for i in run(asked, "drop it").interrupts}
    assert set(questions) == {"approval", "confirm"}
    rebuilt = build(ApprovalPolicy(exempt=("drop_*",)))
    rebuilt.restore(asked.snapshot())
    answer = [{"interruptResponse": {"interruptId": questions["confirm"].id, "response": "yes"}}]
    still = run(rebuilt, answer)
    assert still.stop_reason == "interrupt"
    assert [i.id for i in still.interrupts] == [questions["approval"].id]
    assert ran == [], "the call waiting for approval did not run under the new policy"


def _editable_delete(ran: list[str], edits: bool = True) -> Any:
    @tool(approval=True, edits=edits)
    def delete_record(name: str) -> str:
        """Delete a database record.

        Args:
            name: The record to delete.
        """
        ran.append(name)
        return f"deleted {name}"

    return delete_record


def _edit(interrupt_id: str, edited: Any) -> list[dict[str, Any]]:
    response = {"decision": "approve", "input": edited}
    return [{"interruptResponse": {"interruptId": interrupt_id, "response": response}}]


def test_an_edited_approval_runs_the_tool_once_with_the_edited_input_and_tells_the_model() -> None:
    ran: list[str] = []
    model = ScriptedModel([calls(("t-1", "delete_record", {"name": "prod-db"})), says("done")])
    built = Agent(name="db_admin", model=model, tools=[_editable_delete(ran)])
    [question] = run(built, "delete prod-db").interrupts
    assert question.reason["editable"] is True
    assert question.reason["inputSchema"]["required"] == ["name"]
    done = run(built, _edit(question.id, {"name": "prod-db-replica"}))
    assert done.stop_reason == "end_turn"
    assert ran == ["prod-db-replica"]
    [result] = [b["toolResult"] for m in built.messages for b in m["content"] if "toolResult" in b]
    assert result["status"] == "success"
    assert result["content"][0]["text"] == (
        'A person edited this call\'s input before approving it: approved with {"name": "prod-db-replica"} '
        'instead of {"name": "prod-db"}.'
    )
    assert result["content"][1] == {"text": "deleted prod-db-replica"}


def test_an_edit_a_tool_does_not_allow_does_not_run_it() -> None:
    ran: list[str] = []
    model = ScriptedModel([calls(("t-1", "delete_record", {"name": "prod-db"})), says("done")])
    built = Agent(name="db_admin", model=model, tools=[_editable_delete(ran, edits=False)])
    [question] = run(built, "delete prod-db").interrupts
    assert "editable" not in question.reason
    run(built, _edit(question.id, {"name": "prod-db-replica"}))
    assert ran == []


def test_an_edit_policy_lets_a_third_party_tools_input_be_edited() -> None:
    ran: list[Any] = []
    policy = ApprovalPolicy(require=("drop_*",), edits=("drop_*",))
    built = agent([ThirdPartyTool("drop_table", ran)], policy)
    [question] = run(built, "drop it").interrupts
    assert question.reason["editable"] is True
    run(built, _edit(question.id, {"table": "users_tmp"}))
    assert ran == [("drop_table", {"table": "users_tmp"})]


def test_a_policy_says_what_is_wrong_with_its_patterns() -> None:
    with pytest.raises(ValueError, match="tuple of non-empty strings"):
        ApprovalPolicy(require="delete_*")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="add approval=True"):
        tool(edits=True)


def test_a_policy_that_newly_guards_a_sub_agent_call_already_paused_inside_lets_it_go_on() -> None:
    """The sub-agent asked its own question before the policy changed: answering it resumes the
    sub-agent where it paused (no new question, nothing run twice)."""
    ran: list[str] = []

    def build(policy: ApprovalPolicy | None) -> Agent:
        worker = Agent(
            name="db_admin",
            model=ScriptedModel([calls(("w-1", "delete_record", {"name": "prod-db"})), says("deleted")]),
            tools=[_editable_delete(ran, edits=False)],
        )
        return Agent(
            name="orchestrator",
            model=ScriptedModel([calls(("o-1", "db_admin", {"prompt": "delete"})), says("done")]),
            tools=[worker.as_tool()],
            approval_policy=policy,
        )

    first = build(None)
    [question] = run(first, "delete").interrupts
    rebuilt = build(ApprovalPolicy(require=("db_admin",)))
    rebuilt.restore(first.snapshot())
    done = run(rebuilt, [approve(question.id)])
    assert (done.stop_reason, ran) == ("end_turn", ["prod-db"])


@pytest.mark.parametrize(
    ("value", "schema", "said"),
    [
        (
            {"when": "next tuesday"},
            {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}},
            "date-time",
        ),
        ({"t": "x"}, {"$ref": "#/$defs/Missing"}, "not inside it"),
        ({"t": "x"}, {"$ref": "https://example.invalid/schema.json"}, "not inside it"),
        ({"t": "x"}, {"type": "nonsense"}, "not valid"),
        ({"t": "x"}, None, "no input schema"),
    ],
    ids=["format", "a $ref that resolves nowhere", "a remote $ref (never fetched)", "an invalid schema", "none"],
)
def test_an_edit_is_checked_against_the_schema_without_fetching_anything_and_says_why_not(
    value: Any, schema: Any, said: str
) -> None:
    from resumable.runtime.schema import schema_problem

    problem = schema_problem(value, schema)
    assert problem is not None and said in problem

"""Hooks: observe model and tool calls, change a tool's input, refuse a call, pause with an interrupt;
the approval policy is one of them; hooks are rebuilt with the agents, never stored."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from resumable import Agent, ApprovalPolicy, ScriptedModel, tool
from resumable.runtime.hooks import (
    AfterModelCall,
    AfterToolCall,
    BeforeModelCall,
    BeforeToolCall,
    Hook,
    TurnEnded,
    TurnPaused,
)
from resumable.runtime.interrupts import tool_interrupt_id
from resumable.runtime.invocation import Invocation
from tests.agents import RememberingJournal, approve, calls, says


class Recorder(Hook):
    """Every event it sees, as (event, detail)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.lock = threading.Lock()

    def _add(self, kind: str, detail: Any) -> None:
        with self.lock:
            self.seen.append((kind, detail))

    def before_model_call(self, event: BeforeModelCall) -> None:
        self._add("before_model", len(event.messages))

    def after_model_call(self, event: AfterModelCall) -> None:
        self._add("after_model", event.message["content"][0].get("text", "toolUse"))

    def before_tool_call(self, event: BeforeToolCall) -> None:
        self._add("before_tool", (event.tool.name, event.tool_input))

    def after_tool_call(self, event: AfterToolCall) -> None:
        self._add("after_tool", (event.tool.name, event.refused, event.result["status"]))

    def turn_paused(self, event: TurnPaused) -> None:
        self._add("paused", [i.name for i in event.interrupts])

    def turn_ended(self, event: TurnEnded) -> None:
        self._add("ended", event.result.stop_reason)


def recording_tools(runs: list[Any]) -> list[Any]:
    @tool
    def transfer(amount: int, to: str = "savings") -> str:
        """Move money."""
        runs.append({"amount": amount, "to": to})
        return f"moved {amount} to {to}"

    return [transfer]


def agent_with(hooks: list[Hook], runs: list[Any], amount: int = 5, **kwargs: Any) -> Agent:
    return Agent(
        name="banker",
        model=ScriptedModel([calls(("t-1", "transfer", {"amount": amount})), says("done")]),
        tools=recording_tools(runs),
        hooks=hooks,
        **kwargs,
    )


def test_hooks_see_every_model_call_tool_call_and_the_turns_end_in_order() -> None:
    recorder, runs = Recorder(), []
    agent_with([recorder], runs)("move 5")
    assert recorder.seen == [
        ("before_model", 1),
        ("after_model", "toolUse"),
        ("before_tool", ("transfer", {"amount": 5})),
        ("after_tool", ("transfer", False, "success")),
        ("before_model", 3),
        ("after_model", "done"),
        ("ended", "end_turn"),
    ]


class Capping(Hook):
    def before_tool_call(self, event: BeforeToolCall) -> None:
        if event.tool_input.get("amount", 0) > 100:
            event.tool_input = {**event.tool_input, "amount": 100}
            event.notes.append({"text": "The amount was capped at 100."})


class Refusing(Hook):
    def before_tool_call(self, event: BeforeToolCall) -> None:
        if event.tool_input.get("to", "savings") == "savings":
            event.refuse("transfers to savings are closed today")


def test_a_hook_changes_a_tools_input_and_the_model_is_told_through_its_notes() -> None:
    runs: list[Any] = []
    agent = agent_with([Capping()], runs, amount=500)
    agent("move 500")
    assert runs == [{"amount": 100, "to": "savings"}]
    result = agent.messages[2]["content"][0]["toolResult"]
    assert [c["text"] for c in result["content"]] == ["The amount was capped at 100.", "moved 100 to savings"]


def test_a_refused_call_does_not_run_the_model_is_told_why_and_later_hooks_are_not_asked() -> None:
    runs: list[Any] = []
    recorder = Recorder()
    agent = agent_with([Refusing(), recorder], runs)
    agent("move 5")
    assert runs == []
    result = agent.messages[2]["content"][0]["toolResult"]
    assert (result["status"], result["content"][0]["text"]) == ("error", "transfers to savings are closed today")
    assert ("before_tool", ("transfer", {"amount": 5})) not in recorder.seen
    assert ("after_tool", ("transfer", True, "error")) in recorder.seen


@pytest.mark.parametrize("message", ["", "  ", None])
def test_a_refusal_needs_a_message_for_the_model(message: Any) -> None:
    class Silent(Hook):
        def before_tool_call(self, event: BeforeToolCall) -> None:
            event.refuse(message)

    runs: list[Any] = []
    agent = agent_with([Silent()], runs)
    agent("move 5")
    result = agent.messages[2]["content"][0]["toolResult"]
    assert runs == []
    assert "refuse() needs the message" in result["content"][0]["text"]


class FourEyes(Hook):
    """The approval policy written as an application hook: transfers over 100 need a second person;
    an approved one is an approved action (journaled)."""

    def before_tool_call(self, event: BeforeToolCall) -> None:
        if event.tool.name != "transfer" or event.tool_input["amount"] <= 100:
            return
        answer = event.interrupt("four_eyes", {"amount": event.tool_input["amount"]})
        if answer != "yes":
            event.refuse(f"A second person said no: {answer}")
            return
        event.approved = True


def test_an_approval_policy_written_as_a_hook_pauses_resumes_after_a_rebuild_and_journals_the_call() -> None:
    runs: list[Any] = []
    journal = RememberingJournal()

    def invocation() -> Invocation:
        return Invocation(agent_path=("banker",), journal=journal)

    agent = agent_with([FourEyes()], runs, amount=500)
    paused = agent.invoke("move 500", invocation())
    [interrupt] = paused.interrupts
    assert (interrupt.name, interrupt.reason, runs) == ("four_eyes", {"amount": 500}, [])
    rebuilt = agent_with([FourEyes()], runs, amount=500)
    rebuilt.restore(json.loads(json.dumps(agent.snapshot())))
    answer = [{"interruptResponse": {"interruptId": interrupt.id, "response": "yes"}}]
    assert rebuilt.invoke(answer, invocation()).text == "done"
    assert runs == [{"amount": 500, "to": "savings"}]
    assert list(journal.results) == [tool_interrupt_id("t-1", "approval", 1)], "journaled under the call's key"


def test_a_hook_that_says_no_through_its_interrupt_runs_nothing() -> None:
    runs: list[Any] = []
    agent = agent_with([FourEyes()], runs, amount=500)
    [interrupt] = agent("move 500").interrupts
    agent([{"interruptResponse": {"interruptId": interrupt.id, "response": "no way"}}])
    assert runs == []
    assert "A second person said no: no way" in json.dumps(agent.messages[2])


def test_the_person_approves_the_input_the_agents_hooks_left() -> None:
    """The approval policy runs after the agent's own hooks: a person sees the capped amount."""
    runs: list[Any] = []
    agent = agent_with([Capping()], runs, amount=500, approval_policy=ApprovalPolicy(require=("transfer",)))
    [interrupt] = agent("move 500").interrupts
    assert interrupt.reason["input"] == {"amount": 100}
    agent([approve(interrupt.id)])
    assert runs == [{"amount": 100, "to": "savings"}]


def test_hooks_are_told_of_a_pause_and_are_never_stored() -> None:
    recorder, runs = Recorder(), []
    agent = agent_with([recorder], runs, approval_policy=ApprovalPolicy(require=("transfer",)))
    agent("move 5")
    assert recorder.seen[-1] == ("paused", ["approval"])
    assert set(agent.snapshot()) == {
        "schema_version",
        "agent",
        "messages",
        "interrupt_state",
        "cycle",
        "dropped_messages",
    }


def test_something_that_is_not_a_hook_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match=r"hooks subclass resumable\.runtime\.hooks\.Hook"):
        Agent(name="a", model=ScriptedModel([]), hooks=[lambda event: None])  # type: ignore[list-item]


class CappingAt(Hook):
    def __init__(self, cap: int) -> None:
        self.cap = cap

    def before_tool_call(self, event: BeforeToolCall) -> None:
        event.tool_input = {**event.tool_input, "amount": min(event.tool_input["amount"], self.cap)}


def test_an_approved_call_whose_input_changed_since_the_person_saw_it_does_not_run() -> None:
    """A deployment between the question and the answer changed a hook: what the person approved is
    not what would run."""
    runs: list[Any] = []
    policy = ApprovalPolicy(require=("transfer",))
    agent = agent_with([CappingAt(100)], runs, amount=500, approval_policy=policy)
    [interrupt] = agent("move 500").interrupts
    assert interrupt.reason["input"] == {"amount": 100}
    redeployed = agent_with([CappingAt(1000)], runs, amount=500, approval_policy=policy)
    redeployed.restore(json.loads(json.dumps(agent.snapshot())))
    redeployed([approve(interrupt.id)])
    assert runs == []
    result = redeployed.messages[2]["content"][0]["toolResult"]
    assert result["status"] == "error"
    assert "changed since a person was asked to approve it" in result["content"][0]["text"]


@pytest.mark.parametrize("name", ["approval", "resumable.checkpoint"])
def test_a_hook_cannot_ask_under_the_approval_policys_or_the_checkpoints_name(name: str) -> None:
    class Impostor(Hook):
        def before_tool_call(self, event: BeforeToolCall) -> None:
            event.interrupt(name, {"question": "Spend today's budget?"})

    runs: list[Any] = []
    agent = agent_with([Impostor()], runs)
    result = agent("move 5")
    assert result.stop_reason == "end_turn", "nobody was asked"
    assert runs == []
    assert "cannot be named" in json.dumps(agent.messages[2])


class Broken(Hook):
    def after_tool_call(self, event: AfterToolCall) -> None:
        raise KeyError("dimension")

    def turn_paused(self, event: TurnPaused) -> None:
        raise RuntimeError("the dashboard is down")

    def after_model_call(self, event: AfterModelCall) -> None:
        raise RuntimeError("the log shipper is down")


def test_a_hook_that_raises_after_a_call_ran_leaves_its_result_as_it_was() -> None:
    runs: list[Any] = []
    journal = RememberingJournal()
    agent = agent_with([Broken()], runs, approval_policy=ApprovalPolicy(require=("transfer",)))
    [interrupt] = agent.invoke("move 5", Invocation(agent_path=("banker",), journal=journal)).interrupts
    done = agent.invoke([approve(interrupt.id)], Invocation(agent_path=("banker",), journal=journal))
    assert done.text == "done"
    assert runs == [{"amount": 5, "to": "savings"}]
    result = agent.messages[2]["content"][0]["toolResult"]
    assert (result["status"], result["content"][0]["text"]) == ("success", "moved 5 to savings")


def test_a_sub_agents_hook_that_raises_on_its_pause_loses_no_question() -> None:
    runs: list[Any] = []
    banker = agent_with([Broken()], runs, approval_policy=ApprovalPolicy(require=("transfer",)))
    orchestrator = Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "banker", {"prompt": "move 5"})), says("ok")]),
        tools=[banker.as_tool()],
    )
    [interrupt] = orchestrator("move 5").interrupts
    assert interrupt.name == "approval"
    assert orchestrator([approve(interrupt.id)]).text == "ok"
    assert runs == [{"amount": 5, "to": "savings"}]

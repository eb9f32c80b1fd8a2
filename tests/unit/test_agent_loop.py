"""The agent loop: stop reasons, the stop signal, deterministic ids, sessions and bad input (behaviour 10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from resumable import Agent, FileSession, ScriptedModel, ToolContext, tool
from resumable.exceptions import (
    InvalidInvocationError,
    LeaseLostError,
    ModelError,
    ScriptExhaustedError,
    SnapshotError,
    UnknownInterruptError,
)
from resumable.runtime.interrupts import CHECKPOINT_INTERRUPT, CONTINUE, tool_interrupt_id
from resumable.runtime.invocation import Invocation
from tests.agents import approve, build_orchestrator, build_worker, calls, says


def transfer_agent(received: list[Any]) -> Agent:
    @tool(context=True)
    def transfer(amount: int, context: ToolContext) -> str:
        """Move money."""
        answer = context.interrupt("confirm_transfer", reason={"amount": amount})
        received.append(answer)
        return f"moved {amount}"

    return Agent(
        name="bank",
        model=ScriptedModel([calls(("t-1", "transfer", {"amount": 5})), says("moved")]),
        tools=[transfer],
    )


def test_context_interrupt_raises_first_and_returns_the_answer_on_resume() -> None:
    received: list[Any] = []
    agent = transfer_agent(received)
    paused = agent("move 5")
    assert paused.stop_reason == "interrupt"
    [interrupt] = paused.interrupts
    assert (interrupt.name, interrupt.reason) == ("confirm_transfer", {"amount": 5})
    assert received == []
    done = agent([{"interruptResponse": {"interruptId": interrupt.id, "response": {"ok": True}}}])
    assert (done.stop_reason, done.text) == ("end_turn", "moved")
    assert received == [{"ok": True}]


def test_the_same_pause_always_gets_the_same_id() -> None:
    first = transfer_agent([])("move 5").interrupts[0].id
    second = transfer_agent([])("move 5").interrupts[0].id
    assert first == second == tool_interrupt_id("t-1", "confirm_transfer", 1)
    assert tool_interrupt_id("t-1", "other", 1) != first
    assert tool_interrupt_id("t-2", "confirm_transfer", 1) != first
    assert tool_interrupt_id("t-1", "confirm_transfer", 2) != first
    assert tool_interrupt_id("t-1", "confirm_transfer") != first


def test_the_loop_stops_at_the_next_step_boundary_when_the_stop_signal_is_set() -> None:
    stop = {"now": False}
    ran: list[str] = []

    @tool
    def step(n: int) -> str:
        """One step."""
        ran.append(f"step {n}")
        stop["now"] = True
        return "ok"

    agent = Agent(
        name="worker",
        model=ScriptedModel([calls(("s-1", "step", {"n": 1})), calls(("s-2", "step", {"n": 2})), says("done")]),
        tools=[step],
    )
    result = agent("go", stop=lambda: stop["now"])
    assert result.stop_reason == "canceled"
    assert ran == ["step 1"]
    assert agent.messages[-1]["role"] == "user"


def test_the_stop_signal_reaches_sub_agents() -> None:
    stop = {"now": False}
    ran: list[str] = []

    @tool
    def step(n: int) -> str:
        """One step."""
        ran.append(f"step {n}")
        stop["now"] = True
        return "ok"

    worker = Agent(
        name="worker",
        model=ScriptedModel([calls(("s-1", "step", {"n": 1})), calls(("s-2", "step", {"n": 2})), says("done")]),
        tools=[step],
    )
    orchestrator = Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "worker", {"prompt": "go"})), says("done")]),
        tools=[worker.as_tool()],
    )
    assert orchestrator("go", stop=lambda: stop["now"]).stop_reason == "canceled"
    assert ran == ["step 1"]
    [result] = [b["toolResult"] for b in orchestrator.messages[-1]["content"]]
    assert result["status"] == "error"
    assert "canceled" in result["content"][0]["text"]


def test_a_canceled_resume_does_not_run_the_paused_tool() -> None:
    runs: list[str] = []
    orchestrator = build_orchestrator(runs)
    [interrupt] = orchestrator("go").interrupts
    assert orchestrator([approve(interrupt.id)], stop=lambda: True).stop_reason == "canceled"
    assert runs == []
    assert not orchestrator.interrupt_state.activated


def test_the_step_limit_ends_the_turn() -> None:
    calls_made: list[int] = []

    @tool
    def again() -> str:
        """Loop."""
        calls_made.append(1)
        return "again"

    agent = Agent(
        name="looper",
        model=ScriptedModel([calls((f"l-{n}", "again", {})) for n in range(10)]),
        tools=[again],
        max_steps=3,
    )
    result = agent("loop")
    assert result.stop_reason == "max_steps"
    assert len(calls_made) == 3
    assert sum(1 for m in agent.messages if m["role"] == "assistant") == 3


def test_a_scripted_model_that_runs_out_of_replies_says_so() -> None:
    agent = Agent(name="short", model=ScriptedModel([says("one")]))
    agent("first")
    with pytest.raises(ScriptExhaustedError, match=r"has 1 replies.*asks for reply 2"):
        agent("second")


def test_dismiss_interrupts_drops_the_pending_ones_and_the_next_prompt_starts_a_fresh_turn() -> None:
    runs: list[str] = []
    agent = Agent(
        name="db_admin",
        model=ScriptedModel([calls(("w-1", "delete_record", {"name": "prod-db"})), says("left it alone")]),
        tools=build_worker(runs).tools.values(),
    )
    [interrupt] = agent("delete").interrupts
    assert agent.dismiss_interrupts() == [interrupt]
    assert not agent.interrupt_state.activated
    [result] = [b["toolResult"] for b in agent.messages[-1]["content"]]
    assert result["content"][0]["text"].startswith("DISMISSED")
    assert agent("never mind").stop_reason == "end_turn"
    assert runs == []
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]


def test_a_session_is_loaded_on_construction_and_saved_after_every_invocation(tmp_path: Path) -> None:
    def build() -> Agent:
        return Agent(
            name="notes",
            model=ScriptedModel([says("one"), says("two")]),
            session=FileSession(tmp_path),
        )

    build()("first")
    assert json.loads((tmp_path / "notes.json").read_text())["messages"][-1]["content"][0]["text"] == "one"
    rebuilt = build()
    assert len(rebuilt.messages) == 2
    assert rebuilt("second").text == "two"


def test_an_ephemeral_sub_agent_with_a_session_is_refused_at_construction(tmp_path: Path) -> None:
    worker = build_worker([], session_dir=tmp_path)
    with pytest.raises(ValueError, match="preserve_context=True") as refused:
        worker.as_tool(preserve_context=False)
    assert "session" in str(refused.value)
    assert worker.as_tool(preserve_context=True).preserve_context


def test_a_snapshot_is_versioned_json() -> None:
    orchestrator = build_orchestrator([])
    orchestrator("go")
    state = orchestrator.snapshot()
    assert (state["schema_version"], state["cycle"], state["dropped_messages"]) == ("1.2", 1, 0)
    assert json.loads(json.dumps(state)) == state


# -- 10. bad input: a clear error and nothing changed ---------------------------------------------------


def paused_orchestrator() -> tuple[Agent, str]:
    orchestrator = build_orchestrator([])
    return orchestrator, orchestrator("go").interrupts[0].id


def test_an_unknown_interrupt_id_is_named_and_changes_nothing() -> None:
    orchestrator, _ = paused_orchestrator()
    before = orchestrator.snapshot()
    with pytest.raises(UnknownInterruptError, match="'nope'"):
        orchestrator([approve("nope")])
    assert orchestrator.snapshot() == before


def test_a_prompt_mixing_text_with_answers_is_refused() -> None:
    orchestrator, interrupt_id = paused_orchestrator()
    before = orchestrator.snapshot()
    with pytest.raises(InvalidInvocationError, match="cannot mix"):
        orchestrator([{"text": "also this"}, approve(interrupt_id)])
    assert orchestrator.snapshot() == before


@pytest.mark.parametrize(
    "block",
    [
        {"interruptResponse": {"interruptId": "ID"}},
        {"interruptResponse": {"interruptId": "ID", "response": None}},
    ],
    ids=["missing", "null"],
)
def test_an_answer_without_a_response_is_refused(block: dict[str, Any]) -> None:
    orchestrator, interrupt_id = paused_orchestrator()
    block["interruptResponse"]["interruptId"] = interrupt_id
    before = orchestrator.snapshot()
    with pytest.raises(InvalidInvocationError, match="has no response"):
        orchestrator([block])
    assert orchestrator.snapshot() == before


def test_a_malformed_approval_answer_is_refused() -> None:
    runs: list[str] = []
    orchestrator = build_orchestrator(runs)
    [interrupt] = orchestrator("go").interrupts
    before = orchestrator.snapshot()
    with pytest.raises(InvalidInvocationError, match="decision"):
        orchestrator([{"interruptResponse": {"interruptId": interrupt.id, "response": {"decision": "yes"}}}])
    assert orchestrator.snapshot() == before
    assert runs == []


def test_a_fresh_prompt_while_interrupts_are_pending_says_what_is_pending_and_how_to_answer() -> None:
    orchestrator, interrupt_id = paused_orchestrator()
    before = orchestrator.snapshot()
    with pytest.raises(InvalidInvocationError) as refused:
        orchestrator("something else")
    message = str(refused.value)
    assert interrupt_id in message
    assert "interruptResponse" in message
    assert "dismiss_interrupts()" in message
    assert orchestrator.snapshot() == before


def test_answers_when_nothing_is_pending_are_refused() -> None:
    agent = Agent(name="idle", model=ScriptedModel([says("hi")]))
    with pytest.raises(UnknownInterruptError, match="no pending interrupts"):
        agent([approve("x")])
    assert agent.messages == []


@pytest.mark.parametrize(
    "prompt", [[], "", "  ", 42, [["not a block"]]], ids=["empty list", "empty", "blank", "int", "nested"]
)
def test_a_prompt_that_is_not_text_or_blocks_is_refused(prompt: Any) -> None:
    agent = Agent(name="idle", model=ScriptedModel([says("hi")]))
    with pytest.raises(InvalidInvocationError):
        agent(prompt)
    assert agent.messages == []


def test_a_snapshot_of_an_unknown_schema_version_is_refused_and_changes_nothing() -> None:
    orchestrator, _ = paused_orchestrator()
    state = orchestrator.snapshot()
    fresh = build_orchestrator([])
    with pytest.raises(SnapshotError, match=r"'0\.0'"):
        fresh.restore({**state, "schema_version": "0.0"})
    assert fresh.messages == []
    assert not fresh.interrupt_state.activated


def test_a_snapshot_of_another_agent_is_refused() -> None:
    with pytest.raises(SnapshotError, match="belongs to agent 'db_admin'"):
        build_orchestrator([]).restore(build_worker([]).snapshot())


# -- model replies that would break exactly-once ------------------------------------------------------


def test_a_reply_giving_two_calls_one_tool_use_id_is_refused_before_anything_runs() -> None:
    runs: list[str] = []
    reply = calls(("x", "delete_record", {"name": "scratch-db"}), ("x", "delete_record", {"name": "prod-db"}))
    agent = Agent(name="db_admin", model=ScriptedModel([reply]), tools=build_worker(runs).tools.values())
    with pytest.raises(ModelError, match=r"two tool calls of one reply the same toolUseId \['x'\]"):
        agent("delete")
    assert runs == []
    assert [m["role"] for m in agent.messages] == ["user"]


def test_a_tool_use_id_of_an_earlier_reply_names_a_new_call_with_its_own_question_and_answer() -> None:
    """Some providers number every reply's calls from call_0: the second call_0 is asked about anew."""
    runs: list[str] = []
    replies = [
        calls(("call_0", "delete_record", {"name": "scratch-db"})),
        calls(("call_0", "delete_record", {"name": "prod-db"})),
        says("both gone"),
    ]

    def build() -> Agent:
        return Agent(name="db_admin", model=ScriptedModel(replies), tools=build_worker(runs).tools.values())

    agent = build()
    [first] = agent("delete").interrupts
    assert first.reason["input"] == {"name": "scratch-db"}
    rebuilt = build()
    rebuilt.restore(json.loads(json.dumps(agent.snapshot())))
    [second] = rebuilt([approve(first.id)]).interrupts
    assert second.reason["input"] == {"name": "prod-db"}
    assert second.id != first.id
    assert runs == ["scratch-db"]
    again = build()
    again.restore(json.loads(json.dumps(rebuilt.snapshot())))
    with pytest.raises(UnknownInterruptError):
        again([approve(first.id)])
    done = again([approve(second.id)])
    assert (done.stop_reason, done.text, runs) == ("end_turn", "both gone", ["scratch-db", "prod-db"])


@pytest.mark.parametrize("reply", [None, {"role": "assistant", "content": "text"}, {"content": []}])
def test_a_reply_that_is_not_a_converse_message_is_not_recorded(reply: Any) -> None:
    class Broken:
        def converse(self, *_: Any) -> Any:
            return reply

    agent = Agent(name="broken", model=Broken())
    with pytest.raises(ModelError):
        agent("hi")
    assert agent.messages == [{"role": "user", "content": [{"text": "hi"}]}]


def test_a_model_error_after_an_approved_action_keeps_the_action_recorded(tmp_path: Path) -> None:
    runs: list[str] = []

    class FailsAfterTheTool:
        def converse(self, messages: list[dict[str, Any]], *_: Any) -> dict[str, Any]:
            if any("toolResult" in b for m in messages for b in m["content"]):
                raise ModelError("throttled")
            return calls(("w-1", "delete_record", {"name": "prod-db"}))

    def build() -> Agent:
        return Agent(
            name="db_admin",
            model=FailsAfterTheTool(),
            tools=build_worker(runs).tools.values(),
            session=FileSession(tmp_path),
        )

    [interrupt] = build()("delete").interrupts
    with pytest.raises(ModelError, match="throttled"):
        build()([approve(interrupt.id)])
    assert runs == ["prod-db"]
    with pytest.raises(UnknownInterruptError):
        build()([approve(interrupt.id)])
    assert runs == ["prod-db"]


def test_errors_of_resumable_itself_raised_in_a_tool_abort_the_call_instead_of_becoming_a_tool_result() -> None:
    @tool
    def guarded() -> str:
        """Lose the lease mid-step."""
        raise LeaseLostError("another invocation took the turn over")

    agent = Agent(name="a", model=ScriptedModel([calls(("g-1", "guarded", {})), says("never")]), tools=[guarded])
    with pytest.raises(LeaseLostError):
        agent("go")


def test_an_interrupt_answered_twice_in_one_prompt_is_refused() -> None:
    orchestrator, interrupt_id = paused_orchestrator()
    before = orchestrator.snapshot()
    with pytest.raises(InvalidInvocationError, match="answered twice"):
        orchestrator([approve(interrupt_id), approve(interrupt_id)])
    assert orchestrator.snapshot() == before


@pytest.mark.parametrize(
    "blocks",
    [[{"bogus": 1}], [{"text": "a", "image": {}}], [{"text": ""}], [{"toolResult": {"toolUseId": "x"}}]],
    ids=["unknown block", "two kinds", "blank text", "tool result"],
)
def test_a_prompt_block_that_is_not_user_content_is_refused(blocks: list[dict[str, Any]]) -> None:
    agent = Agent(name="idle", model=ScriptedModel([says("hi")]))
    with pytest.raises(InvalidInvocationError, match="nothing was added"):
        agent(blocks)
    assert agent.messages == []


def test_a_corrupt_session_file_is_a_snapshot_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text("{not json")
    with pytest.raises(SnapshotError, match=r"notes\.json is not JSON"):
        Agent(name="notes", model=ScriptedModel([says("hi")]), session=FileSession(tmp_path))


def test_max_steps_holds_for_the_whole_turn_across_checkpoints() -> None:
    """A turn checkpointed before every tool call but the first of each invocation, and continued
    again and again, still stops after max_steps model calls in all (not per continuation)."""
    calls_made: list[int] = []

    @tool
    def again() -> str:
        """Loop."""
        calls_made.append(1)
        return "again"

    agent = Agent(
        name="looper",
        model=ScriptedModel([calls((f"l-{n}", "again", {}), (f"m-{n}", "again", {})) for n in range(20)]),
        tools=[again],
        max_steps=3,
    )

    def invocation() -> Invocation:
        asked: list[int] = []
        return Invocation(checkpoint=lambda: bool(asked.append(1) or len(asked) > 1))

    result = agent.invoke("loop", invocation())
    continuations = 0
    while result.stop_reason == "interrupt":
        assert all(i.name == CHECKPOINT_INTERRUPT for i in result.interrupts)
        continuations += 1
        assert continuations < 20, "a checkpointed turn never stopped"
        answers = [{"interruptResponse": {"interruptId": i.id, "response": CONTINUE}} for i in result.interrupts]
        result = agent.invoke(answers, invocation())
    assert result.stop_reason == "max_steps"
    assert sum(1 for m in agent.messages if m["role"] == "assistant") == 3
    assert len(calls_made) == 6 and continuations >= 3


def test_a_turn_paused_under_snapshot_1_0_resumes_with_the_ids_it_was_paused_with() -> None:
    """What the code before replies were numbered wrote: ids from the toolUseId alone, no cycle."""
    received: list[Any] = []
    legacy_id = tool_interrupt_id("t-1", "confirm_transfer")
    legacy = {
        "schema_version": "1.0",
        "agent": "bank",
        "messages": [
            {"role": "user", "content": [{"text": "move 5"}]},
            calls(("t-1", "transfer", {"amount": 5})),
        ],
        "interrupt_state": {
            "activated": True,
            "pending": [{"id": legacy_id, "name": "confirm_transfer", "reason": {"amount": 5}}],
            "answers": {},
            "context": {"tool_results": {}, "steps": 1},
        },
    }
    agent = transfer_agent(received)
    agent.restore(legacy)
    assert (agent.cycle, list(agent.interrupt_state.pending)) == (1, [legacy_id])
    done = agent([{"interruptResponse": {"interruptId": legacy_id, "response": {"ok": True}}}])
    assert (done.stop_reason, received) == ("end_turn", [{"ok": True}])

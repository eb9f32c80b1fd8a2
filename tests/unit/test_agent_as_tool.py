"""Behaviours 2, 3, 5, 6, 7 and 9: routing answers to sub-agent calls and storing their turns."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from resumable import Agent, ScriptedModel, ToolContext, tool
from resumable.exceptions import UnknownInterruptError
from resumable.runtime.agent_as_tool import STORED_TURNS_KEY
from resumable.runtime.snapshot import SCHEMA_VERSION
from tests.agents import approve, build_orchestrator, build_worker, calls, deny, make_delete_record, says


def rebuild(build: Any, state: dict[str, Any]) -> Agent:
    """A new agent tree from ``build()``, restored from a JSON round trip of ``state``."""
    fresh: Agent = build()
    fresh.restore(json.loads(json.dumps(state)))
    return fresh


def answers_of(response: dict[str, Any], *interrupt_ids: str) -> list[dict[str, Any]]:
    return [{"interruptResponse": {"interruptId": i, "response": response}} for i in interrupt_ids]


def two_admins(runs: dict[str, list[str]]) -> Agent:
    """An orchestrator calling two db_admin sub-agents (calls c-a and c-b) in one step."""
    return Agent(
        name="orchestrator",
        model=ScriptedModel(
            [calls(("c-a", "admin_a", {"prompt": "x"}), ("c-b", "admin_b", {"prompt": "x"})), says("done")]
        ),
        tools=[build_worker(runs["a"], name="admin_a").as_tool(), build_worker(runs["b"], name="admin_b").as_tool()],
    )


def confirming_worker(name: str, received: list[Any]) -> Agent:
    """A sub-agent whose tool raises a plain interrupt and records the answer it is given."""

    @tool(context=True)
    def confirm(question: str, context: ToolContext) -> str:
        """Ask a person."""
        answer = context.interrupt("confirm", reason={"question": question})
        received.append(answer)
        return f"answered {answer}"

    return Agent(
        name=name,
        model=ScriptedModel([calls(("w-1", "confirm", {"question": "sure?"})), says("confirmed")]),
        tools=[confirm],
    )


# -- 2. routing -------------------------------------------------------------------------------------


def test_a_resume_forwards_to_each_call_only_its_own_answers_under_local_ids() -> None:
    received: dict[str, list[Any]] = {"a": [], "b": []}

    def build() -> Agent:
        return Agent(
            name="orchestrator",
            model=ScriptedModel(
                [calls(("call-a", "ask_a", {"prompt": "?"}), ("call-b", "ask_b", {"prompt": "?"})), says("ok")]
            ),
            tools=[
                confirming_worker("ask_a", received["a"]).as_tool(),
                confirming_worker("ask_b", received["b"]).as_tool(),
            ],
        )

    orchestrator = build()
    paused = orchestrator("ask both")
    ids = {i.id.split(":")[2].removesuffix("@1"): i.id for i in paused.interrupts}
    resumed = rebuild(build, orchestrator.snapshot())
    result = resumed(
        [
            {"interruptResponse": {"interruptId": ids["call-a"], "response": "yes from a"}},
            {"interruptResponse": {"interruptId": ids["call-b"], "response": "yes from b"}},
        ]
    )
    assert result.stop_reason == "end_turn"
    assert received == {"a": ["yes from a"], "b": ["yes from b"]}


def test_a_call_with_no_answer_stays_pending_under_the_same_id() -> None:
    runs: dict[str, list[str]] = {"a": [], "b": []}

    def build() -> Agent:
        return two_admins(runs)

    orchestrator = build()
    first = orchestrator("go")
    a_id, b_id = (i.id for i in first.interrupts)
    resumed = rebuild(build, orchestrator.snapshot())
    partial = resumed([approve(a_id)])
    assert runs == {"a": ["prod-db"], "b": []}
    assert partial.stop_reason == "interrupt"
    assert [i.id for i in partial.interrupts] == [b_id]
    assert partial.interrupts[0] == next(i for i in first.interrupts if i.id == b_id)

    done = rebuild(build, resumed.snapshot())([approve(b_id)])
    assert done.stop_reason == "end_turn"
    assert runs == {"a": ["prod-db"], "b": ["prod-db"]}


# -- 3. the stored turn ----------------------------------------------------------------------------


def test_an_ephemeral_sub_agents_turn_is_stored_as_an_isolated_deep_copy() -> None:
    worker = build_worker([])
    orchestrator = build_orchestrator([], worker=worker)
    orchestrator("go")
    stored = orchestrator.interrupt_state.context[STORED_TURNS_KEY]["o-1"]
    assert stored == worker.snapshot()
    before = copy.deepcopy(stored)

    worker.messages[0]["content"][0]["text"] = "changed in place"
    worker.messages.append({"role": "user", "content": [{"text": "more"}]})
    worker.interrupt_state.context["late"] = "key"
    assert orchestrator.interrupt_state.context[STORED_TURNS_KEY]["o-1"] == before


def test_the_stored_turn_is_freed_once_restored() -> None:
    runs: dict[str, list[str]] = {"a": [], "b": []}

    def build() -> Agent:
        return two_admins(runs)

    orchestrator = build()
    a_id = orchestrator("go").interrupts[0].id
    assert set(orchestrator.interrupt_state.context[STORED_TURNS_KEY]) == {"c-a", "c-b"}
    resumed = rebuild(build, orchestrator.snapshot())
    resumed([approve(a_id)])
    assert set(resumed.interrupt_state.context[STORED_TURNS_KEY]) == {"c-b"}


def test_nothing_is_stored_for_a_sub_agent_that_preserves_its_context() -> None:
    orchestrator = build_orchestrator([], preserve_context=True)
    orchestrator("go")
    assert STORED_TURNS_KEY not in orchestrator.interrupt_state.context


# -- 5. a stored turn that cannot be loaded ----------------------------------------------------------


def two_step_worker(runs: list[str]) -> Agent:
    """A sub-agent with two guarded steps in one task: read the row, then delete it."""

    @tool(approval=True)
    def read_record(name: str) -> str:
        """Read a record."""
        runs.append(f"read {name}")
        return "row"

    return Agent(
        name="db_admin",
        model=ScriptedModel(
            [
                calls(("w-1", "read_record", {"name": "prod-db"})),
                calls(("w-2", "delete_record", {"name": "prod-db"})),
                says("read and deleted"),
            ]
        ),
        tools=[read_record, make_delete_record(runs)],
    )


def test_an_unloadable_stored_turn_keeps_the_interrupt_pending_and_runs_once_after_repair() -> None:
    runs: list[str] = []

    def build() -> Agent:
        return build_orchestrator(runs)

    orchestrator = build()
    [interrupt] = orchestrator("go").interrupts
    state = orchestrator.snapshot()
    stored = state["interrupt_state"]["context"][STORED_TURNS_KEY]["o-1"]
    stored["schema_version"] = "0.0"

    resumed = rebuild(build, state)
    again = resumed([approve(interrupt.id)])
    assert again.stop_reason == "interrupt"
    assert again.interrupts == [interrupt]
    assert runs == []
    kept = resumed.snapshot()
    assert kept["interrupt_state"]["context"][STORED_TURNS_KEY]["o-1"] == stored

    kept["interrupt_state"]["context"][STORED_TURNS_KEY]["o-1"]["schema_version"] = SCHEMA_VERSION
    done = rebuild(build, kept)([approve(interrupt.id)])
    assert done.stop_reason == "end_turn"
    assert runs == ["prod-db"]


def test_an_unloadable_stored_turn_re_raises_only_what_it_still_awaits() -> None:
    runs: list[str] = []

    def build() -> Agent:
        return build_orchestrator(runs, worker=two_step_worker(runs))

    orchestrator = build()
    [read] = orchestrator("go").interrupts
    after_read = rebuild(build, orchestrator.snapshot())
    [delete] = after_read([approve(read.id)]).interrupts
    assert runs == ["read prod-db"]

    state = after_read.snapshot()
    state["interrupt_state"]["context"][STORED_TURNS_KEY]["o-1"]["schema_version"] = "0.0"
    broken = rebuild(build, state)
    assert [i.id for i in broken([approve(delete.id)]).interrupts] == [delete.id]

    repaired = broken.snapshot()
    repaired["interrupt_state"]["context"][STORED_TURNS_KEY]["o-1"]["schema_version"] = SCHEMA_VERSION
    fixed = rebuild(build, repaired)
    with pytest.raises(UnknownInterruptError, match="no pending interrupt"):
        fixed([approve(read.id)])
    assert fixed([approve(delete.id)]).stop_reason == "end_turn"
    assert runs == ["read prod-db", "prod-db"]


# -- 6. two guarded steps in one sub-agent task -------------------------------------------------------


def test_a_sub_agent_that_interrupts_twice_runs_each_action_once_and_never_reoffers_a_consumed_id() -> None:
    runs: list[str] = []

    def build() -> Agent:
        return build_orchestrator(runs, worker=two_step_worker(runs))

    orchestrator = build()
    [read] = orchestrator("go").interrupts
    second = rebuild(build, orchestrator.snapshot())
    paused_again = second([approve(read.id)])
    assert [i.id for i in paused_again.interrupts] != [read.id]
    [delete] = paused_again.interrupts
    assert delete.reason["tool"] == "delete_record"
    assert list(second.interrupt_state.pending) == [delete.id]

    third = rebuild(build, second.snapshot())
    with pytest.raises(UnknownInterruptError):
        third([approve(read.id)])
    assert third([approve(delete.id)]).stop_reason == "end_turn"
    assert runs == ["read prod-db", "prod-db"]


# -- 7. nesting, colliding local ids, mixed answers ---------------------------------------------------


def test_three_levels_of_nesting_resume_after_a_rebuild() -> None:
    runs: list[str] = []

    def build() -> Agent:
        manager = Agent(
            name="manager",
            model=ScriptedModel([calls(("m-1", "db_admin", {"prompt": "delete"})), says("manager: done")]),
            tools=[build_worker(runs).as_tool()],
        )
        return Agent(
            name="orchestrator",
            model=ScriptedModel([calls(("o-1", "manager", {"prompt": "delete"})), says("all done")]),
            tools=[manager.as_tool()],
        )

    orchestrator = build()
    [interrupt] = orchestrator("go").interrupts
    result = rebuild(build, orchestrator.snapshot())([approve(interrupt.id)])
    assert (result.stop_reason, result.text) == ("end_turn", "all done")
    assert runs == ["prod-db"]


def test_one_resume_answers_the_orchestrators_own_interrupt_and_a_sub_agents() -> None:
    runs: list[str] = []

    def build() -> Agent:
        @tool(approval=True)
        def notify_team(message: str) -> str:
            """Tell the team."""
            runs.append(f"notify {message}")
            return "sent"

        return Agent(
            name="orchestrator",
            model=ScriptedModel(
                [
                    calls(("o-1", "db_admin", {"prompt": "delete"}), ("o-2", "notify_team", {"message": "bye"})),
                    says("done"),
                ]
            ),
            tools=[build_worker(runs).as_tool(), notify_team],
        )

    orchestrator = build()
    paused = orchestrator("go")
    assert {i.reason["agent"] for i in paused.interrupts} == {"orchestrator", "db_admin"}
    result = rebuild(build, orchestrator.snapshot())([approve(i.id) for i in paused.interrupts])
    assert result.stop_reason == "end_turn"
    assert sorted(runs) == ["notify bye", "prod-db"]


# -- 9. interrupt context owned by others; leftover state ---------------------------------------------


def test_interrupt_context_keys_the_loop_does_not_own_survive_storing_a_turn() -> None:
    @tool(context=True)
    def audited(context: ToolContext) -> str:
        """Record an audit entry, then ask."""
        context.agent.interrupt_state.context["app.audit"] = {"asked": True}
        return str(context.interrupt("confirm"))

    def build() -> Agent:
        return Agent(
            name="orchestrator",
            model=ScriptedModel(
                [calls(("o-1", "db_admin", {"prompt": "delete"}), ("o-2", "audited", {})), says("done")]
            ),
            tools=[build_worker([]).as_tool(), audited],
        )

    orchestrator = build()
    orchestrator("go")
    context = rebuild(build, orchestrator.snapshot()).interrupt_state.context
    assert context["app.audit"] == {"asked": True}
    assert "o-1" in context[STORED_TURNS_KEY]


def test_leftover_interrupt_state_of_an_ephemeral_sub_agent_is_reset_on_a_fresh_call() -> None:
    runs: list[str] = []
    worker = build_worker(runs)
    orchestrator = Agent(
        name="orchestrator",
        model=ScriptedModel(
            [
                calls(("o-1", "db_admin", {"prompt": "delete"})),
                calls(("o-2", "db_admin", {"prompt": "delete again"})),
                says("done"),
            ]
        ),
        tools=[worker.as_tool()],
    )
    orchestrator("go")
    orchestrator.dismiss_interrupts()
    assert worker.interrupt_state.activated

    again = orchestrator("try again")
    assert again.stop_reason == "interrupt"
    assert again.interrupts[0].reason["tool"] == "delete_record"
    assert orchestrator([approve(again.interrupts[0].id)]).stop_reason == "end_turn"
    assert runs == ["prod-db"]


def test_the_answer_to_an_unloadable_stored_turn_survives_and_applies_once_repaired() -> None:
    runs: dict[str, list[str]] = {"a": [], "b": []}

    def build() -> Agent:
        return two_admins(runs)

    orchestrator = build()
    a_id, b_id = (i.id for i in orchestrator("go").interrupts)
    state = orchestrator.snapshot()
    state["interrupt_state"]["context"][STORED_TURNS_KEY]["c-a"]["schema_version"] = "0.0"
    broken = rebuild(build, state)
    assert {i.id for i in broken([approve(a_id)]).interrupts} == {a_id, b_id}
    kept = broken.snapshot()
    assert kept["interrupt_state"]["answers"][a_id] == {"decision": "approve"}

    kept["interrupt_state"]["context"][STORED_TURNS_KEY]["c-a"]["schema_version"] = SCHEMA_VERSION
    done = rebuild(build, kept)([approve(b_id)])
    assert done.stop_reason == "end_turn"
    assert runs == {"a": ["prod-db"], "b": ["prod-db"]}


def test_answering_a_surviving_answer_again_replaces_it() -> None:
    runs: list[str] = []

    def build() -> Agent:
        return build_orchestrator(runs)

    orchestrator = build()
    [interrupt] = orchestrator("go").interrupts
    state = orchestrator.snapshot()
    state["interrupt_state"]["context"][STORED_TURNS_KEY]["o-1"]["schema_version"] = "0.0"
    broken = rebuild(build, state)
    broken([approve(interrupt.id)])
    repaired = broken.snapshot()
    repaired["interrupt_state"]["context"][STORED_TURNS_KEY]["o-1"]["schema_version"] = SCHEMA_VERSION
    assert rebuild(build, repaired)([deny(interrupt.id)]).stop_reason == "end_turn"
    assert runs == []


def test_dismissing_the_orchestrator_also_dismisses_a_context_preserving_sub_agents_paused_turn(
    tmp_path: Path,
) -> None:
    runs: list[str] = []
    script = [
        calls(("w-1", "delete_record", {"name": "prod-db"})),
        calls(("w-2", "delete_record", {"name": "test-db"})),
        says("deleted"),
    ]

    def build() -> Agent:
        worker = build_worker(runs, session_dir=tmp_path, script=script)
        return Agent(
            name="orchestrator",
            model=ScriptedModel(
                [calls(("o-1", "db_admin", {"prompt": "x"})), calls(("o-2", "db_admin", {"prompt": "y"})), says("ok")]
            ),
            tools=[worker.as_tool(preserve_context=True)],
        )

    orchestrator = build()
    orchestrator("delete prod")
    orchestrator.dismiss_interrupts()
    rebuilt = rebuild(build, orchestrator.snapshot())
    assert not rebuilt.tools["db_admin"].agent.interrupt_state.activated  # type: ignore[attr-defined]
    again = rebuilt("delete test")
    assert again.stop_reason == "interrupt"
    assert again.interrupts[0].reason["input"] == {"name": "test-db"}


def test_a_context_preserving_sub_agent_still_paused_elsewhere_gives_a_tool_error_not_a_crash() -> None:
    worker = build_worker([])
    worker("a task of its own")
    orchestrator = build_orchestrator([], worker=worker, preserve_context=True)
    result = orchestrator("go")
    assert result.stop_reason == "end_turn"
    [tool_result] = [b["toolResult"] for b in orchestrator.messages[2]["content"]]
    assert tool_result["status"] == "error"
    assert "did not run" in tool_result["content"][0]["text"]


def test_a_lost_session_is_reported_as_an_unknown_outcome_not_as_a_missing_session(tmp_path: Path) -> None:
    runs: list[str] = []

    def build() -> Agent:
        return build_orchestrator(runs, preserve_context=True, worker_session_dir=tmp_path)

    orchestrator = build()
    [interrupt] = orchestrator("go").interrupts
    (tmp_path / "db_admin.json").unlink()
    resumed = rebuild(build, orchestrator.snapshot())
    resumed([approve(interrupt.id)])
    [tool_result] = [b["toolResult"] for b in resumed.messages[2]["content"]]
    text = tool_result["content"][0]["text"]
    assert "unknown" in text
    assert "no session" not in text
    assert runs == []

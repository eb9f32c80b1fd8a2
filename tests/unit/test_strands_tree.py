"""StrandsTree without AWS: what it refuses, how it stops, pauses, stores and resumes a Strands agent
tree, and the two details of Strands 1.62 it reads that are not public (pinned here)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from strands import Agent, tool
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.session import FileSessionManager
from strands.tools.executors import SequentialToolExecutor

from resumable.exceptions import AgentFactoryError, LeaseLostError, SnapshotError
from resumable.integrations.strands import ScriptedStrandsModel, StrandsTree, fencing_token
from resumable.integrations.strands.hooks import _local_id
from resumable.integrations.strands.tree import _preserves_context
from resumable.runtime.approval import ApprovalPolicy
from resumable.runtime.interrupts import CHECKPOINT_INTERRUPT, CONTINUE
from resumable.runtime.invocation import FencingToken, Invocation
from resumable.runtime.session import FileSession
from resumable.service.agent_factory import AgentContext, build
from tests.agents import RememberingJournal, calls, says

POLICY = ApprovalPolicy(require=("delete_*",))
RUNS: list[str] = []
TOKENS: list[FencingToken | None] = []


@tool
def delete_record(name: str) -> str:
    """Delete a database record.

    Args:
        name: The record's name.
    """
    RUNS.append(name)
    TOKENS.append(fencing_token())
    return f"deleted {name}"


@tool
def look_up(name: str) -> str:
    """Look a record up.

    Args:
        name: The record's name.
    """
    RUNS.append(f"look {name}")
    return f"{name} exists"


@pytest.fixture(autouse=True)
def _clean() -> None:
    RUNS.clear()
    TOKENS.clear()


def _agent(name: str, replies: list[dict[str, Any]], tools: list[Any], **options: Any) -> Agent:
    return Agent(name=name, model=ScriptedStrandsModel(replies), tools=tools, callback_handler=None, **options)


def _nested(**options: Any) -> Agent:
    admin = _agent("db_admin", [calls(("w-1", "delete_record", {"name": "prod-db"})), says("deleted")], [delete_record])
    return _agent(
        "orchestrator",
        [calls(("o-1", "db_admin", {"input": "delete prod-db"})), says("The record is gone.")],
        [admin.as_tool(name="db_admin", **options)],
    )


def _invocation(**fields: Any) -> Invocation:
    return Invocation(agent_path=("orchestrator",), **fields)


def _answer(interrupt_id: str, response: Any) -> list[dict[str, Any]]:
    return [{"interruptResponse": {"interruptId": interrupt_id, "response": response}}]


def _rebuilt(tree: StrandsTree, make: Callable[[], StrandsTree]) -> StrandsTree:
    stored = json.loads(json.dumps(tree.snapshot()))
    again = make()
    again.restore(stored)
    return again


# -- what it refuses -----------------------------------------------------------------------------------------


def test_an_agent_with_its_own_session_manager_is_refused_saying_why(tmp_path: Path) -> None:
    root = Agent(
        name="orchestrator",
        model=ScriptedStrandsModel([says("hi")]),
        session_manager=FileSessionManager(session_id="s", storage_dir=str(tmp_path)),
        callback_handler=None,
    )
    with pytest.raises(ValueError, match=r"has a session manager.*outside the turn's commit"):
        StrandsTree(root)


def test_two_agents_of_one_name_are_refused() -> None:
    one = _agent("db_admin", [says("a")], [])
    other = _agent("db_admin", [says("b")], [])
    root = _agent("orchestrator", [says("x")], [one.as_tool(name="first"), other.as_tool(name="second")])
    with pytest.raises(ValueError, match="two Strands agents are named 'db_admin'"):
        StrandsTree(root)


def test_a_context_keeping_sub_agent_without_a_session_is_refused() -> None:
    with pytest.raises(ValueError, match=r"keeps its context .* no session"):
        StrandsTree(_nested(preserve_context=True))


def test_background_tool_tasks_are_refused() -> None:
    root = _agent("orchestrator", [says("x")], [delete_record], background_tasks=True)
    with pytest.raises(ValueError, match="background tasks"):
        StrandsTree(root)


def test_a_factory_returning_a_refused_strands_tree_fails_the_build_saying_why(tmp_path: Path) -> None:
    context = AgentContext("s", "t", FileSession(tmp_path))
    with pytest.raises(AgentFactoryError, match="Strands agents cannot run here: two Strands agents"):  # noqa: SIM117
        with build(
            lambda _context: _agent(
                "o", [says("x")], [_agent("a", [], []).as_tool(name="x"), _agent("a", [], []).as_tool(name="y")]
            ),
            context,
        ):
            pass


# -- the two details of Strands 1.62 that are not public -----------------------------------------------------


def test_the_interrupt_id_read_before_asking_is_the_id_strands_raises() -> None:
    seen: list[str] = []

    class Asks(HookProvider):
        def register_hooks(self, registry: HookRegistry, **_: Any) -> None:
            registry.add_callback(BeforeToolCallEvent, self.ask)

        def ask(self, event: BeforeToolCallEvent) -> None:
            seen.append(_local_id(event, "approval"))
            event.interrupt("approval", reason="?")

    agent = _agent("a", [calls(("t-1", "look_up", {"name": "x"})), says("ok")], [look_up], hooks=[Asks()])
    result = agent("go")
    assert [i.id for i in result.interrupts or []] == seen
    assert RUNS == []


def test_whether_a_sub_agent_keeps_its_context_is_read_from_its_tool() -> None:
    sub = _agent("a", [], [])
    assert _preserves_context(sub.as_tool(name="x", preserve_context=True)) is True
    assert _preserves_context(_agent("b", [], []).as_tool(name="y", preserve_context=False)) is False


# -- pause, store, rebuild, resume ---------------------------------------------------------------------------


def test_an_approved_call_runs_once_through_the_journal_with_its_fencing_token_after_a_rebuild() -> None:
    journal = RememberingJournal()

    def make() -> StrandsTree:
        return StrandsTree(_nested(), approval_policy=POLICY)

    tree = make()
    paused = tree.invoke("delete prod-db", _invocation(journal=journal))
    [question] = paused.interrupts
    assert question.id.startswith("v1:agent_as_tool:o-1:v1:before_tool_call:w-1:")
    again = _rebuilt(tree, make)
    assert list(again.pending_interrupts()) == [question.id]
    done = again.invoke(_answer(question.id, {"decision": "approve"}), _invocation(journal=journal))
    assert (done.stop_reason, done.text) == ("end_turn", "The record is gone.")
    assert RUNS == ["prod-db"]
    assert list(journal.results) == [question.id], "the journal's key is the approval's namespaced id"
    assert [*TOKENS] == [FencingToken(question.id, 1)]
    assert again.pending_interrupts() == {}


def test_a_call_asked_about_is_still_asked_after_a_rebuild_with_no_policy_and_a_denial_runs_nothing() -> None:
    tree = StrandsTree(_nested(), approval_policy=POLICY)
    [question] = tree.invoke("delete", _invocation()).interrupts
    lax = _rebuilt(tree, lambda: StrandsTree(_nested()))
    done = lax.invoke(_answer(question.id, {"decision": "deny", "message": "not today"}), _invocation())
    assert done.stop_reason == "end_turn"
    assert RUNS == []


def test_a_snapshot_of_our_runtime_or_a_malformed_one_is_refused_and_changes_nothing() -> None:
    tree = StrandsTree(_nested(), approval_policy=POLICY)
    [question] = tree.invoke("delete", _invocation()).interrupts
    before = tree.snapshot()
    with pytest.raises(SnapshotError, match="not a Strands tree's"):
        tree.restore({"schema_version": "1.2", "agent": "orchestrator", "messages": []})
    with pytest.raises(SnapshotError, match="malformed"):
        tree.restore({**before, "pending": None})
    with pytest.raises(SnapshotError, match="cannot load its stored state"):
        tree.restore({**before, "root": {"scope": "agent", "schema_version": "9", "created_at": "", "data": {}}})
    assert list(tree.pending_interrupts()) == [question.id]
    after = tree.snapshot()
    assert after["root"]["data"] == before["root"]["data"]
    assert {k: v for k, v in after.items() if k != "root"} == {k: v for k, v in before.items() if k != "root"}


def test_a_checkpoint_pauses_before_the_call_and_continuing_runs_it() -> None:
    def make() -> StrandsTree:
        return StrandsTree(_agent("orchestrator", [calls(("o-1", "look_up", {"name": "x"})), says("ok")], [look_up]))

    tree = make()
    paused = tree.invoke("look", _invocation(checkpoint=lambda: True))
    [checkpoint] = paused.interrupts
    assert (paused.stop_reason, checkpoint.name, RUNS) == ("interrupt", CHECKPOINT_INTERRUPT, [])
    done = _rebuilt(tree, make).invoke(_answer(checkpoint.id, CONTINUE), _invocation(checkpoint=lambda: False))
    assert (done.stop_reason, RUNS) == ("end_turn", ["look x"])


# -- step boundaries: cancel and a lost lease ----------------------------------------------------------------


def test_a_stop_seen_at_a_sub_agents_model_call_cancels_the_tree_and_nothing_runs() -> None:
    boundaries: list[int] = []

    def stop() -> bool:
        boundaries.append(1)
        return len(boundaries) >= 2  # the root's model call, then the sub-agent's

    tree = StrandsTree(_nested())
    result = tree.invoke("delete", _invocation(stop=stop))
    assert result.stop_reason == "canceled"
    assert RUNS == []


def test_a_lease_lost_inside_a_sub_agent_stops_the_tree_and_is_raised_not_made_a_tool_error() -> None:
    asked: list[int] = []

    def stop() -> bool:
        asked.append(1)
        if len(asked) >= 2:  # the sub-agent's model call
            raise LeaseLostError("another invocation holds the turn")
        return False

    tree = StrandsTree(_nested())
    with pytest.raises(LeaseLostError, match="another invocation"):
        tree.invoke("delete", _invocation(stop=stop))
    assert RUNS == []


# -- tool-use ids a provider reuses ----------------------------------------------------------------------------


def test_a_tool_use_id_an_earlier_reply_used_is_refused_and_does_not_run() -> None:
    root = _agent(
        "orchestrator",
        [
            calls(("call_0", "delete_record", {"name": "a"})),
            calls(("call_0", "delete_record", {"name": "b"})),
            says("done"),
        ],
        [delete_record],
    )
    journal = RememberingJournal()
    tree = StrandsTree(root, approval_policy=POLICY)
    [first] = tree.invoke("delete a and b", _invocation(journal=journal)).interrupts
    done = tree.invoke(_answer(first.id, {"decision": "approve"}), _invocation(journal=journal))
    assert done.stop_reason == "end_turn"
    assert RUNS == ["a"], "the second call_0 would have run under the first one's approval"
    refused = [
        block["toolResult"]
        for message in root.messages
        for block in message["content"]
        if "toolResult" in block and block["toolResult"]["status"] == "error"
    ]
    assert ["already used toolUseId 'call_0'" in r["content"][0]["text"] for r in refused] == [True]


def test_a_replys_first_tool_call_asks_no_boundary_of_its_own_and_a_later_call_does() -> None:
    asked: list[str] = []

    def stop() -> bool:
        asked.append("stop?")
        return len(asked) >= 2  # the model call, then the reply's second tool call

    root = _agent(
        "orchestrator",
        [calls(("o-1", "look_up", {"name": "a"}), ("o-2", "look_up", {"name": "b"})), says("ok")],
        [look_up],
        tool_executor=SequentialToolExecutor(),
    )
    result = StrandsTree(root).invoke("look", _invocation(stop=stop))
    assert (result.stop_reason, RUNS, len(asked)) == ("canceled", ["look a"], 2)

"""Behaviour 1: namespaced interrupt ids are exact, one prefix per level, and collision-free."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from hypothesis import example, given, settings
from hypothesis import strategies as st

from resumable import Agent, ScriptedModel
from resumable.runtime.agent_as_tool import namespace_prefix
from resumable.runtime.interrupts import tool_interrupt_id
from tests.agents import approve, build_worker, calls, says

ADVERSARIAL_PAIRS = [
    ("v1", "a"),
    ("a", "a:v1"),
    ("tool:123", "tool:123:extra"),
    ("%3A", ":"),
    ("%", "%25"),
    ("", "a"),
    ("", ":"),
    ("ünïcødé", "unicode"),
    ("🚀", "🚀:🚀"),
    ("v1:agent_as_tool:x", "x"),
]

tool_use_ids = st.text(max_size=12)


def test_a_namespaced_id_is_the_marker_the_encoded_tool_use_id_and_the_local_id() -> None:
    local = build_worker([])("go").interrupts[0]
    orchestrator = Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("tool:1/ü", "db_admin", {"prompt": "go"}))]),
        tools=[build_worker([]).as_tool()],
    )
    [namespaced] = orchestrator("go").interrupts
    assert namespaced.id == "v1:agent_as_tool:" + quote("tool:1/ü", safe="") + "@1:" + local.id
    assert (namespaced.name, namespaced.reason) == (local.name, local.reason)


def test_each_nesting_level_adds_exactly_one_prefix() -> None:
    db_admin = build_worker([])
    manager = Agent(
        name="manager",
        model=ScriptedModel([calls(("m:1", "db_admin", {"prompt": "delete"}))]),
        tools=[db_admin.as_tool()],
    )
    orchestrator = Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o:1", "manager", {"prompt": "delete"}))]),
        tools=[manager.as_tool()],
    )
    [interrupt] = orchestrator("go").interrupts
    local = tool_interrupt_id("w-1", "approval", 1)
    assert interrupt.id == "v1:agent_as_tool:o%3A1@1:v1:agent_as_tool:m%3A1@1:" + local
    assert interrupt.reason == {"agent": "db_admin", "tool": "delete_record", "input": {"name": "prod-db"}}


cycles = st.none() | st.integers(min_value=0, max_value=10**6)


@given(
    first=tool_use_ids,
    second=tool_use_ids,
    first_cycle=cycles,
    second_cycle=cycles,
    local=st.text(max_size=12),
    name=st.text(max_size=8),
)
@settings(max_examples=400)
@example(first="call_0", second="call_0", first_cycle=1, second_cycle=2, local="x", name="approval")
@example(first="call_0", second="call_0", first_cycle=None, second_cycle=1, local="x", name="approval")
@example(first="a@1", second="a", first_cycle=None, second_cycle=1, local="x", name="approval")
def test_no_call_prefix_captures_another_calls_ids_or_the_orchestrators_own(
    first: str, second: str, first_cycle: int | None, second_cycle: int | None, local: str, name: str
) -> None:
    """A call is its toolUseId in its reply (cycle): the same toolUseId in another reply is another call."""
    pairs = [((a, first_cycle), (b, second_cycle)) for a, b in ADVERSARIAL_PAIRS]
    for a, b in [*pairs, ((first, first_cycle), (second, second_cycle))]:
        if a == b:
            continue
        for own, other in ((a, b), (b, a)):
            prefix = namespace_prefix(*own)
            for other_local in (local, tool_interrupt_id(local, name), namespace_prefix(*own) + local):
                assert not (namespace_prefix(*other) + other_local).startswith(prefix), (own, other, other_local)
            assert not tool_interrupt_id(own[0], name, own[1]).startswith(prefix)
            assert not tool_interrupt_id(other[0], name, other[1]).startswith(prefix)
            assert tool_interrupt_id(own[0], name, own[1]) != tool_interrupt_id(other[0], name, other[1])


def _two_call_orchestrator(first: str, second: str, runs: dict[str, list[str]]) -> Agent:
    """An orchestrator calling two db_admin sub-agents in one step; both raise the same local id."""
    workers = [build_worker(runs["a"], name="admin_a"), build_worker(runs["b"], name="admin_b")]
    return Agent(
        name="orchestrator",
        model=ScriptedModel(
            [calls((first, "admin_a", {"prompt": "delete"}), (second, "admin_b", {"prompt": "delete"})), says("ok")]
        ),
        tools=[w.as_tool() for w in workers],
    )


def _rebuilt(first: str, second: str, runs: dict[str, list[str]], state: dict[str, Any]) -> Agent:
    fresh = _two_call_orchestrator(first, second, runs)
    fresh.restore(json.loads(json.dumps(state)))
    return fresh


@given(first=tool_use_ids, second=tool_use_ids)
@settings(max_examples=60, deadline=None)
@example(first="v1", second="x")
@example(first="a", second="a:v1")
@example(first="tool:123", second="tool:123:extra")
@example(first="%3A", second=":")
@example(first="%", second="%25")
@example(first="", second="🚀")
@example(first="ünï", second="ünï:v1:tool")
def test_answers_reach_only_the_call_they_name_across_a_rebuild(first: str, second: str) -> None:
    if first == second:
        return
    runs: dict[str, list[str]] = {"a": [], "b": []}
    orchestrator = _two_call_orchestrator(first, second, runs)
    paused = orchestrator("delete both")
    by_call = {i.id.split(":")[2].removesuffix("@1"): i for i in paused.interrupts}
    assert set(by_call) == {quote(first, safe=""), quote(second, safe="")}
    first_id, second_id = by_call[quote(first, safe="")].id, by_call[quote(second, safe="")].id
    assert first_id.removeprefix(namespace_prefix(first, 1)) == second_id.removeprefix(namespace_prefix(second, 1))

    after_second = _rebuilt(first, second, runs, orchestrator.snapshot())
    result = after_second([approve(second_id)])
    assert runs == {"a": [], "b": ["prod-db"]}
    assert [i.id for i in result.interrupts] == [first_id]

    done = _rebuilt(first, second, runs, after_second.snapshot())([approve(first_id)])
    assert done.stop_reason == "end_turn"
    assert runs == {"a": ["prod-db"], "b": ["prod-db"]}

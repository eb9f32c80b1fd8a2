"""The tool calls of one reply run at once on a bounded pool: results in the order asked, every
interrupt in one pause, a stop seen by the calls still waiting, one sub-agent's calls one at a time."""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from resumable import Agent, ScriptedModel, tool
from resumable.runtime.interrupts import CHECKPOINT_INTERRUPT, CONTINUE
from resumable.runtime.invocation import Invocation
from tests.agents import approve, build_worker, calls, says
from tests.patience import HANG_SECONDS


class Gauge:
    """How many calls run at once, at most."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.peak = 0

    def __enter__(self) -> None:
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)

    def __exit__(self, *_: object) -> None:
        with self.lock:
            self.running -= 1


def waiting_tool(gauge: Gauge, before_return: Callable[[str], None]) -> Any:
    @tool
    def work(name: str) -> str:
        """Do some work."""
        with gauge:
            before_return(name)
        return f"{name} done"

    return work


def four_calls(n: int = 4) -> dict[str, Any]:
    return calls(*((f"t-{i}", "work", {"name": f"job{i}"}) for i in range(n)))


def test_four_tools_of_one_reply_all_run_at_once() -> None:
    """Each waits at a barrier of four: run one after another, the first would wait for ever."""
    gauge, barrier = Gauge(), threading.Barrier(4, timeout=HANG_SECONDS)
    agent = Agent(
        name="worker",
        model=ScriptedModel([four_calls(), says("all done")]),
        tools=[waiting_tool(gauge, lambda _: barrier.wait())],
    )
    assert agent("go").text == "all done"
    assert gauge.peak == 4


def test_results_keep_the_order_the_model_asked_whatever_order_the_calls_end_in() -> None:
    """job3 ends first, then job2, job1, job0 (each waits for the one after it)."""
    ended = {f"job{i}": threading.Event() for i in range(4)}

    def end_in_reverse(name: str) -> None:
        later = f"job{int(name[-1]) + 1}"
        if later in ended:
            assert ended[later].wait(HANG_SECONDS)
        ended[name].set()

    agent = Agent(
        name="worker",
        model=ScriptedModel([four_calls(), says("ok")]),
        tools=[waiting_tool(Gauge(), end_in_reverse)],
    )
    agent("go")
    results = agent.messages[2]["content"]
    assert [r["toolResult"]["toolUseId"] for r in results] == ["t-0", "t-1", "t-2", "t-3"]
    assert [r["toolResult"]["content"][0]["text"] for r in results] == [f"job{i} done" for i in range(4)]


@pytest.mark.parametrize("bound", [2, 3])
def test_the_pool_is_bounded(bound: int) -> None:
    """Six calls, each waiting at a barrier of ``bound``: the pool fills and never overflows."""
    gauge, barrier = Gauge(), threading.Barrier(bound, timeout=HANG_SECONDS)
    agent = Agent(
        name="worker",
        model=ScriptedModel([four_calls(6), says("ok")]),
        tools=[waiting_tool(gauge, lambda _: barrier.wait())],
        max_concurrent_tools=bound,
    )
    assert agent("go").text == "ok"
    assert gauge.peak == bound


def test_a_variable_of_the_callers_context_reaches_every_call() -> None:
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id")
    seen: list[str] = []
    barrier = threading.Barrier(4, timeout=HANG_SECONDS)

    def read(_: str) -> None:
        barrier.wait()
        seen.append(request_id.get("unset"))

    request_id.set("req-7")
    agent = Agent(name="worker", model=ScriptedModel([four_calls(), says("ok")]), tools=[waiting_tool(Gauge(), read)])
    agent("go")
    assert seen == ["req-7"] * 4


@pytest.mark.parametrize("pool", [1, 2])
def test_a_checkpoint_asked_when_a_call_would_start_pauses_the_calls_not_yet_started(pool: int) -> None:
    """The budget is spent once the first calls started: the calls after them wait for the continuation."""
    started: list[str] = []
    both = threading.Barrier(pool, timeout=HANG_SECONDS)

    def run(name: str) -> None:
        started.append(name)
        both.wait()

    agent = Agent(
        name="worker",
        model=ScriptedModel([four_calls(), says("ok")]),
        tools=[waiting_tool(Gauge(), run)],
        max_concurrent_tools=pool,
    )
    spent = lambda: len(started) >= pool  # noqa: E731 - the budget: spent once a pool's worth of calls started
    paused = agent.invoke("go", Invocation(agent_path=("worker",), checkpoint=spent))
    assert sorted(started) == [f"job{i}" for i in range(pool)]
    assert [i.name for i in paused.interrupts] == [CHECKPOINT_INTERRUPT] * (4 - pool)
    done = agent([{"interruptResponse": {"interruptId": i.id, "response": CONTINUE}} for i in paused.interrupts])
    assert done.text == "ok"
    assert sorted(started) == [f"job{i}" for i in range(4)]


@pytest.mark.parametrize("bound", [0, -1, 1.5, True, "4"])
def test_a_pool_bound_that_is_not_a_positive_int_is_refused(bound: Any) -> None:
    with pytest.raises(ValueError, match="max_concurrent_tools must be an int of at least 1"):
        Agent(name="worker", model=ScriptedModel([]), max_concurrent_tools=bound)


def test_every_concurrent_call_that_pauses_is_in_one_pause_and_each_resumes_with_its_own_answer() -> None:
    runs: list[str] = []
    reply = calls(*((f"d-{n}", "delete_record", {"name": n}) for n in ("a", "b", "c")))

    def build() -> Agent:
        return Agent(
            name="db_admin", model=ScriptedModel([reply, says("done")]), tools=build_worker(runs).tools.values()
        )

    agent = build()
    paused = agent("delete all three")
    assert [i.reason["input"]["name"] for i in paused.interrupts] == ["a", "b", "c"]
    rebuilt = build()
    rebuilt.restore(json.loads(json.dumps(agent.snapshot())))
    first = rebuilt([approve(paused.interrupts[1].id)])
    assert runs == ["b"]
    assert [i.id for i in first.interrupts] == [paused.interrupts[0].id, paused.interrupts[2].id]
    done = rebuilt([approve(i.id) for i in first.interrupts])
    assert done.text == "done"
    assert sorted(runs) == ["a", "b", "c"]


def test_a_call_waiting_for_a_thread_does_not_start_once_the_stop_signal_is_given() -> None:
    """A pool of two, three calls: the first two give the stop signal; the third never starts."""
    started: list[str] = []
    stopping = threading.Event()
    both = threading.Barrier(2, timeout=HANG_SECONDS)

    def stop_then_return(name: str) -> None:
        started.append(name)
        both.wait()
        stopping.set()

    agent = Agent(
        name="worker",
        model=ScriptedModel([four_calls(3), says("never")]),
        tools=[waiting_tool(Gauge(), stop_then_return)],
        max_concurrent_tools=2,
    )
    result = agent.invoke("go", Invocation(stop=stopping.is_set, agent_path=("worker",)))
    assert result.stop_reason == "canceled"
    assert sorted(started) == ["job0", "job1"]
    results = [b["toolResult"] for b in agent.messages[-1]["content"]]
    assert [r["status"] for r in results] == ["success", "success", "error"]
    assert "CANCELED" in results[2]["content"][0]["text"]
    assert not agent.interrupt_state.activated


@pytest.mark.parametrize("wrappers", [1, 2])
def test_two_calls_of_one_sub_agent_in_one_reply_run_one_after_the_other(wrappers: int) -> None:
    """They share the sub-agent's state. The first lookup gives the second half a second to join it:
    a pass never depends on that time (a busy machine could at most hide a failure)."""
    gauge, second_started = Gauge(), threading.Event()

    @tool
    def lookup(name: str) -> str:
        """Look a record up."""
        with gauge:
            if name == "x":
                second_started.wait(0.5)
            else:
                second_started.set()
            return f"{name} found"

    def reply_for(messages: list[dict[str, Any]]) -> dict[str, Any]:
        prompt = messages[0]["content"][0]["text"]
        if len(messages) == 1:
            return calls(("l-1", "lookup", {"name": prompt}))
        return says(f"looked up {prompt}")

    class Echo:
        def converse(self, messages: list[dict[str, Any]], *_: Any) -> dict[str, Any]:
            return reply_for(messages)

    helper = Agent(name="helper", model=Echo(), tools=[lookup])
    names = ["find", "search"][:wrappers]
    orchestrator = Agent(
        name="orchestrator",
        # One tool, or two tools of one agent (what they share is the agent).
        model=ScriptedModel([calls(("o-1", "find", {"prompt": "x"}), ("o-2", names[-1], {"prompt": "y"})), says("ok")]),
        tools=[helper.as_tool(name=name) for name in names],
    )
    assert orchestrator("both").text == "ok"
    results = [b["toolResult"]["content"][0]["text"] for b in orchestrator.messages[2]["content"]]
    assert results == ["looked up x", "looked up y"]
    assert gauge.peak == 1

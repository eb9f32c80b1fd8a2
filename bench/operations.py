"""Sections 1-3 and 6 of ``make bench``: the service's operations measured on a tree of ``tests.trees``.

1. AWS calls per operation (exact, from botocore events).
2. Latency: p50/p95 of each operation, and of its baseline (the same AWS calls made directly with boto3,
   interleaved with it run by run); and the operation's own time, outside its AWS calls.
3. Throughput: approvals settled and resumed per second by 8 concurrent clients on distinct turns; 50
   concurrent duplicates of one approval (time to settle; the action must run exactly once).
6. Fan-out and depth: one turn pausing in 1, 10 and 50 concurrent sub-agent calls, and nesting depth 1
   to 5: calls and time of the start-turn and of the approvals that complete it.
"""

from __future__ import annotations

import math
import os
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.aws_calls import Baseline, Call, Recorder, forget_session, service_for
from bench.latency import Latency
from resumable.config import Settings
from resumable.service import Service, TurnView
from tests.trees import Shape, actions_of, factory

APPROVE = {"decision": "approve"}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


# -- 1 and 2: calls and latency per operation ------------------------------------------------------------


@dataclass
class Operation:
    """``prepare(session)`` sets a fresh session up (untimed); ``run(session, prepared)`` is timed."""

    name: str
    shape: Shape
    prepare: Callable[[Service, str], Any]
    run: Callable[[Service, str, Any], TurnView]
    expect: str


def _paused(service: Service, session: str) -> TurnView:
    return service.start_turn(session, "go")


def _answered(service: Service, session: str) -> tuple[TurnView, TurnView]:
    turn = service.start_turn(session, "go")
    return turn, service.submit_approval(session, turn.turn_id, turn.interactions[0].request_id, APPROVE)


OPERATIONS = [
    Operation(
        "start-turn that pauses", Shape(1, 1), lambda s, i: None, lambda s, i, _: s.start_turn(i, "go"), "waiting"
    ),
    Operation(
        "start-turn that completes",
        Shape(1, 1, guarded=False),
        lambda s, i: None,
        lambda s, i, _: s.start_turn(i, "go"),
        "completed",
    ),
    Operation(
        "submit-approval that resumes and completes",
        Shape(1, 1),
        _paused,
        lambda s, i, t: s.submit_approval(i, t.turn_id, t.interactions[0].request_id, APPROVE),
        "completed",
    ),
    Operation(
        "the same answer again (duplicate)",
        Shape(1, 1),
        _answered,
        lambda s, i, p: s.submit_approval(i, p[0].turn_id, p[0].interactions[0].request_id, APPROVE),
        "completed",
    ),
    *[
        Operation(
            f"cancel of a waiting tree of {n} turn(s)",
            Shape(n - 1, 1) if n > 1 else Shape(0),
            _paused,
            lambda s, i, t: s.cancel(i, t.turn_id),
            "canceled",
        )
        for n in (1, 5, 20)
    ],
    Operation("get-turn", Shape(1, 1), _paused, lambda s, i, t: s.get_turn(i, t.turn_id), "waiting"),
]


def measure(settings: Settings, operation: Operation, baseline: Baseline, runs: int) -> dict[str, Any]:
    """``runs`` of ``operation`` (after one that warms up) beside the baseline's replay of each."""
    timed = _timed_runs(settings, operation, runs, Recorder(), baseline)
    times, own, raw = timed["times"], timed["own"], timed["raw"]
    return {
        "operation": operation.name,
        "calls": len(timed["calls"]),
        "which": [c.name for c in timed["calls"]],
        "p50_ms": statistics.median(times) * 1000,
        "p95_ms": percentile(times, 0.95) * 1000,
        "baseline_p50_ms": statistics.median(raw) * 1000,
        "baseline_p95_ms": percentile(raw, 0.95) * 1000,
        "ratio_p50": statistics.median(times) / statistics.median(raw),
        "ratio_p95": percentile(times, 0.95) / percentile(raw, 0.95),
        "own_p50_ms": statistics.median(own) * 1000,
        "own_p95_ms": percentile(own, 0.95) * 1000,
        "in_calls_ratio_p50": statistics.median(t / (t - o) for t, o in zip(times, own, strict=True)),
        "runs": runs,
    }


def measure_under(settings: Settings, operation: Operation, latency: Latency, runs: int) -> dict[str, Any]:
    """``runs`` of ``operation`` with every call taking at least its median under ``latency``: the
    operation's time under that model (its own time plus its calls' modeled times), and that over the
    time inside its calls."""
    timed = _timed_runs(settings, operation, runs, Recorder(latency=latency), None)
    own, inside = timed["own"], timed["modeled"]
    totals = [o + i for o, i in zip(own, inside, strict=True)]
    ratios = [t / i for t, i in zip(totals, inside, strict=True)]
    return {
        "operation": operation.name,
        "calls": len(timed["calls"]),
        "p50_ms": statistics.median(totals) * 1000,
        "in_calls_p50_ms": statistics.median(inside) * 1000,
        "own_p50_ms": statistics.median(own) * 1000,
        "own_p95_ms": percentile(own, 0.95) * 1000,
        "in_calls_ratio_p50": statistics.median(ratios),
        "in_calls_ratio_p95": percentile(ratios, 0.95),
        "runs": runs,
    }


def _timed_runs(
    settings: Settings, operation: Operation, runs: int, recorder: Recorder, baseline: Baseline | None
) -> dict[str, Any]:
    """Each run's whole time, time outside its AWS calls ("own": resumable's code, and boto3's request
    building), modeled time inside them, and the baseline's replay; and the calls of one run."""
    service = service_for(settings, factory(operation.shape), recorder)
    timed: dict[str, Any] = {"times": [], "own": [], "modeled": [], "raw": [], "calls": []}
    for n in range(runs + 1):
        session = f"b-{uuid.uuid4().hex[:12]}"
        recorder.on = False
        prepared = operation.prepare(service, session)
        recorder.on = True
        recorder.take()
        started = time.perf_counter()
        turn = operation.run(service, session, prepared)
        elapsed = time.perf_counter() - started
        inside, modeled = recorder.in_calls, recorder.modeled
        made = recorder.take()
        if turn.status != operation.expect:
            raise AssertionError(f"{operation.name}: expected {operation.expect}, got {turn.status}")
        replayed = baseline.replay(made) if baseline is not None else 0.0
        if not os.environ.get("BENCH_AWS"):
            forget_session(settings, session)
        if n == 0:
            timed["calls"] = made  # the first run warms the clients up and is not counted
            continue
        timed["times"].append(elapsed)
        timed["own"].append(elapsed - inside)
        timed["modeled"].append(modeled)
        timed["raw"].append(replayed)
    return timed


# -- 3: throughput ----------------------------------------------------------------------------------------


def throughput(settings: Settings, clients: int = 8, turns_each: int = 10) -> dict[str, Any]:
    """Approvals settled and resumed per second by ``clients`` threads, each with its own service
    (its own clients, like separate Lambda instances), each on turns of its own."""
    services = [service_for(settings, factory(Shape(1, 1)), Recorder(on=False)) for _ in range(clients)]
    waiting = [[_paused(services[c], f"t-{uuid.uuid4().hex[:12]}") for _ in range(turns_each)] for c in range(clients)]
    barrier = threading.Barrier(clients + 1)
    failures: list[BaseException] = []

    def approve_all(index: int) -> None:
        barrier.wait()
        try:
            for turn in waiting[index]:
                done = services[index].submit_approval(
                    turn.session_id, turn.turn_id, turn.interactions[0].request_id, APPROVE
                )
                assert done.status == "completed", done.status
        except BaseException as error:  # reported below
            failures.append(error)

    elapsed = _at_once(approve_all, clients, barrier)
    if failures:
        raise failures[0]
    ran = sum(sum(actions_of(t.session_id).values()) for turns in waiting for t in turns)
    if not os.environ.get("BENCH_AWS"):
        for turns in waiting:
            for turn in turns:
                forget_session(settings, turn.session_id)
    return {
        "clients": clients,
        "approvals": clients * turns_each,
        "seconds": elapsed,
        "approvals_per_second": clients * turns_each / elapsed,
        "actions_run": ran,
    }


def _at_once(work: Callable[[int], None], threads: int, barrier: threading.Barrier) -> float:
    """Run ``work(0..threads-1)`` on threads that each wait on ``barrier`` (whose last party is this
    thread) before starting: the seconds from their release until the last has finished."""
    running = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for thread in running:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in running:
        thread.join()
    return time.perf_counter() - started


def duplicates(settings: Settings, deliveries: int = 50) -> dict[str, Any]:
    """``deliveries`` concurrent deliveries of one approval: how long until all are answered, and how
    many times the approved action ran (it must be exactly once)."""
    services = [service_for(settings, factory(Shape(1, 1)), Recorder(on=False)) for _ in range(deliveries)]
    session = f"d-{uuid.uuid4().hex[:12]}"
    turn = _paused(services[0], session)
    request = turn.interactions[0].request_id
    barrier = threading.Barrier(deliveries + 1)
    outcomes: list[str] = []

    def deliver(index: int) -> None:
        barrier.wait()
        try:
            outcomes.append(services[index].submit_approval(session, turn.turn_id, request, APPROVE).status)
        except Exception as error:
            outcomes.append(type(error).__name__)

    elapsed = _at_once(deliver, deliveries, barrier)
    final = services[0].get_turn(session, turn.turn_id)
    if not os.environ.get("BENCH_AWS"):
        forget_session(settings, session)
    return {
        "deliveries": deliveries,
        "seconds_to_settle": elapsed,
        "replies": dict(sorted({o: outcomes.count(o) for o in outcomes}.items())),
        "final_status": final.status,
        "executions": sum(actions_of(session).values()),
    }


# -- 6: fan-out and depth --------------------------------------------------------------------------------


def tree_scaling(settings: Settings, runs: int = 5) -> list[dict[str, Any]]:
    """Calls and median time of a start-turn that pauses, and of the approvals that complete it, as
    the tree widens and deepens."""
    rows = []
    for shape in [Shape(1, 1), Shape(10, 1), Shape(50, 1), *[Shape(1, d) for d in range(2, 6)]]:
        recorder = Recorder()
        service = service_for(settings, factory(shape), recorder)
        start_times, answer_times = [], []
        start_calls: list[Call] = []
        answer_calls = 0
        for run in range(runs + 1):  # the first run warms up and is not counted
            session = f"f-{uuid.uuid4().hex[:12]}"
            recorder.take()
            started = time.perf_counter()
            turn = service.start_turn(session, "go")
            start_times.append(time.perf_counter() - started)
            start_calls = recorder.take()
            started = time.perf_counter()
            for interaction in turn.interactions:
                turn = service.submit_approval(session, turn.turn_id, interaction.request_id, APPROVE)
            answer_times.append(time.perf_counter() - started)
            answer_calls = len(recorder.take())
            assert turn.status == "completed" and sum(actions_of(session).values()) == len(shape.actions())
            if not os.environ.get("BENCH_AWS"):
                forget_session(settings, session)
            if run == 0:
                start_times.clear()
                answer_times.clear()
        rows.append(
            {
                "fan_out": shape.fan_out,
                "depth": shape.depth,
                "interactions": len(shape.actions()),
                "start_calls": len(start_calls),
                "start_transactions": sum(c.name == "dynamodb.TransactWriteItems" for c in start_calls),
                "start_ms": statistics.median(start_times) * 1000,
                "answer_all_calls": answer_calls,
                "answer_all_ms": statistics.median(answer_times) * 1000,
            }
        )
    return rows

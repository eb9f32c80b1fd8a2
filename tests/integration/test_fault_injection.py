"""Fault injection at every AWS call boundary of start_turn, submit_approval and cancel,
for our agent trees (tests.factories) and Strands Agents SDK ones run by StrandsTree
(tests.strands_factories, named ``strands:<name>``).

A botocore event hook on the store's two clients counts the calls an operation makes and raises
``Crash`` at call k. Each operation is first run cleanly to count its calls N; then, for every k in
0..N-1, on a fresh session: set up the preconditions, arm the fault, run the operation in a fresh
Service (a process that dies at call k), disarm, move the clock past the lease, ``recover`` from
another Service, retry what the client asked for, and check the guarantees:

- the approved action ran at most once (the ledger), and exactly once when the turn completed
  (unless the journal holds it started-not-finished: then its outcome is unknown and it was not
  run again, which DESIGN.md allows after a crash);
- no recorded answer is lost: an interaction answered before or by the operation stays answered
  with the same response;
- after recover every turn is settled, or resumable (waiting on requested interactions, or waiting
  with all answered and a recover completes it); answering, or retrying the cancel, finishes it;
- a settled turn never changes again (another recover, a client retry); a settled root has settled
  children.

Two boundaries per call: ``before`` (the request never reaches AWS) and ``after`` (AWS applied it and
the process dies before reading the reply: a write landed that the caller never learnt about).

A ``Crash`` that propagates is a process that died. A ``Crash`` the library catches and carries on
from is reported as "swallowed": that is what happens to an AWS error raised at that call (botocore
raises it after its retries), and it is judged by the same guarantees.

Every attempt runs on a table of its own: what its checks read (a day of the audit trail, across
its shards) then holds its own records, not every earlier attempt's, which would make the sweep
quadratic.

The store turns every AWS failure into ``AwsError`` (an error of resumable, never a tool result),
so a ``Crash`` surfaces as ``AwsError`` caused by it: that too is a process that died.

Two bugs this sweep found are fixed, and pinned by the targeted tests at the end:
- an AWS error inside a sub-agent call (its look at the lease, the action journal, its S3Session) was
  caught by the agent loop and became a tool error result: the turn completed, the approval was
  consumed, the approved action never ran;
- a cancel that died after marking the tree left it ``waiting`` with a cancel request that
  ``recover`` never finished, and an answer sent meanwhile was accepted and never applied.

In a Strands tree, an AWS error in one of StrandsTree's hooks was raised as the AwsError it is, but
``from`` Strands' EventLoopException wrapping it: the AWS error was lost as its cause (fixed; pinned
by the last test).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from strands.tools.executors import _executor as strands_executor

from resumable.exceptions import AwsError, GoneError, ResumableError, TurnBusyError
from resumable.local.lag import LAG, lagging
from resumable.runtime import tool_calls
from resumable.service import Service, TurnView
from resumable.service.access import load
from resumable.service.advancing import journal, lease
from resumable.service.ids import request_id as request_id_of
from resumable.store.resources import create_table_request
from tests.clock import FakeClock
from tests.factories import executions
from tests.integration.helpers import APPROVE, session_items, store_of

PROMPT = "delete the prod-db record"
# Calls whose failure the library is right to log and carry on from: tagging a superseded snapshot for
# the bucket's lifecycle (after the commit; an untagged snapshot is only kept longer). The guarantees
# are still checked after such a fault.
BEST_EFFORT = {"s3.PutObjectTagging"}
SUMMARY: dict[str, dict[str, int]] = {}


class Crash(Exception):  # noqa: N818 (the brief's name: it is a process dying, not an error)
    """The process running the operation dies at this AWS call."""


def _died(error: BaseException) -> bool:
    """A ``Crash``, whether raw or surfaced by the store as the cause of a ``AwsError``."""
    return isinstance(error, Crash) or isinstance(error.__cause__, Crash)


class Faults:
    """Counts the AWS calls of one store; raises ``Crash`` before (or after) call number ``crash_at``,
    or at the first call for which ``crash_on(name)`` holds (name: e.g. ``dynamodb.PutItem``)."""

    def __init__(
        self,
        service: Service,
        crash_at: int | None = None,
        phase: str = "before",
        crash_on: Callable[[str], bool] | None = None,
    ) -> None:
        self.calls: list[str] = []
        self.crash_at = crash_at
        self.crash_on = crash_on
        self.phase = phase
        self.fired: str | None = None
        self.fired_in_tool = False
        store: Any = service.store
        for client in (store.dynamodb, service.snapshots.s3):
            client.meta.events.register("before-call.*.*", self._before)
            client.meta.events.register("after-call.*.*", self._after)

    def _before(self, event_name: str, **_: Any) -> None:
        self.calls.append(event_name.removeprefix("before-call."))
        if self.phase == "before":
            self._maybe_crash()

    def _after(self, event_name: str, **_: Any) -> None:
        if self.phase == "after":
            self._maybe_crash()

    def _maybe_crash(self) -> None:
        k = len(self.calls) - 1
        if k == self.crash_at or (self.crash_on is not None and self.crash_on(self.calls[-1])):
            self.fired = f"{self.phase} call {k}: {self.calls[-1]}"
            self.fired_in_tool = _inside_a_tool_call()
            self.disarm()
            raise Crash(self.fired)

    def disarm(self) -> None:
        self.crash_at = None
        self.crash_on = None


# The functions that run a tool call, as (name, file): ours, a Strands tool executor's, and the action
# journal's (StrandsTree runs it on a thread of its own, whose stack holds no executor).
_TOOL_CALLS = {
    ("run_call", tool_calls.__file__),
    ("_stream", strands_executor.__file__),
    ("run", journal.__file__),
}


def _inside_a_tool_call() -> bool:
    """Whether an agent is running a tool right now: a sub-agent call (its looks at the lease, its
    S3Session), an approved action (its journal)."""
    frame = sys._getframe()
    while frame is not None:
        if (frame.f_code.co_name, frame.f_code.co_filename) in _TOOL_CALLS:
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _at_a_step_boundary() -> bool:
    """Whether a run is looking at its lease at a step boundary (``LeaseGuard``, a read or a renewal)."""
    frame = sys._getframe()
    while frame is not None:
        if (frame.f_code.co_name, frame.f_code.co_filename) == ("__call__", lease.__file__):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


@dataclass
class Harness:
    """Services on a table of their own, the shared FakeClock and ledger, and one agent factory."""

    make_service: Callable[..., Service]
    clock: FakeClock
    ledger: Path
    factory: str
    targets: list[str]  # what the approved actions write to the ledger, once each
    table: str = ""
    clean: Service | None = None
    by_sweeper: bool = False  # (recovery by the sweeper, which finds the turn through its index, not recover)

    def process(self) -> Service:
        """A new Service: a separate process, with clients of its own."""
        return self.make_service(self.factory, table_name=self.table)

    def service(self) -> Service:
        """The fault-free Service of this attempt (set up, recover, retry, read). It keeps no state
        between calls (agents are rebuilt on every call), so one serves every such role."""
        if self.clean is None or self.clean.settings.table_name != self.table:
            self.clean = self.process()
        return self.clean

    @property
    def ran(self) -> list[str]:
        return executions(self.ledger)

    def start(self, session_id: str) -> TurnView:
        """A turn paused on its first approvals: all of them (our trees), or one (a Strands tree whose
        calls run one after the other asks the next when the previous ran)."""
        view = self.service().start_turn(session_id, PROMPT)
        assert view.status == "waiting", view
        assert 0 < len(view.interactions) <= len(self.targets), view
        assert {i.status for i in view.interactions} == {"requested"}, view
        return view

    def approve_all(self, session_id: str, turn_id: str) -> TurnView:
        """Approve what is requested until the turn asks nothing more (one approval per target at most)."""
        view = self.service().get_turn(session_id, turn_id)
        for _ in self.targets:
            for interaction in _requested(view):
                view = self.service().submit_approval(session_id, turn_id, interaction.request_id, APPROVE)
        return view


@pytest.fixture
def table(make_service: Callable[..., Service]) -> Iterator[Callable[[Harness], Any]]:
    """A context manager giving a harness a new, empty table (deleted afterwards)."""
    created: list[str] = []
    client: Any = make_service().store.dynamodb  # type: ignore[attr-defined]

    class Fresh:
        def __init__(self, h: Harness) -> None:
            self.h = h

        def __enter__(self) -> Harness:
            self.h.table = f"fi-{uuid.uuid4().hex[:12]}"
            client.create_table(**create_table_request(self.h.table))
            created.append(self.h.table)
            return self.h

        def __exit__(self, *_: object) -> None:
            client.delete_table(TableName=self.h.table)
            created.remove(self.h.table)

    yield Fresh
    for name in created:
        client.delete_table(TableName=name)


# -- one attempt -------------------------------------------------------------------------------------


@dataclass
class Attempt:
    op: str
    factory: str
    phase: str
    k: int
    call: str = ""
    outcome: str = ""  # "crash" (Crash propagated), "swallowed" (fault fired, the op returned), "clean"
    in_tool: bool = False  # the faulty call was made inside a tool call
    calls: list[str] = field(default_factory=list)  # the AWS calls the operation made
    after_recover: str = ""
    final: str = ""
    ledger: list[str] = field(default_factory=list)
    violations: dict[str, str] = field(default_factory=dict)
    began: float = 0.0  # (the fake clock's time when the attempt began: its session's records are all after)

    def violate(self, code: str, text: str) -> None:
        self.violations.setdefault(code, text)

    def line(self) -> str:
        verdict = "OK"
        if self.violations:
            verdict = "; ".join(f"VIOLATES: {t}" for t in self.violations.values())
        return (
            f"{self.op}[{self.factory}] {self.phase:6} k={self.k:2} {self.call:28} "
            f"{self.outcome + (' in a tool' if self.in_tool else ''):20} "
            f"recover->{self.after_recover:9} final={self.final:9} ledger={self.ledger} {verdict}"
        )


def _check_tree(h: Harness, a: Attempt, session_id: str, turn_id: str, kept: dict[str, Any], ran_before: int) -> Any:
    """What must hold whenever nobody is running the turn. Returns the tree."""
    observer = h.service()
    tree = load(observer.deps, session_id, turn_id)
    root = tree.root
    a.ledger = h.ran[ran_before:]
    twice = {t: n for t in h.targets if (n := a.ledger.count(f"delete {t}")) > 1}
    if twice:
        a.violate("twice", f"ran more than once: {twice}")
    missing = [t for t in h.targets if f"delete {t}" not in a.ledger]
    if root.status == "completed" and missing:
        journal = [i for i in session_items(store_of(observer), session_id) if i.get("entity") == "action"]
        if len(missing) > sum(1 for i in journal if i["status"] == "started"):
            a.violate("never_ran", f"completed, but {missing} never ran and the journal does not say 'unknown'")
    now = {i.request_id: i.response for i in tree.interactions if i.status == "answered"}
    for request_id, response in kept.items():
        if now.get(request_id) != response:
            a.violate("answer_lost", f"recorded answer to {request_id} is now {now.get(request_id)!r}")
    if root.settled:
        unsettled = [c.agent for c in tree.children if not c.settled]
        if unsettled:
            a.violate("children", f"root {root.status} with unsettled children {unsettled}")
    elif root.status == "waiting":
        requested = [i for i in tree.interactions if i.status == "requested"]
        if root.cancel_requested:
            a.violate("half_canceled", "waiting with a cancel request that recover does not finish")
        elif root.open_interactions != len(requested):
            a.violate("open", f"open_interactions={root.open_interactions} but {len(requested)} requested")
        elif not requested:
            a.violate("stuck", "waiting with every interaction answered, and recover did not complete it")
    else:
        a.violate("running", f"still {root.status} after recover with the lease expired")
    return tree


def _check_audit(h: Harness, a: Attempt, session_id: str, tree: Any) -> None:
    """The audit trail holds one decision for each approval answered, none for any other, and for each
    action at most one record that it ran, one where the journal finished it: whatever call failed."""
    observer = h.service()
    # (From the attempt's beginning: every day the range spans is a Query of each of the index's shards.)
    since = datetime.fromtimestamp(a.began, UTC).isoformat()
    records, page = [], None
    while page is None or page.cursor is not None:
        page = observer.audit(None, since=since, after=page.cursor if page else None)
        records += [r for r in page.records if r.session_id == session_id]
    answered = {i.request_id for i in tree.interactions if i.status == "answered"}
    decided = [r.request_id for r in records if r.kind == "decision"]
    if sorted(decided) != sorted(answered):
        a.violate("audit", f"decisions recorded for {sorted(decided)}, answered: {sorted(answered)}")
    journal = [i for i in session_items(store_of(observer), session_id) if i.get("entity") == "action"]
    finished = sorted(request_id_of(i["turn_id"].split("~")[0], i["key"]) for i in journal if i["status"] == "finished")
    ran = sorted(r.request_id for r in records if r.outcome in ("ran", "failed"))
    if ran != finished:
        a.violate("audit_action", f"actions recorded as run: {ran}; finished in the journal: {finished}")


def _client_retry(h: Harness, a: Attempt, session_id: str, turn_id: str, pre: dict[str, Any], root: Any) -> None:
    """The client retries what it asked for; for start_turn, a person then answers the approval."""
    try:
        if a.op == "submit_approval":
            h.service().submit_approval(session_id, pre["turn_id"], pre["request_id"], APPROVE)
        elif a.op == "cancel":
            h.service().cancel(session_id, pre["turn_id"])
        elif a.outcome == "crash":  # a client that got an answer does not retry
            try:
                h.service().start_turn(session_id, PROMPT)
                if not root.settled:
                    a.violate("two_turns", "a second start_turn was accepted while the first is not settled")
            except TurnBusyError:
                if root.settled:
                    a.violate("busy", "start_turn refused after the turn settled")
        if a.op == "start_turn" and root.status == "waiting":
            h.approve_all(session_id, turn_id)
    except ResumableError as error:
        a.violate("retry", f"the client's retry raised {type(error).__name__}: {error}")


def _nothing_was_started(h: Harness, a: Attempt, session_id: str, ran_before: int) -> None:
    """Only start_turn can leave nothing behind, and then nothing at all; its retry starts afresh."""
    assert a.op == "start_turn", a.line()
    assert h.service().store.get_session(session_id) is None, "a session was created without its turn"
    a.after_recover = "no turn"
    retried = h.service().start_turn(session_id, PROMPT)
    final = h.approve_all(session_id, retried.turn_id)
    a.final, a.ledger = final.status, h.ran[ran_before:]
    if (retried.status, final.status) != ("waiting", "completed") or a.ledger != [f"delete {t}" for t in h.targets]:
        a.violate("retry", f"start_turn retried: {retried.status}, approved: {final.status}, ran {a.ledger}")


def run_attempt(
    h: Harness,
    op: str,
    setup: Callable[[Harness, str], dict[str, Any]],
    operation: Callable[[Service, str, dict[str, Any]], TurnView],
    *,
    k: int | None = None,
    phase: str = "before",
    crash_on: Callable[[str], bool] | None = None,
) -> Attempt:
    """Set up, run ``operation`` with a fault, recover, retry as a client would, check."""
    session_id = f"fi-{uuid.uuid4().hex[:12]}"
    a = Attempt(op, h.factory, phase, -1 if k is None else k, began=h.clock.now())
    ran_before = len(h.ran)  # what the set-up runs counts too (a Strands fan-out's first action)
    pre = setup(h, session_id)

    process = h.process()
    faults = Faults(process, k, phase, crash_on)
    result: TurnView | None = None
    try:
        result = operation(process, session_id, pre)
        a.outcome = "swallowed" if faults.fired else "clean"
    except (Crash, AwsError) as error:
        if not _died(error):
            raise
        a.outcome = "crash"
    faults.disarm()
    a.calls = faults.calls
    a.call = (faults.fired or "").partition(": ")[2]
    a.in_tool = faults.fired_in_tool
    assert faults.fired or result is not None
    if a.outcome == "swallowed" and not a.in_tool and a.call not in BEST_EFFORT:
        a.violate("swallowed", "the operation caught the fault and carried on")

    observer = h.service()
    items = session_items(store_of(observer), session_id)
    roots = [i["turn_id"] for i in items if i.get("entity") == "turn" and not i.get("parent_turn_id")]
    if len(roots) > 1:
        a.violate("two_turns", f"{len(roots)} root turns in one session")
    if not roots:
        _nothing_was_started(h, a, session_id, ran_before)
        return a
    turn_id = roots[0]
    # Answers recorded before the operation, and by it (if its write landed), must survive.
    kept = dict(pre.get("answered", {}))
    kept |= {
        i["request_id"]: json.loads(i["response"])
        for i in items
        if i.get("entity") == "interaction" and i["status"] == "answered"
    }

    h.clock.advance(observer.settings.lease_seconds + 1)
    a.after_recover = _recovered(h, session_id, turn_id)
    tree = _check_tree(h, a, session_id, turn_id, kept, ran_before)

    _client_retry(h, a, session_id, turn_id, pre, tree.root)
    final_tree = _check_tree(h, a, session_id, turn_id, kept, ran_before)
    final = final_tree.root
    a.final = final.status
    if tree.root.settled and (final.status, final.version) != (tree.root.status, tree.root.version):
        a.violate("moved", f"settled {tree.root.status} became {final.status} (v{final.version}) on a retry")
    expected = {"submit_approval": "completed", "cancel": "canceled", "start_turn": "completed"}[op]
    if final.status != expected and not (tree.root.settled and op != "submit_approval"):
        a.violate("retry", f"after the client's retry the turn is {final.status}, not {expected}")
    _check_audit(h, a, session_id, final_tree)
    if final.settled:
        again = h.service().recover(session_id, turn_id)
        if again != TurnView.of(final_tree):
            a.violate("moved", f"settled {final.status} changed on recover: now {again.status}, {again.updated_at}")
    return a


def _recovered(h: Harness, session_id: str, turn_id: str) -> str:
    """The turn's status once recovered: by ``recover``, or by the sweeper (twice: a first run the
    lagging index did not show the turn to, then one it does)."""
    if not h.by_sweeper:
        return h.service().recover(session_id, turn_id).status
    h.service().sweep()
    h.service().sweep()
    return h.service().get_turn(session_id, turn_id).status


def sweep(
    h: Harness,
    op: str,
    phase: str,
    setup: Callable[[Harness, str], dict[str, Any]],
    operation: Callable[[Service, str, dict[str, Any]], TurnView],
    table: Callable[[Harness], Any],
) -> list[Attempt]:
    """Count the calls of a clean run, then crash at each of them in turn, each on a new table."""
    with table(h):
        clean = run_attempt(h, op, setup, operation)
    assert clean.outcome == "clean", clean.line()
    assert not clean.violations, clean.line()
    calls = clean.calls
    print(f"\n{op}[{h.factory}] {phase}: {len(calls)} AWS calls in a clean run: {calls}")
    assert len(calls) > 0
    attempts = []
    for k in range(len(calls)):
        with table(h):
            attempt = run_attempt(h, op, setup, operation, k=k, phase=phase)
        print(attempt.line())
        assert attempt.outcome != "clean", f"the fault at call {k} never fired"
        attempts.append(attempt)
    SUMMARY.setdefault(op, {})[f"{h.factory}/{phase}"] = len(attempts)
    return attempts


# -- the operations and their preconditions -----------------------------------------------------------


def _nothing(h: Harness, session_id: str) -> dict[str, Any]:
    return {}


def _waiting(h: Harness, session_id: str) -> dict[str, Any]:
    """A turn paused on its last approval; with two (fan_out), the first is answered already (and, in a
    Strands tree running its calls one after the other, its action ran before the second was asked), so
    the operation answers the last one and the answer given before it must survive."""
    view = h.start(session_id)
    answered: dict[str, Any] = {}
    while True:
        requested = _requested(view)
        if len(view.interactions) == len(h.targets) and len(requested) == 1:
            return {"turn_id": view.turn_id, "request_id": requested[0].request_id, "answered": answered}
        view = h.service().submit_approval(session_id, view.turn_id, requested[0].request_id, APPROVE)
        answered[requested[0].request_id] = APPROVE


def _requested(view: TurnView) -> list[Any]:
    return [i for i in view.interactions if i.status == "requested"]


def _start(process: Service, session_id: str, pre: dict[str, Any]) -> TurnView:
    return process.start_turn(session_id, PROMPT)


def _submit(process: Service, session_id: str, pre: dict[str, Any]) -> TurnView:
    return process.submit_approval(session_id, pre["turn_id"], pre["request_id"], APPROVE)


def _cancel(process: Service, session_id: str, pre: dict[str, Any]) -> TurnView:
    return process.cancel(session_id, pre["turn_id"])


OPERATIONS = {
    "start_turn": (_nothing, _start),
    "submit_approval": (_waiting, _submit),
    "cancel": (_waiting, _cancel),
}
TARGETS = {
    "nested": ["prod-db"],
    "nested_preserving": ["prod-db"],
    "fan_out": ["a-db", "b-db"],
    "strands:nested": ["prod-db"],
    "strands:nested_preserving": ["prod-db"],
    "strands:fan_out_sequential": ["a-db", "b-db"],
}


@pytest.fixture(scope="module", autouse=True)
def _summary() -> Iterator[None]:
    yield
    if SUMMARY:
        totals = ", ".join(f"{op}: {sum(by.values())} boundaries" for op, by in SUMMARY.items())
        print(f"\nfault injection: {totals}")
        for op, by in SUMMARY.items():
            print(f"  {op}: {by}")


@pytest.fixture
def harness(
    request: pytest.FixtureRequest, make_service: Callable[..., Service], clock: FakeClock, ledger: Path
) -> Harness:
    factory: str = request.param
    return Harness(make_service, clock, ledger, factory, TARGETS[factory])


# -- the sweeps ---------------------------------------------------------------------------------------


SWEEPS = [
    # (operation, agent factory, phase): every operation with both boundaries on the nested tree;
    # the other trees before each call (a fault after an S3 put of a new key is no different).
    ("start_turn", "nested", "before"),
    ("start_turn", "nested", "after"),
    ("start_turn", "nested_preserving", "before"),
    ("submit_approval", "nested", "before"),
    ("submit_approval", "nested", "after"),
    ("submit_approval", "nested_preserving", "before"),
    ("submit_approval", "fan_out", "before"),
    ("cancel", "nested", "before"),
    ("cancel", "nested", "after"),
    ("cancel", "nested_preserving", "before"),
    # The same guarantees for Strands Agents SDK trees (tests.strands_factories, run by StrandsTree).
    *[
        (op, f"strands:{factory}", phase)
        for op in ("start_turn", "submit_approval", "cancel")
        for factory in ("nested", "fan_out_sequential")
        for phase in ("before", "after")
    ],
    *[(op, "strands:nested_preserving", "before") for op in ("start_turn", "submit_approval", "cancel")],
]


@pytest.mark.parametrize(("op", "harness", "phase"), SWEEPS, indirect=["harness"])
def test_a_fault_at_every_aws_call_leaves_the_turn_settled_or_resumable_and_the_action_run_at_most_once(
    op: str,
    harness: Harness,
    phase: str,
    table: Callable[[Harness], Any],
    record_property: Callable[[str, object], None],
) -> None:
    setup, operation = OPERATIONS[op]
    attempts = sweep(harness, op, phase, setup, operation, table)
    record_property("boundaries", len(attempts))
    record_property("calls", [a.call for a in attempts])
    assert len(attempts) > 0
    broken = [a for a in attempts if a.violations]
    assert not broken, "guarantees broken at:\n" + "\n".join(a.line() for a in broken)


# The same sweeps while every index read, and every read without ConsistentRead, lags (the embedded AWS's
# lag, resumable.local.lag), the turn recovered by the sweeper, which finds it through its lagging index.
LAGGING_SWEEPS = [("submit_approval", "nested", "after"), ("cancel", "nested", "after")]


@pytest.mark.parametrize(("op", "harness", "phase"), LAGGING_SWEEPS, indirect=["harness"])
def test_a_fault_at_every_aws_call_keeps_every_guarantee_while_the_index_lags(
    op: str, harness: Harness, phase: str, table: Callable[[Harness], Any]
) -> None:
    setup, operation = OPERATIONS[op]
    harness.by_sweeper = True
    stale = LAG.stale_reads
    with lagging(12, seed=54):
        attempts = sweep(harness, op, phase, setup, operation, table)
    assert LAG.stale_reads > stale, "some reads were served while a write was hidden from them"
    assert len(attempts) > 0
    broken = [a for a in attempts if a.violations]
    assert not broken, "guarantees broken at:\n" + "\n".join(a.line() for a in broken)


# -- the bugs the sweeps found, one boundary each (named by what the call is, not by its number) -------


@pytest.mark.parametrize(
    ("op", "harness", "crash_on"),
    [
        ("start_turn", "nested", "dynamodb.GetItem"),  # the sub-agent's look at the lease
        ("submit_approval", "nested", "dynamodb.TransactWriteItems"),  # the journal's begin_action
        ("submit_approval", "nested_preserving", "s3.PutObject"),  # the sub-agent's S3Session save
        # In a Strands tree: a hook's look at the lease, the journal (on a thread of its own), the session save.
        ("start_turn", "strands:nested", "dynamodb.GetItem"),
        ("submit_approval", "strands:nested", "dynamodb.TransactWriteItems"),
        ("submit_approval", "strands:nested_preserving", "s3.PutObject"),
    ],
    indirect=["harness"],
)
def test_an_aws_error_inside_a_tool_call_stops_the_run_instead_of_consuming_the_approval(
    op: str, harness: Harness, crash_on: str, table: Callable[[Harness], Any]
) -> None:
    setup, operation = OPERATIONS[op]
    with table(harness):
        attempt = run_attempt(
            harness, op, setup, operation, crash_on=lambda name: name == crash_on and _inside_a_tool_call()
        )
    print(attempt.line())
    assert attempt.outcome != "clean", "the fault never fired"
    assert attempt.in_tool
    assert attempt.outcome == "crash", attempt.line()
    assert not attempt.violations, attempt.line()


@pytest.mark.parametrize("harness", ["nested"], indirect=True)
def test_recover_finishes_a_cancel_that_died_before_settling_the_tree(
    harness: Harness, table: Callable[[Harness], Any]
) -> None:
    with table(harness):
        attempt = run_attempt(harness, "cancel", _waiting, _cancel, crash_on="dynamodb.TransactWriteItems".__eq__)
    print(attempt.line())
    assert attempt.outcome == "crash", attempt.line()
    assert not attempt.violations, attempt.line()


@pytest.mark.parametrize("harness", ["nested"], indirect=True)
def test_an_answer_to_a_turn_whose_cancel_died_is_refused(
    harness: Harness, table: Callable[[Harness], Any], session_id: str, clock: FakeClock
) -> None:
    with table(harness):
        pre = _waiting(harness, session_id)
        process = harness.process()
        Faults(process, crash_on="dynamodb.TransactWriteItems".__eq__)
        with pytest.raises(AwsError) as died:
            _cancel(process, session_id, pre)
        assert isinstance(died.value.__cause__, Crash)
        clock.advance(process.settings.lease_seconds + 1)
        harness.service().recover(session_id, pre["turn_id"])
        with pytest.raises(GoneError):
            harness.service().submit_approval(session_id, pre["turn_id"], pre["request_id"], APPROVE)
        assert harness.service().get_turn(session_id, pre["turn_id"]).status == "canceled"
        assert executions(harness.ledger) == []


@pytest.mark.parametrize("harness", ["strands:nested"], indirect=True)
def test_an_aws_error_in_a_strands_hook_stops_the_run_with_the_aws_error_as_its_cause(
    harness: Harness, table: Callable[[Harness], Any], session_id: str
) -> None:
    # A model call looks at the lease (a Strands hook); Strands wraps the hook's AwsError in its
    # EventLoopException, and StrandsTree raised the AwsError "from" that wrapper, which replaced the
    # AWS error as its cause (and whose own cause is the AwsError: a cycle).
    with table(harness):
        process = harness.process()
        Faults(process, crash_on=lambda name: name == "dynamodb.GetItem" and _at_a_step_boundary())
        with pytest.raises(AwsError) as died:
            _start(process, session_id, {})
    assert isinstance(died.value.__cause__, Crash), repr(died.value.__cause__)

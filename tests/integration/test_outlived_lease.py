"""A runner that outlived its lease: a frozen process wakes after another took its turn over.

The runner freezes at its approved action; its lease expires; another invocation takes the turn over,
finds the action started and not finished, tells the model its outcome is unknown and settles the
turn; then the frozen runner wakes. What must hold: if it froze before the action ran, the action
never runs (the runner checks its lease right before it); if it froze after the check, a write
fenced by the action's token is refused; if the action had run, its result is recorded as late and
reported, and the settled turn never changes; in every case the turn shows the action among its
actions in doubt with what is known now. A live runner never loses its lease mid-action (a
heartbeat renews it).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from resumable import ActionFencedError, Agent, ScriptedModel, ToolContext, tool
from resumable.config import Settings
from resumable.service import AgentContext, Service, TurnView
from tests import factories
from tests.agents import calls, says
from tests.clock import FakeClock
from tests.factories import executions
from tests.integration.helpers import APPROVE, root_record, session_items, store_of
from tests.patience import HANG_SECONDS, eventually


class Freeze:
    """Stops the calling thread (a runner) until released: a process frozen by the OS."""

    def __init__(self) -> None:
        self.frozen = threading.Event()
        self.thaw = threading.Event()

    def __call__(self, *_: Any, **__: Any) -> None:
        self.frozen.set()
        assert self.thaw.wait(HANG_SECONDS), "never thawed"

    def hold_while_frozen(self, **_: Any) -> None:
        """For another thread of the frozen process: waits for the thaw if the process is frozen."""
        if self.frozen.is_set():
            assert self.thaw.wait(HANG_SECONDS), "never thawed"


@dataclass
class Runner:
    """A call on a thread of its own (the runner that will freeze)."""

    thread: threading.Thread
    outcome: dict[str, Any] = field(default_factory=dict)

    def finished(self) -> TurnView:
        self.thread.join(HANG_SECONDS)
        assert not self.thread.is_alive(), "the runner never finished (a hang)"
        assert "error" not in self.outcome, self.outcome
        turn: TurnView = self.outcome["turn"]
        return turn


@pytest.fixture
def runner_thread() -> Iterator[Callable[[Callable[[], TurnView]], Runner]]:
    runners: list[Runner] = []

    def start(call: Callable[[], TurnView]) -> Runner:
        runner = Runner(threading.Thread(target=lambda: None))

        def run() -> None:
            try:
                runner.outcome["turn"] = call()
            except Exception as error:
                runner.outcome["error"] = error

        runner.thread = threading.Thread(target=run)
        runners.append(runner)
        runner.thread.start()
        return runner

    yield start
    for runner in runners:
        runner.thread.join(HANG_SECONDS)


@pytest.fixture
def freeze(runner_thread: object) -> Iterator[Freeze]:
    """A freeze that is thawed when the test ends, pass or fail (before the runner's thread is joined)."""
    frozen = Freeze()
    yield frozen
    frozen.thaw.set()


def _freeze_after_the_journal_start(service: Service, freeze: Freeze) -> None:
    """Freeze ``service``'s process right after its action journal's start landed in DynamoDB."""
    client = store_of(service).dynamodb

    def note(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["journal_start"] = "#ACTION#" in str(params)

    def after(context: dict[str, Any], **_: Any) -> None:
        if context.get("journal_start"):
            context["journal_start"] = False
            freeze()

    client.meta.events.register("before-call.dynamodb.TransactWriteItems", note)
    client.meta.events.register("after-call.dynamodb.TransactWriteItems", after)


def _events(service: Service, session_id: str) -> list[str]:
    items = session_items(store_of(service), session_id)
    reported = [i for i in items if i.get("entity") == "event" and i["type"] == "Action Reported"]
    return [json.loads(i["detail"])["outcome"] for i in reported]


def _action_entry(service: Service, session_id: str) -> dict[str, Any]:
    [entry] = [i for i in session_items(store_of(service), session_id) if i.get("entity") == "action"]
    return entry


def test_a_runner_frozen_at_its_journal_start_past_its_lease_wakes_and_does_not_run_the_action(
    make_service: Callable[..., Service],
    clock: FakeClock,
    session_id: str,
    ledger: Path,
    runner_thread: Callable[[Callable[[], TurnView]], Runner],
    freeze: Freeze,
) -> None:
    started = make_service("nested").start_turn(session_id, "delete prod-db")
    [interaction] = started.interactions
    frozen = make_service("nested")
    _freeze_after_the_journal_start(frozen, freeze)
    runner = runner_thread(lambda: frozen.submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE))
    assert freeze.frozen.wait(HANG_SECONDS)

    clock.advance(frozen.settings.lease_seconds + 1)
    taken_over = make_service("nested").recover(session_id, started.turn_id)
    assert taken_over.status == "completed"
    [doubt] = taken_over.actions_in_doubt
    assert (doubt.tool, doubt.outcome, doubt.input) == ("delete_record", "unknown", {"name": "prod-db"})
    settled = root_record(store_of(frozen), session_id, started.turn_id)

    freeze.thaw.set()
    runner.finished()
    assert executions(ledger) == [], "the woken runner ran the action after the turn was taken over"
    after = make_service("nested").get_turn(session_id, started.turn_id)
    assert root_record(store_of(frozen), session_id, started.turn_id) == settled, "the settled turn changed"
    [known] = after.actions_in_doubt
    assert (known.outcome, known.result) == ("not_run", None)
    assert _events(frozen, session_id) == ["not_run"]


def test_a_runner_frozen_after_its_action_ran_records_the_result_as_late_and_the_settled_turn_stays(
    make_service: Callable[..., Service],
    clock: FakeClock,
    session_id: str,
    ledger: Path,
    runner_thread: Callable[[Callable[[], TurnView]], Runner],
    monkeypatch: pytest.MonkeyPatch,
    freeze: Freeze,
) -> None:
    started = make_service("fenced").start_turn(session_id, "delete prod-db")
    [interaction] = started.interactions
    monkeypatch.setattr(factories, "while_acting", freeze)
    frozen = make_service("fenced")
    # The whole process freezes: its lease's heartbeat too (its next call waits for the thaw).
    store_of(frozen).dynamodb.meta.events.register("before-call.dynamodb", freeze.hold_while_frozen)
    runner = runner_thread(lambda: frozen.submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE))
    assert freeze.frozen.wait(HANG_SECONDS)  # the action ran, its runner froze before recording it
    monkeypatch.setattr(factories, "while_acting", None)

    clock.advance(make_service().settings.lease_seconds + 1)
    taken_over = make_service("fenced").recover(session_id, started.turn_id)
    assert (taken_over.status, [a.outcome for a in taken_over.actions_in_doubt]) == ("completed", ["unknown"])
    observer = make_service("fenced")
    settled = root_record(store_of(observer), session_id, started.turn_id)

    freeze.thaw.set()
    runner.finished()
    assert [line.split()[:2] for line in executions(ledger)] == [["delete", "prod-db"]], "it ran once"
    assert root_record(store_of(observer), session_id, started.turn_id) == settled, "the settled turn changed"
    [known] = observer.get_turn(session_id, started.turn_id).actions_in_doubt
    assert known.outcome == "finished_late"
    assert known.result == [{"text": "deleted prod-db"}]
    assert _events(observer, session_id) == ["finished_late"]


def test_a_turn_a_cancel_settles_under_a_frozen_runner_shows_its_action_in_doubt_then_what_happened(
    make_service: Callable[..., Service],
    clock: FakeClock,
    session_id: str,
    ledger: Path,
    runner_thread: Callable[[Callable[[], TurnView]], Runner],
    monkeypatch: pytest.MonkeyPatch,
    freeze: Freeze,
) -> None:
    """Nobody took the turn over (so nobody reported the outcome unknown): the cancel settles it
    ``interrupted`` while its action is started, and the Turn still says so."""
    started = make_service("fenced").start_turn(session_id, "delete prod-db")
    monkeypatch.setattr(factories, "while_acting", freeze)
    frozen = make_service("fenced")
    store_of(frozen).dynamodb.meta.events.register("before-call.dynamodb", freeze.hold_while_frozen)
    runner = runner_thread(
        lambda: frozen.submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE)
    )
    assert freeze.frozen.wait(HANG_SECONDS)
    monkeypatch.setattr(factories, "while_acting", None)

    clock.advance(make_service().settings.lease_seconds + 1)
    canceled = make_service("fenced").cancel(session_id, started.turn_id)
    assert canceled.status == "interrupted"
    assert [(a.tool, a.outcome) for a in canceled.actions_in_doubt] == [("delete_record", "unknown")]

    freeze.thaw.set()
    runner.finished()
    [known] = make_service("fenced").get_turn(session_id, started.turn_id).actions_in_doubt
    assert (known.outcome, known.result) == ("finished_late", [{"text": "deleted prod-db"}])


def test_an_action_its_runner_never_ran_is_run_once_by_the_run_that_took_the_turn_over(
    make_service: Callable[..., Service],
    clock: FakeClock,
    session_id: str,
    ledger: Path,
    runner_thread: Callable[[Callable[[], TurnView]], Runner],
    freeze: Freeze,
) -> None:
    """The frozen runner wakes after the takeover took the lease but before it reached the action:
    the runner records ``not_run`` and stops; the takeover then finds ``not_run`` and runs it."""
    started = make_service("nested").start_turn(session_id, "delete prod-db")
    frozen = make_service("nested")
    _freeze_after_the_journal_start(frozen, freeze)
    first = runner_thread(
        lambda: frozen.submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE)
    )
    assert freeze.frozen.wait(HANG_SECONDS)
    clock.advance(frozen.settings.lease_seconds + 1)

    takeover, leased, go_on = make_service("nested"), threading.Event(), threading.Event()

    def pause_after_the_lease(**_: Any) -> None:
        if not leased.is_set():
            leased.set()
            assert go_on.wait(HANG_SECONDS), "never released"

    store_of(takeover).dynamodb.meta.events.register("after-call.dynamodb.UpdateItem", pause_after_the_lease)
    second = runner_thread(lambda: takeover.recover(session_id, started.turn_id))
    assert leased.wait(HANG_SECONDS)
    freeze.thaw.set()
    first.finished()
    assert _action_entry(takeover, session_id)["status"] == "not_run"

    go_on.set()
    done = second.finished()
    assert (done.status, done.actions_in_doubt) == ("completed", [])
    assert executions(ledger) == ["delete prod-db"], "the action ran exactly once"


# -- a write fenced by the action's token -------------------------------------------------------------


def fenced_write(aws: Settings, ledger_table: str, before_write: Callable[[], None]) -> Callable[..., Agent]:
    """An agent whose approved action writes to another DynamoDB table in one transaction with its
    fencing token's condition, as docs/approved-actions.md's example shows."""

    def build(context: AgentContext) -> Agent:
        @tool(approval=True, context=True)
        def delete_record(name: str, context: ToolContext) -> str:
            """Delete a database record."""
            from resumable.aws.clients import client

            token = context.fencing_token
            assert token is not None and token.condition is not None
            before_write()
            dynamodb = client("dynamodb", aws)
            write = {"Put": {"TableName": ledger_table, "Item": {"pk": {"S": name}, "by": {"S": str(token)}}}}
            try:
                dynamodb.transact_write_items(TransactItems=[token.condition, write])  # type: ignore[list-item]
            except dynamodb.exceptions.TransactionCanceledException as error:
                if error.response["CancellationReasons"][0]["Code"] == "ConditionalCheckFailed":
                    raise ActionFencedError(f"the delete of {name} was fenced off") from error
                raise
            return f"deleted {name}"

        return Agent(
            name="orchestrator",
            model=ScriptedModel([calls(("o-1", "delete_record", {"name": "prod-db"})), says("done")]),
            tools=[delete_record],
        )

    return build


@pytest.fixture
def ledger_table(aws: Settings) -> Iterator[str]:
    from resumable.aws.clients import client

    name = f"ledger-{uuid.uuid4().hex[:8]}"
    dynamodb = client("dynamodb", aws)
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    yield name
    dynamodb.delete_table(TableName=name)


def _ledger(aws: Settings, table: str) -> list[str]:
    from resumable.aws.clients import client

    return [i["by"]["S"] for i in client("dynamodb", aws).scan(TableName=table)["Items"]]


def test_a_write_fenced_by_the_token_applies_when_its_run_holds_the_turn(
    make_service: Callable[..., Service], aws: Settings, session_id: str, ledger_table: str
) -> None:
    factory = fenced_write(aws, ledger_table, lambda: None)
    started = make_service(factory).start_turn(session_id, "delete prod-db")
    done = make_service(factory).submit_approval(
        session_id, started.turn_id, started.interactions[0].request_id, APPROVE
    )
    assert (done.status, done.output) == ("completed", "done")
    [written] = _ledger(aws, ledger_table)
    assert written == f"2:{started.interactions[0].interrupt_id}"


def test_a_write_fenced_by_the_token_is_refused_once_a_takeover_reported_the_outcome_unknown(
    make_service: Callable[..., Service],
    aws: Settings,
    clock: FakeClock,
    session_id: str,
    ledger_table: str,
    runner_thread: Callable[[Callable[[], TurnView]], Runner],
    freeze: Freeze,
) -> None:
    """The runner passed its lease check and froze right before its write; a takeover settled the
    turn, telling the model the outcome is unknown; the woken runner's fenced write is refused."""
    frozen_here = {"armed": True}

    def freeze_once() -> None:
        if frozen_here.pop("armed", False):
            freeze()

    factory = fenced_write(aws, ledger_table, freeze_once)
    started = make_service(factory).start_turn(session_id, "delete prod-db")
    frozen = make_service(factory)
    store_of(frozen).dynamodb.meta.events.register("before-call.dynamodb", freeze.hold_while_frozen)
    runner = runner_thread(
        lambda: frozen.submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE)
    )
    assert freeze.frozen.wait(HANG_SECONDS)
    clock.advance(frozen.settings.lease_seconds + 1)
    taken_over = make_service(factory).recover(session_id, started.turn_id)
    assert [a.outcome for a in taken_over.actions_in_doubt] == ["unknown"]

    freeze.thaw.set()
    runner.finished()
    assert _ledger(aws, ledger_table) == [], "a stale attempt's write was applied"
    [known] = make_service(factory).get_turn(session_id, started.turn_id).actions_in_doubt
    assert known.outcome == "not_run"


# -- a live runner --------------------------------------------------------------------------------------


def test_a_live_runner_keeps_its_lease_through_a_long_action_and_nobody_takes_the_turn_over(
    make_service: Callable[..., Service],
    clock: FakeClock,
    session_id: str,
    ledger: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lease = 90.0  # renewed every 30 s of the turn's clock while the action runs
    runner = make_service("fenced", lease_seconds=lease)
    taken: list[TurnView] = []
    problems: list[BaseException] = []

    def renewed_until(at_least: float) -> float | None:
        until = root_record(store_of(runner), session_id, started.turn_id).lease_expires_at or 0.0
        return until if until >= at_least else None

    def long_action(_: Any) -> None:
        """Runs for three leases of the turn's clock; each time the lease would have expired, someone
        tries to move the turn on. (A failure here would become the tool's error: kept for the test.)"""
        try:
            for _ in range(3):
                clock.advance(lease * 0.9)
                eventually(lambda: renewed_until(clock.now() + lease * 0.5), "a renewal by the heartbeat")
                clock.advance(lease * 0.2)  # past the lease as it stood before the renewal
                taken.append(make_service("fenced", lease_seconds=lease).recover(session_id, started.turn_id))
        except BaseException as error:
            problems.append(error)
            raise

    started = runner.start_turn(session_id, "delete prod-db")
    monkeypatch.setattr(factories, "while_acting", long_action)
    done = runner.submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE)
    assert problems == []
    assert [t.status for t in taken] == ["running"] * 3, "another invocation took the turn over mid-action"
    assert (done.status, done.actions_in_doubt) == ("completed", [])
    assert len(executions(ledger)) == 1
    heartbeats = [t for t in threading.enumerate() if t.name == f"lease-{started.turn_id}"]
    assert heartbeats == [], "the lease's heartbeat outlived the action"


def test_an_approved_action_gets_a_fencing_token_whose_lease_grows_with_every_holder(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = make_service("fenced").start_turn(session_id, "delete prod-db")
    done = make_service("fenced").submit_approval(
        session_id, started.turn_id, started.interactions[0].request_id, APPROVE
    )
    assert done.status == "completed"
    [line] = executions(ledger)
    token = line.split()[2]
    lease, _, key = token.partition(":")
    # start_turn held the first lease, the answer's resume took the second.
    assert int(lease) == root_record(store_of(make_service()), session_id, started.turn_id).lease_generation == 2
    assert key == started.interactions[0].interrupt_id, "the key names the approval: the same on every attempt"

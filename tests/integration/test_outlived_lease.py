"""A runner that outlived its lease (issue: a frozen process woke after another had taken its turn over).

The runner freezes at its approved action; its lease expires; another invocation takes the turn over,
finds the action started and not finished, tells the model its outcome is unknown and settles the
turn; then the frozen runner wakes. What must hold: if it froze before the action ran, the action
never runs (the runner checks its lease right before it); if the action had run, its result is
recorded as late and reported, and the settled turn never changes; either way the turn shows the
action among its actions in doubt with what is known now. A live runner never loses its lease
mid-action (a heartbeat renews it), and every action gets a fencing token.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from resumable.service import Service, TurnView
from tests import factories
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


@pytest.fixture
def runner_thread() -> Iterator[Callable[[Callable[[], TurnView]], dict[str, Any]]]:
    """Runs a call on a thread of its own (the runner that will freeze); its outcome lands in a dict."""
    threads: list[threading.Thread] = []

    def start(call: Callable[[], TurnView]) -> dict[str, Any]:
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["turn"] = call()
            except Exception as error:
                outcome["error"] = error

        thread = threading.Thread(target=run)
        threads.append(thread)
        thread.start()
        return outcome

    yield start
    for thread in threads:
        thread.join(HANG_SECONDS)


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


def _events(service: Service, session_id: str) -> list[dict[str, Any]]:
    return [i for i in session_items(store_of(service), session_id) if i.get("entity") == "event"]


def test_a_runner_frozen_at_its_journal_start_past_its_lease_wakes_and_does_not_run_the_action(
    make_service: Callable[..., Service],
    clock: FakeClock,
    session_id: str,
    ledger: Path,
    runner_thread: Callable[[Callable[[], TurnView]], dict[str, Any]],
    freeze: Freeze,
) -> None:
    started = make_service("nested").start_turn(session_id, "delete prod-db")
    [interaction] = started.interactions
    frozen = make_service("nested")
    _freeze_after_the_journal_start(frozen, freeze)
    outcome = runner_thread(
        lambda: frozen.submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE)
    )
    assert freeze.frozen.wait(HANG_SECONDS)

    clock.advance(frozen.settings.lease_seconds + 1)
    taken_over = make_service("nested").recover(session_id, started.turn_id)
    assert taken_over.status == "completed"
    [doubt] = taken_over.actions_in_doubt
    assert (doubt.tool, doubt.outcome, doubt.input) == ("delete_record", "unknown", {"name": "prod-db"})
    settled = root_record(store_of(frozen), session_id, started.turn_id)

    freeze.thaw.set()
    while "turn" not in outcome and "error" not in outcome:
        freeze.frozen.wait(0.05)
    assert "error" not in outcome, outcome
    assert executions(ledger) == [], "the woken runner ran the action after the turn was taken over"
    after = make_service("nested").get_turn(session_id, started.turn_id)
    assert root_record(store_of(frozen), session_id, started.turn_id) == settled, "the settled turn changed"
    [known] = after.actions_in_doubt
    assert (known.outcome, known.result) == ("not_run", None)
    assert [e["type"] for e in _events(frozen, session_id) if e["type"].startswith("action.")] == ["action.not_run"]


def test_a_runner_frozen_after_its_action_ran_records_the_result_as_late_and_the_settled_turn_stays(
    make_service: Callable[..., Service],
    clock: FakeClock,
    session_id: str,
    ledger: Path,
    runner_thread: Callable[[Callable[[], TurnView]], dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    freeze: Freeze,
) -> None:
    started = make_service("fenced").start_turn(session_id, "delete prod-db")
    [interaction] = started.interactions
    monkeypatch.setattr(factories, "while_acting", freeze)
    runner = make_service("fenced")
    # The whole process freezes: its lease's heartbeat too (its next call waits for the thaw).
    store_of(runner).dynamodb.meta.events.register("before-call.dynamodb", freeze.hold_while_frozen)
    outcome = runner_thread(
        lambda: runner.submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE)
    )
    assert freeze.frozen.wait(HANG_SECONDS)  # the action ran, its runner froze before recording it
    monkeypatch.setattr(factories, "while_acting", None)

    clock.advance(make_service().settings.lease_seconds + 1)
    taken_over = make_service("fenced").recover(session_id, started.turn_id)
    assert (taken_over.status, [a.outcome for a in taken_over.actions_in_doubt]) == ("completed", ["unknown"])
    observer = make_service("fenced")
    settled = root_record(store_of(observer), session_id, started.turn_id)

    freeze.thaw.set()
    while "turn" not in outcome and "error" not in outcome:
        freeze.frozen.wait(0.05)
    assert "error" not in outcome, outcome
    assert [line.split()[:2] for line in executions(ledger)] == [["delete", "prod-db"]], "it ran once"
    assert root_record(store_of(observer), session_id, started.turn_id) == settled, "the settled turn changed"
    [known] = observer.get_turn(session_id, started.turn_id).actions_in_doubt
    assert known.outcome == "finished_late"
    assert known.result == [{"text": "deleted prod-db"}]
    assert [e["type"] for e in _events(observer, session_id) if e["type"].startswith("action.")] == [
        "action.finished_late"
    ]


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

    def renewed_until(at_least: float) -> float | None:
        until = root_record(store_of(runner), session_id, started.turn_id).lease_expires_at or 0.0
        return until if until >= at_least else None

    def long_action(_: Any) -> None:
        """Runs for three leases of the turn's clock; each time the lease would have expired, someone
        tries to move the turn on."""
        for _ in range(3):
            clock.advance(lease * 0.9)
            eventually(lambda: renewed_until(clock.now() + lease * 0.5), "a renewal by the heartbeat")
            clock.advance(lease * 0.2)  # past the lease as it stood before the renewal
            taken.append(make_service("fenced", lease_seconds=lease).recover(session_id, started.turn_id))

    started = runner.start_turn(session_id, "delete prod-db")
    monkeypatch.setattr(factories, "while_acting", long_action)
    done = runner.submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE)
    assert [t.status for t in taken] == ["running"] * 3, "another invocation took the turn over mid-action"
    assert (done.status, done.actions_in_doubt) == ("completed", [])
    assert len(executions(ledger)) == 1


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

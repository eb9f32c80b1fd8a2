"""Cancel through the turn tree, and approval expiry, against the embedded AWS.

A waiting tree is settled at once; a running one is told through its record and confirms at its next
step boundary; one whose runner never confirms is settled ``interrupted`` once the lease expires.
Settled turns never change again: late answers get 410 and late commits are rejected.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from resumable.config import Settings
from resumable.exceptions import GoneError, StaleCommitError
from resumable.service import AgentContext, Service, TurnView
from resumable.store import DynamoDBStore
from resumable.store.records import TurnRecord, TurnStatus
from tests import factories
from tests.clock import FakeClock
from tests.factories import executions
from tests.integration.helpers import (
    APPROVE,
    late_commit,
    leased_by_a_dead_runner,
    root_record,
    store_of,
)

LATE_OUTCOMES: list[TurnStatus] = ["completed", "waiting"]
"""What a runner that lost its turn might commit when it wakes up (see ``late_commit``)."""


# -- a waiting tree -------------------------------------------------------------------------------------


@pytest.mark.parametrize("factory", ["fan_out", "three_levels"])
def test_canceling_a_waiting_tree_cancels_the_root_every_child_and_supersedes_every_interaction(
    factory: str, make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = make_service(factory).start_turn(session_id, "delete")
    assert started.status == "waiting"
    assert len(started.children) == 2
    assert {i.status for i in started.interactions} == {"requested"}

    canceled = make_service(factory).cancel(session_id, started.turn_id)

    assert canceled.status == "canceled"
    assert [c.status for c in canceled.children] == ["canceled", "canceled"]
    assert [i.status for i in canceled.interactions] == ["superseded"] * len(started.interactions)
    assert [i.request_id for i in canceled.interactions] == [i.request_id for i in started.interactions]
    assert all(i.response is None for i in canceled.interactions)
    seen = make_service(factory).get_turn(session_id, started.turn_id)
    assert seen == canceled
    assert make_service(factory).list_interactions(session_id, "requested") == []
    assert executions(ledger) == []


def test_canceling_a_child_turn_id_cancels_its_whole_tree(
    make_service: Callable[..., Service], session_id: str
) -> None:
    started = make_service("three_levels").start_turn(session_id, "delete")
    db_admin = next(c for c in started.children if c.agent == "db_admin")

    view = make_service("three_levels").cancel(session_id, db_admin.turn_id)

    assert (view.turn_id, view.status) == (db_admin.turn_id, "canceled")
    root = make_service("three_levels").get_turn(session_id, started.turn_id)
    assert root.status == "canceled"
    assert {c.status for c in root.children} == {"canceled"}
    assert [i.status for i in root.interactions] == ["superseded"]


def test_canceling_frees_the_session_for_its_next_turn(make_service: Callable[..., Service], session_id: str) -> None:
    started = make_service("nested").start_turn(session_id, "delete")
    make_service("nested").cancel(session_id, started.turn_id)
    assert make_service("nested").start_turn(session_id, "delete again").status == "waiting"


def test_an_answer_submitted_after_cancel_is_gone_and_runs_nothing(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = make_service("fan_out").start_turn(session_id, "delete both")
    make_service("fan_out").cancel(session_id, started.turn_id)

    for interaction in started.interactions:
        with pytest.raises(GoneError) as gone:
            make_service("fan_out").submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE)
        assert gone.value.code == "gone"
        assert "superseded" in str(gone.value)
        assert "nothing was answered" in str(gone.value)

    after = make_service("fan_out").get_turn(session_id, started.turn_id)
    assert after.status == "canceled"
    assert [(i.status, i.response) for i in after.interactions] == [("superseded", None), ("superseded", None)]
    assert executions(ledger) == []


def test_an_answer_recorded_before_cancel_stays_recorded_and_never_runs(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = make_service("fan_out").start_turn(session_id, "delete both")
    first, second = started.interactions
    make_service("fan_out").submit_approval(session_id, started.turn_id, first.request_id, APPROVE)

    canceled = make_service("fan_out").cancel(session_id, started.turn_id)
    assert canceled.status == "canceled"
    assert [(i.request_id, i.status) for i in canceled.interactions] == [
        (first.request_id, "answered"),
        (second.request_id, "superseded"),
    ]
    # Replaying the recorded answer is idempotent: it shows the canceled turn and resumes nothing.
    replay = make_service("fan_out").submit_approval(session_id, started.turn_id, first.request_id, APPROVE)
    assert replay == canceled
    assert executions(ledger) == []


# -- a running tree -------------------------------------------------------------------------------------


def test_cancel_during_a_running_resume_stops_it_at_the_next_step_and_it_confirms_canceled(
    make_service: Callable[..., Service],
    aws: Settings,
    session_id: str,
    ledger: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen_while_running: list[TurnView] = []

    def cancel_own_turn(context: AgentContext) -> None:
        seen_while_running.append(make_service("acting_on_itself").cancel(context.session_id, context.turn_id))

    started = make_service("acting_on_itself").start_turn(session_id, "delete prod-db")
    [interaction] = started.interactions
    monkeypatch.setattr(factories, "while_acting", cancel_own_turn)

    done = make_service("acting_on_itself").submit_approval(
        session_id, started.turn_id, interaction.request_id, APPROVE
    )

    # The cancel found the turn running: it could only ask, through the record.
    [asked] = seen_while_running
    assert asked.status == "running"
    # The runner saw the request at its next step boundary, stopped, and confirmed.
    assert (done.status, done.output) == ("canceled", None)
    assert [c.status for c in done.children] == ["canceled"]
    assert [i.status for i in done.interactions] == ["answered"]
    # The action that was running when the cancel came finished; nothing after it ran.
    assert executions(ledger) == ["delete prod-db"]
    assert make_service("acting_on_itself").get_turn(session_id, started.turn_id) == done
    assert make_service("acting_on_itself").cancel(session_id, started.turn_id) == done
    assert make_service("nested").start_turn(session_id, "next").status == "waiting"


def test_a_cancel_that_arrives_while_the_model_thinks_is_confirmed_even_if_the_run_then_pauses(
    make_service: Callable[..., Service], session_id: str, ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[TurnView] = []

    def cancel_once(context: AgentContext) -> None:
        if not asked:
            asked.append(make_service("canceled_while_thinking").cancel(context.session_id, context.turn_id))

    monkeypatch.setattr(factories, "while_acting", cancel_once)
    started = make_service("canceled_while_thinking").start_turn(session_id, "delete prod-db")
    monkeypatch.setattr(factories, "while_acting", None)
    assert [view.status for view in asked] == ["running"]
    assert executions(ledger) == []

    assert started.status == "canceled"
    # The pause was never committed, so nobody was ever asked: no interaction, not even a superseded one.
    assert started.interactions == []
    assert make_service("canceled_while_thinking").get_turn(session_id, started.turn_id) == started
    assert make_service("nested").start_turn(session_id, "next").status == "waiting"
    assert executions(ledger) == []


@pytest.mark.parametrize("late", LATE_OUTCOMES)
def test_a_late_commit_from_the_runner_that_confirmed_the_cancel_is_rejected(
    late: TurnStatus,
    make_service: Callable[..., Service],
    store: DynamoDBStore,
    clock: FakeClock,
    session_id: str,
    ledger: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    leased_during_run: list[TurnRecord] = []

    def cancel_own_turn(context: AgentContext) -> None:
        leased_during_run.append(root_record(store, context.session_id, context.turn_id))
        make_service("acting_on_itself").cancel(context.session_id, context.turn_id)

    started = make_service("acting_on_itself").start_turn(session_id, "delete prod-db")
    monkeypatch.setattr(factories, "while_acting", cancel_own_turn)
    done = make_service("acting_on_itself").submit_approval(
        session_id, started.turn_id, started.interactions[0].request_id, APPROVE
    )
    assert done.status == "canceled"
    [leased] = leased_during_run
    assert leased.status == "running" and leased.lease_owner is not None

    with pytest.raises(StaleCommitError):
        store.commit(late_commit(leased, clock.now(), late))

    after = make_service("nested").get_turn(session_id, started.turn_id)
    assert (after.status, after.output) == ("canceled", None)
    assert after == done
    assert executions(ledger) == ["delete prod-db"]


@pytest.mark.parametrize("settle_with", ["cancel", "recover"])
def test_a_runner_that_never_confirms_is_settled_interrupted_once_its_lease_expires(
    settle_with: str,
    make_service: Callable[..., Service],
    aws: Settings,
    store: DynamoDBStore,
    clock: FakeClock,
    session_id: str,
    ledger: Path,
) -> None:
    started, dead = leased_by_a_dead_runner(make_service(), session_id, clock)

    asked = make_service().cancel(session_id, started.turn_id)
    assert asked.status == "running"
    assert root_record(store, session_id, started.turn_id).cancel_requested

    clock.advance(aws.lease_seconds - 1)
    assert make_service().cancel(session_id, started.turn_id).status == "running"
    assert make_service().recover(session_id, started.turn_id).status == "running"

    clock.advance(2)
    settled = getattr(make_service(), settle_with)(session_id, started.turn_id)

    assert settled.status == "interrupted"
    assert settled.error is not None and "never confirmed" in settled.error
    assert [c.status for c in settled.children] == ["interrupted"]
    assert [i.status for i in settled.interactions] == ["answered"]
    assert executions(ledger) == []
    # The dead runner wakes up and commits: rejected, the turn stays settled.
    for late in LATE_OUTCOMES:
        with pytest.raises(StaleCommitError):
            store.commit(late_commit(dead, clock.now(), late))
    assert make_service().get_turn(session_id, started.turn_id) == settled
    assert make_service().start_turn(session_id, "next").status == "waiting"


def test_a_cancel_recorded_just_before_a_takeover_stops_the_run_before_its_first_step(
    make_service: Callable[..., Service],
    aws: Settings,
    store: DynamoDBStore,
    clock: FakeClock,
    session_id: str,
    ledger: Path,
) -> None:
    started, _ = leased_by_a_dead_runner(make_service("direct"), session_id, clock)
    clock.advance(aws.lease_seconds + 1)
    recoverer = make_service("direct")
    marked: list[TurnRecord | None] = []

    def a_concurrent_cancel_marks_the_tree(**_: Any) -> None:
        # recover has read the tree (no cancel yet); its next call is the takeover's UpdateItem.
        if not marked:
            marked.append(store.request_cancel(session_id, started.turn_id, clock.now()))

    store_of(recoverer).dynamodb.meta.events.register(
        "before-call.dynamodb.UpdateItem", a_concurrent_cancel_marks_the_tree
    )
    recovered = recoverer.recover(session_id, started.turn_id)

    assert [m.status if m else None for m in marked] == ["running"]
    # The takeover is refused (the tree is canceling) and the run never starts: nobody confirmed the cancel.
    assert recovered.status == "interrupted"
    assert recovered.error is not None and "never confirmed" in recovered.error
    assert executions(ledger) == []


# -- cancel again ----------------------------------------------------------------------------------------


def test_canceling_a_waiting_tree_twice_returns_the_same_result(
    make_service: Callable[..., Service], clock: FakeClock, session_id: str
) -> None:
    started = make_service("three_levels").start_turn(session_id, "delete")
    first = make_service("three_levels").cancel(session_id, started.turn_id)
    clock.advance(5)
    second = make_service("three_levels").cancel(session_id, started.turn_id)
    assert first.status == "canceled"
    assert second == first


def test_canceling_an_interrupted_turn_again_returns_the_same_result(
    make_service: Callable[..., Service], aws: Settings, clock: FakeClock, session_id: str
) -> None:
    started, _ = leased_by_a_dead_runner(make_service(), session_id, clock)
    make_service().cancel(session_id, started.turn_id)
    clock.advance(aws.lease_seconds + 1)
    first = make_service().cancel(session_id, started.turn_id)
    clock.advance(5)
    second = make_service().cancel(session_id, started.turn_id)
    assert first.status == "interrupted"
    assert second == first


def test_canceling_a_completed_turn_leaves_it_completed(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = make_service().start_turn(session_id, "delete")
    done = make_service().submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE)
    assert make_service().cancel(session_id, started.turn_id) == done
    assert executions(ledger) == ["delete prod-db"]


# -- approval expiry -------------------------------------------------------------------------------------


def test_an_answer_after_the_interaction_expired_is_gone_and_the_turn_ends_expired(
    make_service: Callable[..., Service], aws: Settings, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    started = make_service().start_turn(session_id, "delete")
    [interaction] = started.interactions
    clock.advance(aws.approval_expiry_seconds + 1)

    with pytest.raises(GoneError) as gone:
        make_service().submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE)

    assert gone.value.code == "gone"
    assert "expired" in str(gone.value)
    assert "nothing was answered" in str(gone.value)
    view = make_service().get_turn(session_id, started.turn_id)
    assert view.status == "expired"
    assert [(i.status, i.response) for i in view.interactions] == [("expired", None)]
    assert [c.status for c in view.children] == ["expired"]
    assert executions(ledger) == []
    # Answering again is still 410, and the session is free for a new turn.
    with pytest.raises(GoneError):
        make_service().submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE)
    assert make_service().start_turn(session_id, "next").status == "waiting"


def test_an_answer_just_before_the_expiry_is_accepted(
    make_service: Callable[..., Service], aws: Settings, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    started = make_service().start_turn(session_id, "delete")
    clock.advance(aws.approval_expiry_seconds - 1)
    done = make_service().submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE)
    assert done.status == "completed"
    assert executions(ledger) == ["delete prod-db"]


@pytest.mark.parametrize("look_with", ["get_turn", "recover"])
def test_a_turn_whose_interaction_expired_unanswered_shows_as_expired(
    look_with: str, make_service: Callable[..., Service], aws: Settings, clock: FakeClock, session_id: str
) -> None:
    started = make_service("fan_out").start_turn(session_id, "delete both")
    assert make_service("fan_out").get_turn(session_id, started.turn_id).status == "waiting"
    clock.advance(aws.approval_expiry_seconds + 1)

    view: Any = getattr(make_service("fan_out"), look_with)(session_id, started.turn_id)

    assert view.status == "expired"
    assert [i.status for i in view.interactions] == ["expired", "expired"]
    assert {c.status for c in view.children} == {"expired"}
    assert make_service("fan_out").get_turn(session_id, started.turn_id) == view

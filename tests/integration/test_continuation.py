"""A turn longer than one invocation's budget is checkpointed before a tool call, committed
``running`` and continued by another invocation, until it pauses or ends."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from resumable.clock import FakeClock
from resumable.exceptions import StoreError
from resumable.service import Service
from resumable.store import DynamoDBStore
from tests.factories import executions
from tests.integration.helpers import APPROVE, at_once


def continuable(
    make_service: Callable[..., Service],
    requested: list[tuple[str, str]],
    budget: float = 0,
    factory: str = "looks_then_deletes",
) -> Service:
    """A service (a new 'process') whose checkpointed turns are continued by whoever reads ``requested``."""
    service = make_service(factory, turn_budget_seconds=budget)
    service.continuation = lambda session_id, turn_id: requested.append((session_id, turn_id))
    return service


def test_a_turn_over_budget_is_checkpointed_and_continued_until_it_pauses_then_completes(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    requested: list[tuple[str, str]] = []
    started = continuable(make_service, requested).start_turn(session_id, "delete the prod-db record")
    # db_admin's first tool call (look_up) ran; its second (delete_record) was checkpointed before it ran.
    assert (started.status, started.interactions, started.output) == ("running", [], None)
    assert [c.status for c in started.children] == ["running"]
    assert requested == [(session_id, started.turn_id)]

    continued = continuable(make_service, requested).recover(session_id, started.turn_id)
    assert continued.status == "waiting"  # delete_record ran up to its approval
    assert [i.reason["tool"] for i in continued.interactions] == ["delete_record"]
    assert [c.status for c in continued.children] == ["waiting"]
    assert len(requested) == 1 and executions(ledger) == []

    done = continuable(make_service, requested).submit_approval(
        session_id, started.turn_id, continued.interactions[0].request_id, APPROVE
    )
    assert (done.status, done.output) == ("completed", "The record is gone.")
    assert executions(ledger) == ["delete prod-db"]
    assert len(requested) == 1


def test_within_budget_nothing_is_checkpointed(make_service: Callable[..., Service], session_id: str) -> None:
    requested: list[tuple[str, str]] = []
    started = continuable(make_service, requested, budget=15).start_turn(session_id, "delete the prod-db record")
    assert started.status == "waiting" and requested == []


def test_a_run_past_its_budget_on_the_clock_checkpoints_at_its_next_tool_call(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    requested: list[tuple[str, str]] = []
    service = continuable(make_service, requested, budget=10)
    model = service.factory

    def slow_thinking(context: object) -> object:
        agent = model(context)  # type: ignore[arg-type]
        inner = agent.model
        original = inner.converse

        def converse(*args: object) -> object:
            clock.advance(11)
            return original(*args)

        inner.converse = converse  # type: ignore[method-assign]
        return agent

    service.factory = slow_thinking  # type: ignore[assignment]
    assert service.start_turn(session_id, "delete the prod-db record").status == "running"
    assert len(requested) == 1


def test_canceling_a_checkpointed_turn_settles_it_canceled_and_its_continuation_does_nothing(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    requested: list[tuple[str, str]] = []
    started = continuable(make_service, requested).start_turn(session_id, "delete the prod-db record")
    canceled = make_service().cancel(session_id, started.turn_id)
    assert canceled.status == "canceled"
    assert [c.status for c in canceled.children] == ["canceled"]
    after = continuable(make_service, requested).recover(session_id, started.turn_id)
    assert after.status == "canceled" and executions(ledger) == []


def test_duplicate_continuations_advance_the_turn_once(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    """Lambda may deliver an asynchronous invocation more than once: the lease lets one of them run."""
    requested: list[tuple[str, str]] = []
    started = continuable(make_service, requested).start_turn(session_id, "delete the prod-db record")
    assert started.status == "running"
    outcomes = at_once([lambda: continuable(make_service, requested).recover(session_id, started.turn_id)] * 4)
    assert all(not isinstance(o, Exception) for o in outcomes), outcomes
    now = make_service().get_turn(session_id, started.turn_id)
    assert now.status == "waiting" and len(now.interactions) == 1
    done = make_service().submit_approval(session_id, started.turn_id, now.interactions[0].request_id, APPROVE)
    assert done.status == "completed"
    assert executions(ledger) == ["delete prod-db"]


def test_a_continuation_that_cannot_be_requested_leaves_the_turn_running_for_recover(
    make_service: Callable[..., Service], session_id: str, store: DynamoDBStore
) -> None:
    service = make_service("looks_then_deletes", turn_budget_seconds=0)

    def unreachable(session_id: str, turn_id: str) -> None:
        raise StoreError("Lambda is unreachable")

    service.continuation = unreachable
    started = service.start_turn(session_id, "delete the prod-db record")
    assert started.status == "running"
    tree = store.load_tree(session_id, started.turn_id)
    assert tree is not None and tree.root.lease_owner is None
    assert make_service().recover(session_id, started.turn_id).status == "waiting"


@pytest.mark.parametrize(
    ("factory", "actions"),
    [
        ("looks_then_deletes", ["delete prod-db"]),
        ("fan_out", ["delete a-db", "delete b-db"]),  # a checkpoint beside a question: answered with it
        ("three_levels", ["delete prod-db"]),
    ],
)
def test_checkpoints_in_wider_and_deeper_trees_still_run_every_approved_action_once(
    make_service: Callable[..., Service], session_id: str, ledger: Path, factory: str, actions: list[str]
) -> None:
    requested: list[tuple[str, str]] = []

    def service() -> Service:
        return continuable(make_service, requested, factory=factory)

    turn = service().start_turn(session_id, "delete them")
    questions = 0
    for _ in range(20):
        if turn.status == "running":
            turn = service().recover(session_id, turn.turn_id)
        elif turn.status == "waiting":
            open_ones = [i for i in turn.interactions if i.status == "requested"]
            questions += len(open_ones)
            turn = service().submit_approval(session_id, turn.turn_id, open_ones[0].request_id, APPROVE)
        else:
            break
    assert turn.status == "completed"
    assert sorted(executions(ledger)) == actions
    assert questions == len(actions)  # asked one at a time (budget 0), each once

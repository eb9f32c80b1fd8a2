"""A turn longer than one invocation's budget is checkpointed before a tool call, committed
``running`` and continued by another invocation, until it pauses or ends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from resumable import Agent, ScriptedModel
from resumable.config import Settings
from resumable.exceptions import AwsError
from resumable.local.functions import function_arn
from resumable.service import AgentContext, Service
from resumable.store import DynamoDBStore
from tests.agents import calls, says
from tests.clock import FakeClock
from tests.deployed import continued_through_lambda
from tests.factories import executions, looks_then_deletes
from tests.integration.helpers import APPROVE, answered_but_not_resumed, at_once, leased_by_a_dead_runner
from tests.integration.test_unloadable_snapshot import Breakage
from tests.patience import HANG_SECONDS


def continuable(
    make_service: Callable[..., Service],
    requested: list[tuple[str, str]],
    budget: float = 0,
    factory: str = "looks_then_deletes",
) -> Service:
    """A service (a new 'process') whose checkpointed turns are continued by whoever reads ``requested``."""
    service = make_service(factory, turn_budget_seconds=budget)
    return service.continued_by(lambda session_id, turn_id: requested.append((session_id, turn_id)))


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
    model = service.deps.factory

    def slow_thinking(context: object) -> object:
        agent = model(context)  # type: ignore[arg-type]
        inner = agent.model
        original = inner.converse

        def converse(*args: object) -> object:
            clock.advance(11)
            return original(*args)

        inner.converse = converse  # type: ignore[method-assign]
        return agent

    service = Service.of(replace(service.deps, factory=slow_thinking))  # type: ignore[arg-type]
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
        raise AwsError("Lambda is unreachable")

    service = service.continued_by(unreachable)
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


def test_a_checkpoint_in_a_stored_turn_that_cannot_be_loaded_waits_instead_of_looping(
    make_service: Callable[..., Service], session_id: str, aws: Settings
) -> None:
    """Continuing cannot apply the checkpoint (db_admin's stored turn is from an unknown schema): the
    turn waits, saying why, and asks for no further continuation; repaired, recover continues it."""
    requested: list[tuple[str, str]] = []
    started = continuable(make_service, requested).start_turn(session_id, "delete the prod-db record")
    breakage = Breakage(aws, session_id, started.turn_id)
    breakage.old_stored_sub_agent_turn()

    stuck = continuable(make_service, requested).recover(session_id, started.turn_id)
    assert stuck.status == "waiting" and stuck.error is not None and "could not be continued" in stuck.error
    assert len(requested) == 1  # only the first checkpoint's
    assert continuable(make_service, requested).get_turn(session_id, started.turn_id).status == "waiting"
    assert len(requested) == 1  # a turn stuck on a problem is not continued again by reading it

    breakage.repair()
    assert continuable(make_service, requested).recover(session_id, started.turn_id).status == "waiting"
    assert [i.reason["tool"] for i in make_service().get_turn(session_id, started.turn_id).interactions] == [
        "delete_record"
    ]


@pytest.mark.parametrize("how", ["continuation lost", "runner died", "resume lost"])
def test_reading_a_stalled_turn_requests_its_continuation(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, store: DynamoDBStore, how: str
) -> None:
    """Nothing else calls recover: a client polling the turn (or the workflow's ReadTurn) moves it on."""
    lost: list[tuple[str, str]] = []
    if how == "continuation lost":
        turn = continuable(make_service, lost).start_turn(session_id, "delete the prod-db record")
        assert turn.status == "running"
    elif how == "runner died":
        turn, _ = leased_by_a_dead_runner(make_service("looks_then_deletes"), session_id, clock)
        assert make_service().get_turn(session_id, turn.turn_id).status == "running"
        clock.advance(200)  # its lease expires
    else:
        turn = answered_but_not_resumed(make_service("looks_then_deletes"), session_id, clock)
    requested: list[tuple[str, str]] = []
    if how != "runner died":  # the invocation that will move it on may just be starting: give it time
        continuable(make_service, requested, budget=15).get_turn(session_id, turn.turn_id)
        assert requested == []
        clock.advance(Settings().stall_seconds)
    seen = continuable(make_service, requested, budget=15).get_turn(session_id, turn.turn_id)
    assert requested == [(session_id, turn.turn_id)], seen.status
    continued = continuable(make_service, []).recover(session_id, turn.turn_id)
    assert continued.status in ("waiting", "completed")


def test_reading_a_turn_that_is_moving_requests_nothing(make_service: Callable[..., Service], session_id: str) -> None:
    requested: list[tuple[str, str]] = []
    waiting = make_service("looks_then_deletes").start_turn(session_id, "delete the prod-db record")
    continuable(make_service, requested).get_turn(session_id, waiting.turn_id)
    assert requested == []  # waiting for a person


def test_a_canceled_turn_whose_runner_died_is_settled_by_reading_it(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    turn, _ = leased_by_a_dead_runner(make_service("looks_then_deletes"), session_id, clock)
    assert make_service().cancel(session_id, turn.turn_id).status == "running"  # told; its runner must confirm
    clock.advance(200)
    assert make_service().get_turn(session_id, turn.turn_id).status == "interrupted"


def test_a_sub_agent_that_keeps_its_turn_only_in_memory_is_never_checkpointed(
    make_service: Callable[..., Service], session_id: str
) -> None:
    """Its paused turn would not survive the rebuild a continuation is: it runs on to its question
    instead (look_up, then delete_record's approval) rather than being checkpointed before the
    second tool call."""

    def in_memory(context: AgentContext) -> Agent:
        db_admin = looks_then_deletes(context).tools["db_admin"].agent  # type: ignore[attr-defined]
        return Agent(
            name="orchestrator",
            model=ScriptedModel([calls(("o-1", "db_admin", {"prompt": "delete prod-db"})), says("gone")]),
            tools=[db_admin.as_tool(preserve_context=True)],
        )

    requested: list[tuple[str, str]] = []
    service = make_service(in_memory, turn_budget_seconds=0)
    service = service.continued_by(lambda s, t: requested.append((s, t)))
    started = service.start_turn(session_id, "delete the prod-db record")
    assert (started.status, [i.name for i in started.interactions], requested) == ("waiting", ["approval"], [])


def test_deployed_an_answer_whose_run_goes_over_budget_invokes_submit_approval_to_go_on(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    """SubmitApproval continues what it checkpoints by invoking CONTINUE_FUNCTION, itself: the first
    deletion approved and run, the second is checkpointed before it asks."""
    service = make_service(
        "deletes_twice", turn_budget_seconds=60, continue_function=function_arn("SubmitApprovalFunction")
    )
    started = service.start_turn(session_id, "delete a-db and b-db")
    assert started.status == "waiting"
    over_budget = make_service(
        "deletes_twice", turn_budget_seconds=0, continue_function=function_arn("SubmitApprovalFunction")
    )
    with continued_through_lambda(over_budget.settings) as (continuation, asked, lambdas):
        answered = over_budget.continued_by(continuation).submit_approval(
            session_id, started.turn_id, started.interactions[0].request_id, APPROVE
        )
        assert lambdas.wait(HANG_SECONDS), "the invocation never finished (a hang)"
    assert (answered.status, executions(ledger)) == ("running", ["delete a-db"])
    assert asked == [(session_id, started.turn_id)]

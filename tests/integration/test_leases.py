"""Leases against the embedded AWS, on an injected clock (no sleeps): expiry, takeover, and what an
invocation that lost its lease can still do (nothing). DESIGN.md guarantee 3, and the 409 of start-turn
while a session's turn is unsettled.

A "dead runner" is an invocation that took the lease and vanished: the tests take the lease through the
store as that runner would, or let a real run crash with an exception nothing catches.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from resumable import Agent, ScriptedModel, tool
from resumable.config import Settings
from resumable.exceptions import LeaseLostError, StaleCommitError, TurnBusyError
from resumable.service import AgentContext, Service
from resumable.service.advancing.journal import UNKNOWN_OUTCOME
from resumable.service.agent_factory import AgentFactory
from resumable.service.views import TurnView
from resumable.store import DynamoDBStore
from resumable.store.records import TurnRecord
from tests.agents import calls, says
from tests.clock import FakeClock
from tests.factories import LEDGER_ENV, executions
from tests.integration.helpers import (
    APPROVE,
    DEAD_RUNNER,
    answered_but_not_resumed,
    at_once,
    late_commit,
    leased_by_a_dead_runner,
    root_record,
    session_items,
    store_of,
    table_and_bucket,
)

# -- expiry and takeover -----------------------------------------------------------------------------------------


def test_recover_leaves_a_leased_turn_alone_until_the_lease_expires_then_takes_it_over_and_runs_the_action_once(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, ledger: Path
) -> None:
    service = make_service()
    started, leased = leased_by_a_dead_runner(service, session_id, clock)
    lease_seconds = service.settings.lease_seconds

    clock.advance(lease_seconds - 1)
    early = make_service().recover(session_id, started.turn_id)
    replay = make_service().submit_approval(
        session_id, started.turn_id, started.interactions[0].request_id, dict(APPROVE)
    )

    assert early.status == "running"
    assert replay.status == "running"
    assert root_record(service.store, session_id, started.turn_id) == leased
    assert executions(ledger) == []

    clock.advance(2)
    taken_over = make_service().recover(session_id, started.turn_id)

    assert (taken_over.status, taken_over.output) == ("completed", "The record is gone.")
    assert [c.status for c in taken_over.children] == ["completed"]
    assert executions(ledger) == ["delete prod-db"]
    again = make_service().recover(session_id, started.turn_id)
    assert (again.status, again.output) == ("completed", "The record is gone.")
    assert executions(ledger) == ["delete prod-db"]


def test_the_store_grants_a_takeover_only_once_the_lease_has_expired_and_only_to_one_taker(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    service = make_service()
    started, leased = leased_by_a_dead_runner(service, session_id, clock)
    store, lease_seconds = service.store, service.settings.lease_seconds

    def take(owner: str, *, takeover: bool) -> TurnRecord | None:
        now = clock.now()
        return store.acquire_lease(session_id, started.turn_id, owner, now, now + lease_seconds, takeover=takeover)

    assert take("second-resumer", takeover=False) is None  # a running turn is not for resuming
    clock.advance(lease_seconds - 1)
    assert take("too-early", takeover=True) is None
    assert root_record(service.store, session_id, started.turn_id) == leased

    clock.advance(2)
    taken = take("new-runner", takeover=True)
    assert taken is not None
    assert (taken.status, taken.lease_owner, taken.lease_expires_at) == (
        "running",
        "new-runner",
        clock.now() + lease_seconds,
    )
    assert take("late-taker", takeover=True) is None  # the new runner's lease is live
    assert root_record(service.store, session_id, started.turn_id).lease_owner == "new-runner"


def test_a_runner_whose_lease_was_taken_over_can_neither_commit_nor_renew_nor_check_nor_release(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, ledger: Path
) -> None:
    service = make_service()
    started, stale = leased_by_a_dead_runner(service, session_id, clock)
    store, lease_seconds = service.store, service.settings.lease_seconds
    clock.advance(lease_seconds + 1)
    now = clock.now()
    taken = store.acquire_lease(session_id, started.turn_id, "new-runner", now, now + lease_seconds, takeover=True)
    assert taken is not None
    # The takeover moved only the lease: the version and status the old runner expects are still there, so
    # only the lease owner tells the two runners apart.
    assert (taken.version, taken.status) == (stale.version, stale.status)

    with pytest.raises(StaleCommitError):
        store.commit(late_commit(stale, now))
    with pytest.raises(LeaseLostError):
        store.renew_lease(stale, DEAD_RUNNER, now, now + lease_seconds)
    with pytest.raises(LeaseLostError):
        store.check_lease(stale, DEAD_RUNNER)
    with pytest.raises(LeaseLostError):
        store.release_lease(stale, DEAD_RUNNER, "waiting", now)
    assert root_record(service.store, session_id, started.turn_id) == taken
    assert store.check_lease(taken, "new-runner") is False, "held, and no cancel asked for"
    assert store.renew_lease(taken, "new-runner", now, now + lease_seconds).lease_owner == "new-runner"

    # The new runner vanishes too; once its lease expires the turn is recovered and the action runs once.
    clock.advance(lease_seconds + 1)
    done = make_service().recover(session_id, started.turn_id)
    assert (done.status, done.output) == ("completed", "The record is gone.")
    assert executions(ledger) == ["delete prod-db"]


def test_a_runner_looking_at_its_lease_learns_of_a_cancel_and_writes_nothing(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    service = make_service()
    started, leased = leased_by_a_dead_runner(service, session_id, clock)
    store = service.store
    assert store.check_lease(leased, DEAD_RUNNER) is False
    assert store.request_cancel(session_id, started.turn_id, clock.now()) is not None
    before = root_record(store, session_id, started.turn_id)
    assert store.check_lease(leased, DEAD_RUNNER) is True
    assert root_record(store, session_id, started.turn_id) == before, "a look writes nothing"


# -- real runs that crash or are overtaken -----------------------------------------------------------------------


class Crash(BaseException):
    """The process dies here: nothing after it runs and no handler catches it."""


def crashing_orchestrator(crashes: list[str]) -> AgentFactory:
    """An orchestrator whose approved action takes effect (a ledger line), then crashes while ``crashes``
    has entries left."""

    @tool(approval=True)
    def delete_record(name: str) -> str:
        """Delete a database record."""
        with open(os.environ[LEDGER_ENV], "a") as ledger:
            ledger.write(f"delete {name}\n")
        if crashes:
            raise Crash(crashes.pop())
        return f"deleted {name}"

    def factory(context: AgentContext) -> Agent:
        return Agent(
            name="orchestrator",
            model=ScriptedModel([calls(("o-1", "delete_record", {"name": "prod-db"})), says("done")]),
            tools=[delete_record],
        )

    return factory


def test_a_turn_whose_runner_crashed_inside_an_approved_action_is_taken_over_after_expiry_without_rerunning_it(
    make_service: Callable[..., Service], aws: Settings, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    factory = crashing_orchestrator(["the process died right after the action took effect"])
    started = make_service(factory).start_turn(session_id, "delete the prod-db record")
    request_id = started.interactions[0].request_id

    with pytest.raises(Crash):
        make_service(factory).submit_approval(session_id, started.turn_id, request_id, dict(APPROVE))

    assert executions(ledger) == ["delete prod-db"]
    lease_seconds = aws.lease_seconds
    clock.advance(lease_seconds - 1)
    assert make_service(factory).recover(session_id, started.turn_id).status == "running"

    clock.advance(2)
    done = make_service(factory).recover(session_id, started.turn_id)

    assert (done.status, done.output) == ("completed", "done")
    assert executions(ledger) == ["delete prod-db"]
    # The model was told the action's outcome is unknown rather than given a second run.
    service = make_service(factory)
    session = service.store.get_session(session_id)
    assert session is not None
    assert session.snapshot_key is not None
    messages = service.snapshots.get(session.snapshot_key)["messages"]
    results = [block["toolResult"] for m in messages for block in m["content"] if "toolResult" in block]
    assert results == [{"toolUseId": "o-1", "status": "error", "content": [{"text": UNKNOWN_OUTCOME}]}]


class Interleaved:
    """A scripted model that, the first time any build of it is asked for reply ``at``, first lets
    ``meanwhile`` run: what another invocation does while this one waits on its model."""

    def __init__(self, replies: list[dict[str, Any]], at: int, meanwhile: Callable[[], None], fired: list[int]) -> None:
        self.scripted = ScriptedModel(replies)
        self.at = at
        self.meanwhile = meanwhile
        self.fired = fired

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        if not self.fired and sum(1 for m in messages if m.get("role") == "assistant") == self.at:
            self.fired.append(self.at)
            self.meanwhile()
        return self.scripted.converse(messages, system_prompt, tool_specs)


def overtaken_orchestrator(
    make_service: Callable[..., Service], clock: FakeClock, at: int
) -> tuple[AgentFactory, list[TurnRecord]]:
    """orchestrator: look the record up, delete it (approval), say done. While the first invocation waits for
    its model's reply ``at``, its lease expires and another invocation recovers the turn; the root turn as
    that one left it is appended to the returned list."""
    fired: list[int] = []
    taken_over: list[TurnRecord] = []

    @tool
    def look_up(name: str) -> str:
        """Look a database record up."""
        return f"{name} exists"

    @tool(approval=True)
    def delete_record(name: str) -> str:
        """Delete a database record."""
        with open(os.environ[LEDGER_ENV], "a") as ledger:
            ledger.write(f"delete {name}\n")
        return f"deleted {name}"

    def factory(context: AgentContext) -> Agent:
        def take_over() -> None:
            rebuilt = make_service(factory)
            clock.advance(rebuilt.settings.lease_seconds + 1)
            rebuilt.recover(context.session_id, context.turn_id)
            taken_over.append(root_record(rebuilt.store, context.session_id, context.turn_id))

        script = [
            calls(("o-1", "look_up", {"name": "prod-db"})),
            calls(("o-2", "delete_record", {"name": "prod-db"})),
            says("done"),
        ]
        return Agent(
            name="orchestrator", model=Interleaved(script, at, take_over, fired), tools=[look_up, delete_record]
        )

    return factory, taken_over


def test_a_runner_overtaken_mid_run_stops_at_its_next_step_and_commits_nothing(
    make_service: Callable[..., Service], store: DynamoDBStore, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    factory, taken_over = overtaken_orchestrator(make_service, clock, at=0)
    overtaken = make_service(factory)

    reply = overtaken.start_turn(session_id, "delete the prod-db record")

    # The new runner paused the turn on the approval; the overtaken one stopped before asking for it.
    assert reply.status == "waiting"
    [interaction] = reply.interactions
    assert interaction.reason == {"agent": "orchestrator", "tool": "delete_record", "input": {"name": "prod-db"}}
    assert reply == make_service(factory).get_turn(session_id, reply.turn_id)
    assert [root_record(store, session_id, reply.turn_id)] == taken_over
    snapshots = table_and_bucket(store, session_id).objects
    assert len(snapshots) == 1, "only the new runner may have written a snapshot"
    done = make_service(factory).submit_approval(session_id, reply.turn_id, interaction.request_id, dict(APPROVE))
    assert (done.status, done.output) == ("completed", "done")
    assert executions(ledger) == ["delete prod-db"]


def test_a_runner_overtaken_after_its_last_step_cannot_commit_its_late_result(
    make_service: Callable[..., Service], store: DynamoDBStore, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    factory, taken_over = overtaken_orchestrator(make_service, clock, at=2)
    started = make_service(factory).start_turn(session_id, "delete the prod-db record")
    request_id = started.interactions[0].request_id
    overtaken = make_service(factory)

    # It ran the action, then its lease expired while it waited for its model's final reply, and the new
    # runner finished the turn meanwhile (reusing the action's recorded result). Its own commit is refused,
    # and its caller is shown the turn as the new runner left it.
    reply = overtaken.submit_approval(session_id, started.turn_id, request_id, dict(APPROVE))

    final = make_service(factory).get_turn(session_id, started.turn_id)
    assert (final.status, final.output) == ("completed", "done")
    assert reply == final
    assert executions(ledger) == ["delete prod-db"]
    assert [root_record(store, session_id, started.turn_id)] == taken_over
    assert taken_over[0].lease_owner is None


def test_the_caller_of_a_runner_overtaken_after_its_last_step_is_shown_the_turn_as_it_is(
    make_service: Callable[..., Service], clock: FakeClock, session_id: str, ledger: Path
) -> None:
    factory, _ = overtaken_orchestrator(make_service, clock, at=2)
    started = make_service(factory).start_turn(session_id, "delete the prod-db record")
    request_id = started.interactions[0].request_id

    reply = make_service(factory).submit_approval(session_id, started.turn_id, request_id, dict(APPROVE))

    assert (reply.status, reply.output) == ("completed", "done")


def test_a_recover_that_loses_the_lease_race_reports_the_turn_as_it_is_now(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    started = answered_but_not_resumed(make_service(), session_id, clock)
    rival = make_service()
    loser = make_service()

    def rival_leases_first(**_: Any) -> None:
        # Between the loser's read of the waiting turn and its own acquire_lease, another invocation takes it.
        if rival_took == []:
            now = clock.now()
            rival_took.append(
                rival.store.acquire_lease(
                    session_id, started.turn_id, "rival", now, now + rival.settings.lease_seconds, takeover=False
                )
            )

    rival_took: list[TurnRecord | None] = []
    store_of(loser).dynamodb.meta.events.register("before-call.dynamodb.UpdateItem", rival_leases_first)

    reply = loser.recover(session_id, started.turn_id)

    # The hook fired once and the rival got the lease; the loser reports the turn as the rival holds it.
    assert [(took.status, took.lease_owner) if took else None for took in rival_took] == [("running", "rival")]
    assert reply.status == "running"


# -- 409 while a session's turn is unsettled ---------------------------------------------------------------------


@pytest.mark.parametrize("unsettled", ["waiting", "running"])
def test_start_turn_while_the_session_has_an_unsettled_turn_is_409_naming_it_and_writes_nothing(
    unsettled: str,
    make_service: Callable[..., Service],
    store: DynamoDBStore,
    session_id: str,
    clock: FakeClock,
    ledger: Path,
) -> None:
    service = make_service()
    if unsettled == "waiting":
        started = service.start_turn(session_id, "delete the prod-db record")
    else:
        started, _ = leased_by_a_dead_runner(service, session_id, clock)
    assert service.get_turn(session_id, started.turn_id).status == unsettled
    before = table_and_bucket(store, session_id)
    clock.advance(1)

    with pytest.raises(TurnBusyError) as busy:
        make_service().start_turn(session_id, "and now something else")

    assert busy.value.code == "turn_busy"
    assert started.turn_id in str(busy.value)
    assert table_and_bucket(store, session_id) == before
    assert executions(ledger) == []


def test_concurrent_start_turns_on_a_new_session_start_exactly_one_turn(
    make_service: Callable[..., Service], store: DynamoDBStore, ledger: Path
) -> None:
    session_id = f"s-{uuid.uuid4().hex[:12]}"
    services = [make_service() for _ in range(8)]

    outcomes = at_once(
        [partial(service.start_turn, session_id, f"delete, says {n}") for n, service in enumerate(services)]
    )

    [started] = [outcome for outcome in outcomes if isinstance(outcome, TurnView)]
    refused = [outcome for outcome in outcomes if not isinstance(outcome, TurnView)]
    assert len(refused) == 7
    assert all(isinstance(error, TurnBusyError) for error in refused), refused
    items = session_items(store, session_id)
    roots = [i for i in items if i.get("entity") == "turn" and i.get("parent_turn_id") is None]
    assert [root["turn_id"] for root in roots] == [started.turn_id]
    session = services[0].store.get_session(session_id)
    assert session is not None
    assert session.active_turn_id == started.turn_id


def test_a_client_retrying_its_answer_takes_over_a_resume_whose_runner_vanished(
    make_service: Callable[..., Service], aws: Settings, clock: FakeClock, ledger: Path, session_id: str
) -> None:
    service = make_service("nested")
    started, _ = leased_by_a_dead_runner(service, session_id, clock)
    request = started.interactions[0].request_id
    assert service.submit_approval(session_id, started.turn_id, request, APPROVE).status == "running"
    clock.advance(aws.lease_seconds + 1)
    done = make_service("nested").submit_approval(session_id, started.turn_id, request, APPROVE)
    assert done.status == "completed"
    assert executions(ledger) == ["delete prod-db"]

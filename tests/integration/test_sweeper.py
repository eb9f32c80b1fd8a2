"""The sweeper moves on every turn nobody is moving, found through the index of unsettled turns, with
an injected clock: a runner that died, a checkpoint whose continuation was lost, a question past its
expiry, a cancel whose runner died, an answer whose resume was lost. Bounded, safe to run twice at
once, counted, and it gives up (loudly) on a turn that does not move."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from resumable.aws.stepfunctions import TaskTokens
from resumable.config import Settings
from resumable.exceptions import AwsError
from resumable.local.functions import function_arn
from resumable.service import Service, TurnView
from resumable.service.operating.sweep import ATTEMPTS, STUCK_RECHECK_SECONDS
from resumable.store import DynamoDBStore
from resumable.store.codec import key, root_sk, sharded
from resumable.store.resources import UNSETTLED_INDEX
from tests.clock import FakeClock
from tests.deployed import as_deployed, continued_through_lambda
from tests.factories import executions
from tests.integration.helpers import (
    APPROVE,
    answered_but_not_resumed,
    at_once,
    leased_by_a_dead_runner,
    meet_after_first,
    root_record,
    session_items,
    store_of,
)
from tests.integration.test_unloadable_snapshot import swept_to_the_brink
from tests.metrics import forget_metrics, printed_metrics
from tests.patience import HANG_SECONDS


def _sweeper(make_service: Callable[..., Service], factory: str = "nested", **settings: Any) -> Service:
    """The sweeper's service: a process of its own, with no continuation to ask for (so it moves a
    turn that needs a run on itself, as recover does)."""
    return make_service(factory, **settings)


def _index_entry(store: DynamoDBStore, session_id: str, turn_id: str) -> tuple[str, float] | None:
    """The turn's entry in the sweeper's index: its partition (UNSETTLED, STUCK, EXPIRING: found in
    the session's shard of it) and when it is due, or None."""
    [root] = [i for i in session_items(store, session_id) if i["sk"] == f"TURN#{turn_id}"]
    if "gsi4pk" not in root:
        return None
    partition = root["gsi4pk"].split("#")[0]
    assert root["gsi4pk"] == sharded(partition, session_id, store.shards), "in another shard than its session's"
    return partition, float(root["gsi4sk"])


def _settled_entry(service: Service, session_id: str, turn_id: str) -> bool:
    """Whether the settled turn is in the index as a record whose retention ends when its record says."""
    purge_at = root_record(service.store, session_id, turn_id).purge_at
    return purge_at is not None and _index_entry(store_of(service), session_id, turn_id) == ("EXPIRING", purge_at)


def test_a_turn_whose_runner_died_is_taken_over_once_its_lease_expires(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, ledger: Path
) -> None:
    service = make_service()
    started, leased = leased_by_a_dead_runner(service, session_id, clock)
    assert _index_entry(store_of(service), session_id, started.turn_id) == ("UNSETTLED", leased.lease_expires_at)

    assert _sweeper(make_service).sweep().looked == 0, "a live lease is nobody's business"
    clock.advance(service.settings.lease_seconds + 1)
    report = _sweeper(make_service).sweep()

    assert (report.looked, dict(report.moved)) == (1, {"runner_gone": 1})
    assert service.get_turn(session_id, started.turn_id).status == "completed"
    assert executions(ledger) == ["delete prod-db"]
    assert _settled_entry(service, session_id, started.turn_id), "settled: in the index until its retention ends"


def test_a_checkpointed_turn_whose_continuation_was_lost_is_continued(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    lost: list[tuple[str, str]] = []
    service = make_service("looks_then_deletes", turn_budget_seconds=0).continued_by(lambda s, t: lost.append((s, t)))
    started = service.start_turn(session_id, "delete the prod-db record")
    assert started.status == "running" and lost == [(session_id, started.turn_id)]  # asked for, never run

    assert dict(_sweeper(make_service, "looks_then_deletes").sweep().moved) == {}, "its continuation may be on its way"
    clock.advance(service.settings.stall_seconds)
    report = _sweeper(make_service, "looks_then_deletes").sweep()

    assert dict(report.moved) == {"checkpointed": 1}
    moved = service.get_turn(session_id, started.turn_id)
    assert moved.status == "waiting" and [i.reason["tool"] for i in moved.interactions] == ["delete_record"]


def test_a_question_past_its_expiry_settles_its_turn_expired(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    service = make_service()
    started = service.start_turn(session_id, "delete the prod-db record")
    [asked] = started.interactions
    expiry = service.settings.approval_expiry_seconds
    assert _index_entry(store_of(service), session_id, started.turn_id) == ("UNSETTLED", clock.now() + expiry)

    clock.advance(expiry - 1)
    assert _sweeper(make_service).sweep().looked == 0, "not due before the question expires"
    clock.advance(1)
    report = _sweeper(make_service).sweep()

    assert dict(report.moved) == {"question_expired": 1}
    settled = root_record(service.store, session_id, started.turn_id)
    assert settled.status == "expired"
    assert service.store.get_interaction(session_id, started.turn_id, asked.request_id).status == "expired"  # type: ignore[union-attr]
    kinds = [i["type"] for i in session_items(store_of(service), session_id) if i.get("entity") == "event"]
    assert kinds.count("Interaction Closed") == 1 and kinds.count("Turn Settled") == 1


def test_a_canceled_turn_whose_runner_died_is_settled_interrupted(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, ledger: Path
) -> None:
    service = make_service()
    started, _ = leased_by_a_dead_runner(service, session_id, clock)
    assert service.cancel(session_id, started.turn_id).status == "running", "the runner is told; it never answers"

    clock.advance(service.settings.lease_seconds + 1)
    report = _sweeper(make_service).sweep()

    assert dict(report.moved) == {"cancel_unsettled": 1}
    turn = service.get_turn(session_id, started.turn_id)
    assert (turn.status, [c.status for c in turn.children]) == ("interrupted", ["interrupted"])
    assert executions(ledger) == []


def test_an_answer_whose_resume_was_lost_is_resumed(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, ledger: Path
) -> None:
    service = make_service()
    started = answered_but_not_resumed(service, session_id, clock)
    entry = _index_entry(store_of(service), session_id, started.turn_id)
    assert entry == ("UNSETTLED", clock.now()), "the last answer makes the turn due at once"

    clock.advance(service.settings.stall_seconds)
    report = _sweeper(make_service).sweep()

    assert dict(report.moved) == {"answered_unresumed": 1}
    assert service.get_turn(session_id, started.turn_id).status == "completed"
    assert executions(ledger) == ["delete prod-db"]


def test_a_turn_found_early_is_looked_at_again_when_it_could_need_a_move(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    """A fan-out turn answered in part is due at once (the answer could have been its last); the
    sweeper finds it waiting on the others and sets its next look to their expiry."""
    service = make_service("fan_out")
    started = service.start_turn(session_id, "delete three records")
    first, *others = started.interactions
    assert others
    service.submit_approval(session_id, started.turn_id, first.request_id, APPROVE)

    report = _sweeper(make_service, "fan_out").sweep()

    assert (report.looked, report.not_yet, dict(report.moved)) == (1, 1, {})
    due = _index_entry(store_of(service), session_id, started.turn_id)
    expiry = min(i.expires_at for i in service.store.list_interactions(session_id, "requested"))
    assert due == ("UNSETTLED", expiry)
    assert _sweeper(make_service, "fan_out").sweep().looked == 0


def test_a_run_looks_at_no_more_turns_than_its_limit_the_earliest_due_first(
    make_service: Callable[..., Service], clock: FakeClock
) -> None:
    service = make_service()
    turns = []
    for n in range(5):
        turns.append(service.start_turn(f"s-limit-{n}", "delete the prod-db record"))
        clock.advance(1)
    clock.advance(service.settings.approval_expiry_seconds)

    first = _sweeper(make_service).sweep(limit=2)
    assert (first.looked, dict(first.moved)) == (2, {"question_expired": 2})
    statuses = [root_record(service.store, t.session_id, t.turn_id).status for t in turns]
    assert statuses == ["expired", "expired", "waiting", "waiting", "waiting"]
    second = _sweeper(make_service).sweep(limit=2)
    third = _sweeper(make_service).sweep(limit=2)
    assert (second.looked, third.looked) == (2, 1)
    assert {root_record(service.store, t.session_id, t.turn_id).status for t in turns} == {"expired"}


def test_two_sweepers_at_once_move_each_turn_on_once(
    make_service: Callable[..., Service], clock: FakeClock, ledger: Path
) -> None:
    service = make_service()
    started = [answered_but_not_resumed(service, f"s-twice-{n}", clock) for n in range(4)]
    clock.advance(service.settings.stall_seconds)

    sweepers = [_sweeper(make_service), _sweeper(make_service)]
    meet_after_first(sweepers, "Query")  # both have read the due turns before either moves one
    reports = at_once([sweepers[0].sweep, sweepers[1].sweep])

    assert not [r for r in reports if isinstance(r, Exception)]
    assert sum(sum(r.moved.values()) for r in reports) == 4  # type: ignore[union-attr]
    assert sorted(executions(ledger)) == ["delete prod-db"] * 4
    assert {service.get_turn(t.session_id, t.turn_id).status for t in started} == {"completed"}


def test_a_turn_that_does_not_move_is_given_up_on_counted_and_rejoins_once_repaired(
    make_service: Callable[..., Service],
    session_id: str,
    clock: FakeClock,
    ledger: Path,
    aws: Any,
    capsys: pytest.CaptureFixture[str],
    counting: None,
) -> None:
    service = make_service()
    started, breakage = swept_to_the_brink(make_service, session_id, clock, aws)
    forget_metrics(capsys)
    gave_up = _sweeper(make_service).sweep()

    assert (gave_up.moved, gave_up.given_up, gave_up.stuck) == ({}, 1, 1)
    assert _index_entry(store_of(service), session_id, started.turn_id) == (
        "STUCK",
        clock.now() + STUCK_RECHECK_SECONDS,
    )
    assert printed_metrics(capsys)["StuckTurns"] == [1]
    assert _sweeper(make_service).sweep().looked == 0, "a stuck turn waits for its next try"
    assert executions(ledger) == []

    breakage.repair()
    clock.advance(STUCK_RECHECK_SECONDS)
    tried_again = _sweeper(make_service).sweep()
    assert (dict(tried_again.moved), tried_again.stuck) == ({"answered_unresumed": 1}, 0)
    assert service.get_turn(session_id, started.turn_id).status == "completed"
    assert executions(ledger) == ["delete prod-db"]


def test_its_finds_are_counted_by_why_the_turn_was_stalled(
    make_service: Callable[..., Service],
    session_id: str,
    clock: FakeClock,
    capsys: pytest.CaptureFixture[str],
    counting: None,
) -> None:
    service = make_service()
    service.start_turn(session_id, "delete the prod-db record")
    clock.advance(service.settings.approval_expiry_seconds)
    forget_metrics(capsys)

    _sweeper(make_service).sweep()

    found = printed_metrics(capsys)
    assert found["SweeperFinds{Stall=question_expired}"] == [1]
    assert found["StuckTurns"] == [0]


def test_settled_turns_leave_the_turns_due_a_look(make_service: Callable[..., Service], session_id: str) -> None:
    service = make_service()
    started = service.start_turn(session_id, "delete the prod-db record")
    assert _index_entry(store_of(service), session_id, started.turn_id) is not None
    done: TurnView = service.submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE)
    assert done.status == "completed"
    assert _settled_entry(service, session_id, started.turn_id)


def test_with_a_continuation_to_ask_for_it_asks_rather_than_runs_and_gives_up_if_none_ever_comes(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, ledger: Path
) -> None:
    """On AWS the sweeper does not run turns itself: it asks SubmitApproval to continue each (bounded
    work per run). A continuation that never arrives is asked for again; after ATTEMPTS the turn is
    given up on, and it rejoins the others once a continuation does run it."""
    service = make_service()
    started, _ = leased_by_a_dead_runner(service, session_id, clock)
    clock.advance(service.settings.lease_seconds + 1)
    asked: list[tuple[str, str]] = []

    def sweeper() -> Service:
        return _sweeper(make_service).continued_by(lambda s, t: asked.append((s, t)))

    assert dict(sweeper().sweep().moved) == {"runner_gone": 1}
    assert asked == [(session_id, started.turn_id)] and executions(ledger) == []
    assert sweeper().sweep().looked == 0, "its continuation may be on its way"
    for _ in range(ATTEMPTS - 1):
        clock.advance(service.settings.stall_seconds)
        assert dict(sweeper().sweep().moved) == {"runner_gone": 1}
    clock.advance(service.settings.stall_seconds)
    assert sweeper().sweep().given_up == 1
    assert len(asked) == ATTEMPTS

    assert service.recover(session_id, started.turn_id).status == "completed"  # the continuation, at last
    assert _settled_entry(service, session_id, started.turn_id)
    assert executions(ledger) == ["delete prod-db"]


def test_deployed_it_asks_submit_approval_to_continue_a_stalled_turn_by_invoking_it(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    """The continuation as deployed: an asynchronous Invoke of CONTINUE_FUNCTION, which the sweeper's
    role must allow (tests/unit/test_permissions.py holds it to this call)."""
    service = make_service()
    started, _ = leased_by_a_dead_runner(service, session_id, clock)
    clock.advance(service.settings.lease_seconds + 1)
    sweeper = _sweeper(make_service, continue_function=function_arn("SubmitApprovalFunction"))
    with continued_through_lambda(sweeper.settings) as (continuation, asked, lambdas):
        assert dict(sweeper.continued_by(continuation).sweep().moved) == {"runner_gone": 1}
        assert lambdas.wait(HANG_SECONDS), "the invocation never finished (a hang)"
    assert asked == [(session_id, started.turn_id)]


def test_deployed_it_settles_a_workflows_turn_whose_question_expired_and_tells_the_workflow(
    aws: Settings, clock: FakeClock, session_id: str
) -> None:
    """The turn's task token is read (GetItem) and the workflow told the turn expired."""
    told: list[str] = []

    class StepFunctions:
        """AWS's Step Functions client as the task token reaches it (what it was sent, nothing else)."""

        def send_task_failure(self, taskToken: str, error: str, cause: str) -> None:  # noqa: N803
            told.append(f"{taskToken} {error}")

    settings = aws.model_copy(update={"agent_factory": "tests.factories:nested"})

    def process() -> Service:
        tokens = TaskTokens(settings, StepFunctions())  # type: ignore[arg-type]
        return as_deployed(Service(DynamoDBStore(settings), settings, clock, task_tokens=tokens))

    started = process().start_turn(session_id, "delete the prod-db record", workflow=True)
    DynamoDBStore(settings).dynamodb.update_item(  # what the workflow's own task writes once it waits
        TableName=settings.table_name,
        Key=key(session_id, root_sk(started.turn_id)),
        UpdateExpression="SET task_token = :token",
        ExpressionAttributeValues={":token": {"S": "token-1"}},
    )
    clock.advance(settings.approval_expiry_seconds + 1)

    process().continued_by(lambda s, t: None).sweep()

    assert process().get_turn(session_id, started.turn_id).status == "expired"
    assert told == ["token-1 Turn.Expired"]


@pytest.mark.parametrize("unreadable", ["UNSETTLED", "STUCK", "EXPIRING"])
def test_a_run_that_cannot_read_its_due_turns_does_what_it_can_then_fails(
    make_service: Callable[..., Service],
    session_id: str,
    clock: FakeClock,
    ledger: Path,
    counting: None,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    unreadable: str,
) -> None:
    """A read of the turns due a look, or of the records whose retention ended, fails (throttled past
    botocore's retries): the run looks at the turns it did read, counts the stuck turns, and then
    fails, so that its function's errors alarm and the schedule's next run reads them again."""
    service = make_service()
    started, _ = leased_by_a_dead_runner(service, session_id, clock)
    clock.advance(service.settings.lease_seconds + 1)
    sweeper = _sweeper(make_service)
    slow_down = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}

    def throttled(params: dict[str, Any], **_: Any) -> None:
        # (the reads of the turns due a look and of the records whose retention ended, each a partition of
        # the index read as ``:partition``; the count of the stuck turns reads its own as ``:stuck``)
        partition = params.get("ExpressionAttributeValues", {}).get(":partition", {}).get("S", "")
        if params.get("IndexName") == UNSETTLED_INDEX and partition.split("#")[0] == unreadable:
            raise ClientError(slow_down, "Query")

    sweeper.store.dynamodb.meta.events.register("before-parameter-build.dynamodb.Query", throttled)  # type: ignore[attr-defined]
    forget_metrics(capsys)

    with pytest.raises(AwsError, match="slow down"):
        sweeper.sweep()

    said = "could not end the retention" if unreadable == "EXPIRING" else "could not read the turns due a look"
    assert f"the sweeper {said}" in caplog.text
    assert printed_metrics(capsys)["StuckTurns"] == [0], "counted all the same"
    moved = service.get_turn(session_id, started.turn_id).status == "completed"
    assert moved == (unreadable != "UNSETTLED"), "the turns read before the failing read are looked at"
    assert executions(ledger) == (["delete prod-db"] if moved else [])

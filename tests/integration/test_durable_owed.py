"""A callback the service still owes a durable function is never lost and never blocks the sweep: it
outlives its session's deletion, it is tried later and later while AWS keeps failing and then given up
on (counted), and a turn a stale write left among the sweeper's due turns is put back where it belongs."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from resumable.local import durable_callbacks
from resumable.service import Service
from resumable.service.advancing.callback import CALLBACK_ATTEMPTS
from resumable.store.codec import CALLBACK_GRACE, UNSETTLED, value
from tests.clock import FakeClock
from tests.integration.helpers import as_written_before, session_items, store_of
from tests.metrics import forget_metrics, printed_metrics

PROMPT = "delete the prod-db record"
WORKFLOW = "arn:aws:lambda:us-west-2:123456789012:function:claims-pipeline"


class ServiceException(Exception):  # noqa: N818 (named as Lambda names it: the embedded AWS answers so)
    """Lambda failing, again and again."""


class Failing:
    """Lambda, as the embedded AWS plays it, failing every callback operation (a ServiceException)."""

    def __init__(self) -> None:
        self.calls = 0

    def _fail(self, *_: Any) -> None:
        self.calls += 1
        raise ServiceException("Lambda failed")

    send_callback_success = send_callback_failure = send_callback_heartbeat = _fail


@pytest.fixture
def failing() -> Iterator[Failing]:
    with durable_callbacks.answering(Failing()) as lambda_:
        yield lambda_


def a_callback() -> str:
    return base64.b64encode(uuid.uuid4().bytes).decode()


def _root(service: Service, session_id: str) -> dict[str, Any]:
    return next(i for i in session_items(store_of(service), session_id) if i.get("sk", "").count("#") == 1)


@pytest.mark.parametrize("written", ["now", "as before"])
def test_a_callback_owed_when_its_session_is_deleted_is_still_told_by_the_sweeper(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, failing: Failing, written: str
) -> None:
    """Its turn as this release writes it, and as the release before did (``callback_told`` NULL)."""
    view = make_service().start_turn(session_id, PROMPT, WORKFLOW, callback_id=a_callback())
    make_service().delete_session(session_id, WORKFLOW)  # (cancels the turn; Lambda fails the settling's send)
    if written == "as before":
        as_written_before(store_of(make_service()), session_id)
    assert failing.calls >= 1 and _root(make_service(), session_id).get("callback_told") is None
    assert _root(make_service(), session_id)["gsi4pk"].startswith(UNSETTLED), "still due in the sweeper's index"
    failing.send_callback_failure = lambda *_: None  # type: ignore[method-assign]  # (Lambda is back)
    clock.advance(CALLBACK_GRACE + 1)
    assert make_service().sweep().told == 1
    stored = _root(make_service(), session_id)
    assert stored["callback_told"] == "delivered" and not stored["gsi4pk"].startswith(UNSETTLED), view.turn_id


def test_a_callback_aws_keeps_failing_is_tried_later_and_later_then_given_up_and_counted(
    make_service: Callable[..., Service],
    session_id: str,
    clock: FakeClock,
    failing: Failing,
    counting: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    view = make_service().start_turn(session_id, PROMPT, WORKFLOW, callback_id=a_callback())
    make_service().cancel(session_id, view.turn_id, WORKFLOW)
    forget_metrics(capsys)
    waits = []
    for _ in range(CALLBACK_ATTEMPTS):
        due = float(_root(make_service(), session_id)["gsi4sk"])
        waits.append(round(due - clock.now()))
        clock.advance(due - clock.now() + 1)
        report = make_service().sweep()
        assert report.looked == 1 and report.told == 0
        assert make_service().sweep().looked == 0, "not due again at once: it does not hold up the sweep"
    assert waits[1:] == [60 * 2**n for n in range(1, CALLBACK_ATTEMPTS)], waits
    stored = _root(make_service(), session_id)
    assert stored["callback_told"] == "closed" and not stored["gsi4pk"].startswith(UNSETTLED)
    assert printed_metrics(capsys).get("UndeliveredCallbacks") == [1]


def test_a_settled_turn_a_stale_write_left_among_the_due_is_put_back_under_its_retention(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    view = make_service().start_turn(session_id, PROMPT, WORKFLOW, callback_id=a_callback())
    make_service().cancel(session_id, view.turn_id, WORKFLOW)  # (no execution has the callback: closed)
    settled = _root(make_service(), session_id)
    assert settled["callback_told"] == "closed"
    store = store_of(make_service())
    store.dynamodb.update_item(  # (what a commit computed from a read older than that record writes)
        TableName=store.table,
        Key={"pk": value(settled["pk"]), "sk": value(settled["sk"])},
        UpdateExpression="SET gsi4pk = :due, gsi4sk = :now",
        ExpressionAttributeValues={
            ":due": value(store.sharded(UNSETTLED, session_id)),  # (its shard's: no "#n" for shard 0)
            ":now": value(clock.now()),
        },
    )
    assert make_service().sweep().looked == 1
    assert _root(make_service(), session_id)["gsi4pk"] == settled["gsi4pk"]
    assert make_service().sweep().looked == 0


def test_the_sweeper_leaves_a_callback_to_its_settling_for_a_minute_and_sends_no_more_in_a_run_once_one_failed(
    make_service: Callable[..., Service], clock: FakeClock, failing: Failing
) -> None:
    sessions = [f"s-{uuid.uuid4().hex[:12]}" for _ in range(2)]
    for session_id in sessions:
        view = make_service().start_turn(session_id, PROMPT, WORKFLOW, callback_id=a_callback())
        make_service().cancel(session_id, view.turn_id, WORKFLOW)  # (its send fails: owed)
    sent = failing.calls
    store = store_of(make_service())
    for session_id in sessions:  # (due at once, as an answer or a cancel makes a turn due)
        root = _root(make_service(), session_id)
        store.dynamodb.update_item(
            TableName=store.table,
            Key={"pk": value(root["pk"]), "sk": value(root["sk"])},
            UpdateExpression="SET gsi4sk = :now",
            ExpressionAttributeValues={":now": value(clock.now())},
        )
    report = make_service().sweep()
    assert report.looked == 2 and failing.calls == sent, "settled a moment ago: its settling may still be sending"
    clock.advance(CALLBACK_GRACE + 1)
    report = make_service().sweep()
    assert report.looked == 2 and report.failed == 1 and failing.calls == sent + 1, "one failed: no more this run"
    clock.advance(CALLBACK_GRACE * 2 + 1)
    assert make_service().sweep().looked >= 1 and failing.calls >= sent + 2, "the next run tries again"


def test_a_callback_refused_twice_is_counted_once(
    make_service: Callable[..., Service],
    session_id: str,
    clock: FakeClock,
    counting: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A heartbeat refused while a run holds the turn, then the run's settling (from what it read before)
    sends again and is refused again: one undelivered callback, counted once."""
    from resumable.service.advancing.callback import tell_callback

    forget_metrics(capsys)
    service = make_service()
    view = service.start_turn(session_id, PROMPT, WORKFLOW, callback_id=a_callback(), heartbeat_seconds=300)
    read = store_of(service).load_tree(session_id, view.turn_id)
    assert read is not None and read.root.callback_told is None
    clock.advance(101)
    make_service().sweep()  # (the heartbeat is refused: recorded closed)
    settled = read.model_copy(update={"root": read.root.model_copy(update={"status": "canceled"})})
    assert tell_callback(service.deps, settled) is False
    assert printed_metrics(capsys).get("UndeliveredCallbacks") == [1]

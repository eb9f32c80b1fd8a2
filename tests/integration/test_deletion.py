"""DELETE /sessions/{id} deletes a conversation as its owner expects: it cancels the active work, then
marks the whole tree with one deletion generation, so nothing of it shows in reads, the inbox or
events; restore brings the exact tree back within the retention window, and retention purges it
after. Deleting twice, restoring twice, and deleting while an answer arrives each end in one state."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from resumable.api.app import build_app
from resumable.exceptions import GoneError, NotFoundError, TurnBusyError
from resumable.service import Service, SessionView, TurnView
from resumable.store import DynamoDBStore
from tests.clock import FakeClock
from tests.factories import executions
from tests.integration.helpers import ALICE, APPROVE, at_once, http, meet_after_first, session_items, store_of
from tests.integration.test_snapshot_lifecycle import pointed_at, retired
from tests.patience import HANG_SECONDS

BOB = "arn:aws:iam::111122223333:user/bob"
# The marks a deletion (and a restore) leaves on items, and what a restore sets anew.
MARKS = {
    "deleted_generation",
    "deleting",
    "purge_at",
    "gsi4pk",
    "gsi4sk",
    "deleted_at",
    "deleted_by",
    "deletions",
    "updated_at",
}


def _records(store: DynamoDBStore, session_id: str) -> list[dict[str, Any]]:
    """The session's records (not the outbox), without what deletion and restore change."""
    return [
        {k: v for k, v in item.items() if k not in MARKS}
        for item in session_items(store, session_id)
        if item.get("entity") != "event"
    ]


def _events(store: DynamoDBStore, session_id: str) -> Counter[str]:
    """How many of the session's outbox items there are of each type."""
    return Counter(i["type"] for i in session_items(store, session_id) if i.get("entity") == "event")


def _a_session_with_history(service: Service, session_id: str) -> tuple[TurnView, TurnView]:
    """A completed turn, then a turn waiting on a sub-agent's approval (an active turn with a child)."""
    first = service.start_turn(session_id, "delete the prod-db record", principal=ALICE)
    done = service.submit_approval(session_id, first.turn_id, first.interactions[0].request_id, APPROVE, ALICE)
    assert done.status == "completed"
    waiting = service.start_turn(session_id, "delete the prod-db record again", principal=ALICE)
    assert waiting.status == "waiting" and waiting.children
    return done, waiting


def test_delete_cancels_the_active_turn_then_nothing_of_the_session_shows(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str, clock: FakeClock
) -> None:
    service = make_service("nested_twice", approver_principals=("arn:aws:iam::*:user/approver",))
    done, waiting = _a_session_with_history(service, session_id)
    [question] = waiting.interactions

    deleted = service.delete_session(session_id, ALICE)
    events = _events(store, session_id)

    assert (deleted.deleted, deleted.deletion_generation, deleted.deleted_by) == (True, 1, ALICE)
    assert events == {
        "Interaction Requested": 2,
        "Interaction Answered": 1,
        "Turn Settled": 2,
        "Interaction Closed": 1,  # the cancel withdrew the waiting question
        "Session Deleted": 1,
    }
    assert deleted.restorable_until is not None
    for turn_id in (done.turn_id, waiting.turn_id, waiting.children[0].turn_id):
        with pytest.raises(NotFoundError):
            service.get_turn(session_id, turn_id, ALICE)
    with pytest.raises(NotFoundError):
        service.list_interactions(session_id, None, ALICE)
    with pytest.raises(NotFoundError):
        service.submit_approval(session_id, waiting.turn_id, question.request_id, APPROVE, ALICE)
    with pytest.raises(NotFoundError):
        service.cancel(session_id, waiting.turn_id, ALICE)
    assert service.inbox("arn:aws:iam::1:user/approver").interactions == []
    with pytest.raises(TurnBusyError, match="was deleted"):
        service.start_turn(session_id, "hello", ALICE)
    with pytest.raises(NotFoundError):
        service.delete_session(session_id, BOB)

    items = [i for i in session_items(store, session_id) if i.get("entity") != "event"]
    assert {i.get("deleted_generation") for i in items} == {1}, "one generation on every record"
    purge = clock.now() + service.settings.retention_seconds
    assert {float(i["purge_at"]) for i in items} == {purge}
    assert _events(store, session_id) == events, "nothing of it was published after its deletion"


def test_restore_brings_the_exact_tree_back_and_the_conversation_goes_on(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str, clock: FakeClock, ledger: Path
) -> None:
    service = make_service("nested_twice")
    done, waiting = _a_session_with_history(service, session_id)
    service.cancel(session_id, waiting.turn_id, ALICE)
    before = _records(store, session_id)
    shown = service.get_turn(session_id, done.turn_id, ALICE)

    service.delete_session(session_id, ALICE)
    clock.advance(3600)
    restored = service.restore_session(session_id, ALICE)

    assert (restored.deleted, restored.deletion_generation, restored.restorable_until) == (False, None, None)
    assert _records(store, session_id) == before, "the exact tree"
    assert service.get_turn(session_id, done.turn_id, ALICE) == shown
    assert _events(store, session_id)["Session Restored"] == 1
    again = service.start_turn(session_id, "delete it once more", ALICE)
    assert again.status == "waiting", "the conversation goes on where it was"
    assert executions(ledger) == ["delete prod-db"]


def test_deleting_twice_and_restoring_twice_each_end_in_one_state(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str
) -> None:
    service = make_service("nested_twice")
    _a_session_with_history(service, session_id)

    deleters = [make_service("nested_twice"), make_service("nested_twice")]
    meet_after_first(deleters, "GetItem")  # both have read the session before either deletes it
    first, second = at_once([partial(d.delete_session, session_id, ALICE) for d in deleters])
    again = service.delete_session(session_id, ALICE)
    assert first == second == again
    assert _events(store, session_id)["Session Deleted"] == 1

    restorers = [make_service("nested_twice"), make_service("nested_twice")]
    meet_after_first(restorers, "GetItem")
    restored = at_once([partial(r.restore_session, session_id, ALICE) for r in restorers])
    assert restored[0] == restored[1] == service.restore_session(session_id, ALICE)
    assert _events(store, session_id)["Session Restored"] == 1

    assert service.delete_session(session_id, ALICE).deletion_generation == 2, "a new deletion, a new generation"


@pytest.mark.parametrize("round_number", range(6))
def test_deleting_while_an_answer_arrives_ends_in_one_state(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str, ledger: Path, round_number: int
) -> None:
    service = make_service("nested")
    started = service.start_turn(session_id, "delete the prod-db record", ALICE)
    request = started.interactions[0].request_id

    def delete() -> Any:
        deadline = time.monotonic() + HANG_SECONDS
        while time.monotonic() < deadline:  # a client asks again while the turn's runner stops
            try:
                return make_service("nested").delete_session(session_id, ALICE)
            except TurnBusyError:
                continue
        raise AssertionError("the deletion never finished (a hang)")

    deleted, answered = at_once(
        [delete, lambda: make_service("nested").submit_approval(session_id, started.turn_id, request, APPROVE, ALICE)]
    )

    assert getattr(deleted, "deletion_generation", None) == 1, deleted
    assert isinstance(answered, TurnView | GoneError | NotFoundError | TurnBusyError), answered
    assert len(executions(ledger)) <= 1, "the approved action ran at most once"
    if isinstance(answered, TurnView) and answered.status == "completed":
        assert executions(ledger) == ["delete prod-db"]
    items = [i for i in session_items(store, session_id) if i.get("entity") != "event"]
    assert {i.get("deleted_generation") for i in items} == {1}
    turn = next(i for i in items if i["sk"] == f"TURN#{started.turn_id}")
    assert turn["status"] in ("completed", "canceled")
    assert _events(store, session_id)["Session Deleted"] == 1


def test_retention_purges_a_deleted_session_and_then_it_cannot_be_restored(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str, clock: FakeClock
) -> None:
    service = make_service("nested_twice")
    _a_session_with_history(service, session_id)
    service.delete_session(session_id, ALICE)

    clock.advance(service.settings.retention_seconds - 1)
    assert service.sweep().expired == 0, "kept for the whole window"
    objects, tagged = retired(store, session_id)
    assert objects and not tagged & pointed_at(store, session_id), "not a snapshot a record points at retired early"
    clock.advance(1)
    assert service.sweep().expired == 3, "both turns and the session"

    objects, tagged = retired(store, session_id)
    assert objects and tagged == objects, "every snapshot retired"
    with pytest.raises(NotFoundError):
        service.restore_session(session_id, ALICE)
    assert service.start_turn(session_id, "hello again", ALICE).status == "waiting", "its id starts anew"


def test_a_session_bigger_than_one_transaction_is_deleted_and_restored_whole(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str
) -> None:
    service = make_service("clerks")
    for n in range(10):
        assert service.start_turn(session_id, f"look up {n}", ALICE).status == "completed"
    before = _records(store, session_id)
    assert len(before) > 100

    service.delete_session(session_id, ALICE)
    assert {i.get("deleted_generation") for i in session_items(store, session_id) if i.get("entity") != "event"} == {1}
    service.restore_session(session_id, ALICE)
    assert _records(store, session_id) == before


def _cut_short(service: Service, session_id: str) -> None:
    """Delete the session, the network failing at its second transaction (its first landed)."""
    transactions: list[int] = []

    def second_fails(**_: Any) -> None:
        transactions.append(1)
        if len(transactions) == 2:
            raise ConnectionError("the network went away")

    client: Any = service.store
    client.dynamodb.meta.events.register("before-call.dynamodb.TransactWriteItems", second_fails)
    try:
        with pytest.raises(Exception, match="network went away"):
            service.delete_session(session_id, ALICE)
    finally:
        client.dynamodb.meta.events.unregister("before-call.dynamodb.TransactWriteItems", second_fails)


def _hidden(service: Service, session_id: str, turns: list[TurnView]) -> int:
    hidden = 0
    for turn in turns:
        try:
            service.get_turn(session_id, turn.turn_id, ALICE)
        except NotFoundError:
            hidden += 1
    return hidden


def test_a_deletion_cut_short_is_finished_by_asking_again(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str
) -> None:
    service = make_service("clerks")
    turns = [service.start_turn(session_id, f"look up {n}", ALICE) for n in range(10)]
    _cut_short(service, session_id)

    assert 0 < _hidden(service, session_id, turns) < len(turns), "the first transaction landed, the rest did not"
    with pytest.raises(TurnBusyError, match="was deleted"):
        service.start_turn(session_id, "one more", ALICE)  # no turn begins in a session being deleted
    assert service.delete_session(session_id, ALICE).deleted
    assert {i.get("deleted_generation") for i in session_items(store, session_id) if i.get("entity") != "event"} == {1}
    assert _events(store, session_id)["Session Deleted"] == 1


def test_a_deletion_cut_short_can_be_restored_whole_instead(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str
) -> None:
    service = make_service("clerks")
    turns = [service.start_turn(session_id, f"look up {n}", ALICE) for n in range(10)]
    before = _records(store, session_id)
    assert len(before) > 100
    _cut_short(service, session_id)

    restored = service.restore_session(session_id, ALICE)

    assert not restored.deleted
    assert _hidden(service, session_id, turns) == 0
    assert _records(store, session_id) == before
    assert service.start_turn(session_id, "one more", ALICE).status == "completed"


def test_over_http_delete_and_restore_answer_with_the_session(
    make_service: Callable[..., Service], session_id: str
) -> None:
    service = make_service("nested_twice")
    _a_session_with_history(service, session_id)
    api: APIGatewayHttpResolver = build_app(service)

    status, body = http(api, "DELETE", f"/sessions/{session_id}")
    assert (status, body["deleted"], body["deletionGeneration"]) == (200, True, 1)
    assert set(body) == {
        "sessionId",
        "deleted",
        "deletionGeneration",
        "deletedAt",
        "deletedBy",
        "restorableUntil",
        "purgeAt",
    }
    assert http(api, "DELETE", f"/sessions/{session_id}", principal=BOB)[0] == 404
    assert http(api, "POST", f"/sessions/{session_id}/restore", principal=BOB)[0] == 404
    assert http(api, "GET", f"/sessions/{session_id}/interactions")[0] == 404
    status, body = http(api, "POST", f"/sessions/{session_id}/restore")
    assert (status, body["deleted"]) == (200, False)
    assert http(api, "GET", f"/sessions/{session_id}/interactions")[0] == 200
    assert http(api, "DELETE", "/sessions/no-such-session")[0] == 404
    assert json.loads(json.dumps(body))["sessionId"] == session_id


def test_a_deletion_is_refused_whole_if_a_turn_began_since_the_session_was_read(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str, clock: FakeClock
) -> None:
    """The race a deletion must not lose: a turn that begins between the deletion's read of the session
    and its first write. That write is refused, nothing is marked, and the deletion decides again (it
    cancels the new turn first)."""
    service = make_service("clerks")
    for n in range(10):
        service.start_turn(session_id, f"look up {n}", ALICE)
    seen = store.get_session(session_id)
    assert seen is not None and seen.active_turn_id is None
    clock.advance(1)
    service.start_turn(session_id, "one more", ALICE)

    assert store.begin_deletion(seen, 1, clock.now(), ALICE) is False
    assert {i.get("deleted_generation") for i in session_items(store, session_id) if i.get("entity") != "event"} == {
        None
    }


def test_an_action_that_finishes_after_its_session_was_deleted_is_recorded_and_not_published(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str, clock: FakeClock
) -> None:
    """Its runner lost the turn while the action ran, the turn settled and the session was deleted; the
    action then finishes. Its result is recorded (the journal keeps what happened) and no Action
    Reported event is written: nothing of a deleted session is published after its deletion."""
    from resumable.store.codec import action_sk, key
    from resumable.store.records import ActionRecord
    from tests.integration.helpers import leased_by_a_dead_runner

    service = make_service("nested")
    started, _ = leased_by_a_dead_runner(service, session_id, clock)
    action = ActionRecord(key="a-1", status="started", tool="delete_record", lease_generation=1, started_at=clock.now())
    assert store.begin_action(session_id, started.turn_id, action, "dead-runner", clock.now() + 60) is None
    clock.advance(service.settings.lease_seconds + 1)
    assert service.cancel(session_id, started.turn_id).status == "interrupted"
    assert service.delete_session(session_id).deleted
    events = _events(store, session_id)
    entry = store.dynamodb.get_item(TableName=store.table, Key=key(session_id, action_sk(started.turn_id, "a-1")))
    assert entry["Item"]["deleted_generation"] == {"N": "1"}

    in_time = store.finish_action(session_id, started.turn_id, action, {"content": "gone"}, clock.now(), "dead-runner")

    assert in_time is False
    recorded = store.dynamodb.get_item(TableName=store.table, Key=key(session_id, action_sk(started.turn_id, "a-1")))
    assert (recorded["Item"]["status"], recorded["Item"]["late"]) == ({"S": "finished"}, {"BOOL": True})
    assert _events(store, session_id) == events, "no event after the deletion's"


def test_a_deletion_that_read_the_session_before_another_deleted_it_whole_returns_the_same(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str
) -> None:
    """The second deleter read the session (a turn waiting) just before the first deleted all of it: its
    cancel of that turn finds nothing, and it reads the session again instead of answering 404."""
    service = make_service("nested_twice")
    _a_session_with_history(service, session_id)
    first, late = make_service("nested_twice"), make_service("nested_twice")
    done: list[SessionView] = []

    def the_other_deletes_it_all(**_: Any) -> None:
        if not done:
            done.append(first.delete_session(session_id, ALICE))

    store_of(late).dynamodb.meta.events.register("after-call.dynamodb.GetItem", the_other_deletes_it_all)
    assert late.delete_session(session_id, ALICE) == done[0]
    assert _events(store, session_id)["Session Deleted"] == 1

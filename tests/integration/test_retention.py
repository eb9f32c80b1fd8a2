"""Retention, with an injected clock: a settled turn's records expire RETENTION_DAYS after it settled
(a session's after its last turn settled), the snapshots only they pointed at are retired, and nothing
unsettled ever expires: not a waiting turn, not a journal entry of an action whose turn waits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from resumable.exceptions import NotFoundError
from resumable.service import Service, TurnView
from resumable.store import DynamoDBStore
from tests.clock import FakeClock
from tests.factories import executions
from tests.integration.helpers import APPROVE, root_record, session_items, ttl_deletes_expired
from tests.integration.test_snapshot_lifecycle import pointed_at, retired

DAY = 86400.0
# Questions that wait longer than the retention: an unsettled turn outlives it.
LONG_QUESTIONS = {"approval_expiry_seconds": 90 * 86400}


def _completed(service: Service, session_id: str) -> TurnView:
    started = service.start_turn(session_id, "delete the prod-db record")
    done = service.submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE)
    assert done.status == "completed"
    return done


def _waiting_after_one_action(service: Service, session_id: str) -> TurnView:
    """A turn that ran one approved action and waits on the next: unsettled, with a finished journal entry."""
    started = service.start_turn(session_id, "delete a-db and b-db")
    waiting = service.submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE)
    assert waiting.status == "waiting" and sorted(i.status for i in waiting.interactions) == ["answered", "requested"]
    return waiting


def _purge_times(store: DynamoDBStore, session_id: str) -> dict[str, float | None]:
    """Each item of the session by kind (session, turn, child, interaction, action), with its purge_at;
    the outbox's items left out (they expire once published)."""
    found: dict[str, float | None] = {}
    for item in session_items(store, session_id):
        kind = "session" if item["sk"] == "SESSION" else item.get("entity")
        if kind == "event":
            continue
        if kind == "turn" and item.get("parent_turn_id"):
            kind = "child"
        purge = item.get("purge_at")
        found[f"{kind}:{item['sk'][-12:]}"] = None if purge is None else float(purge)
    return found


def test_a_settled_turn_expires_after_the_retention_and_an_unsettled_one_with_its_journal_never_does(
    make_service: Callable[..., Service], store: DynamoDBStore, clock: FakeClock, ledger: Path
) -> None:
    settled_at = clock.now()
    done = _completed(make_service(), "settled")
    waiting = _waiting_after_one_action(make_service("deletes_twice", **LONG_QUESTIONS), "unsettled")
    retention = make_service().settings.retention_seconds
    assert retention == 30 * DAY

    settled = _purge_times(store, "settled")
    assert {kind.split(":")[0] for kind in settled} == {"session", "turn", "child", "interaction", "action"}
    assert set(settled.values()) == {settled_at + retention}, "every item of the tree, and the session"
    unsettled = _purge_times(store, "unsettled")
    assert {kind.split(":")[0] for kind in unsettled} == {"session", "turn", "child", "interaction", "action"}
    assert set(unsettled.values()) == {None}, "nothing of an unsettled turn expires, its journal entry neither"

    clock.advance(retention - 1)
    reader = make_service("deletes_twice")
    assert reader.get_turn("settled", done.turn_id).status == "completed"
    clock.advance(1)
    with pytest.raises(NotFoundError):
        reader.get_turn("settled", done.turn_id)
    with pytest.raises(NotFoundError):
        reader.list_interactions("settled")
    assert reader.get_turn("unsettled", waiting.turn_id).status == "waiting"

    deleted = ttl_deletes_expired(store, clock.now())
    assert deleted == len(settled)
    assert {i.get("entity") for i in session_items(store, "settled")} == {"event"}, "the outbox's, unpublished here"
    assert _purge_times(store, "unsettled") == unsettled, "the unsettled turn's items, all of them, stay"

    [asked] = [i for i in waiting.interactions if i.status == "requested"]
    done = reader.submit_approval("unsettled", waiting.turn_id, asked.request_id, APPROVE)
    assert done.status == "completed"
    assert executions(ledger) == ["delete prod-db", "delete a-db", "delete b-db"], "each action once, none again"


def test_the_sweeper_retires_the_snapshots_only_expired_records_pointed_at(
    make_service: Callable[..., Service], store: DynamoDBStore, clock: FakeClock
) -> None:
    service = make_service("nested_preserving", **LONG_QUESTIONS)
    _completed(service, "gone")
    waiting = service.start_turn("kept", "delete the prod-db record")
    assert waiting.status == "waiting"
    clock.advance(service.settings.retention_seconds)

    report = make_service(**LONG_QUESTIONS).sweep()

    assert (report.looked, report.expired) == (0, 2), "the turn and its session; the waiting turn is nobody's"
    objects, tagged = retired(store, "gone")
    assert objects and tagged == objects, "every snapshot of the expired session"
    kept_objects, kept_tagged = retired(store, "kept")
    assert kept_objects and kept_tagged == kept_objects - pointed_at(store, "kept")
    assert make_service(**LONG_QUESTIONS).sweep().expired == 0, "each once"


def test_a_session_keeps_its_conversation_while_a_turn_is_active_and_for_the_retention_after(
    make_service: Callable[..., Service], store: DynamoDBStore, clock: FakeClock
) -> None:
    service = make_service("nested_twice", **LONG_QUESTIONS)
    first = _completed(service, "talk")
    conversation = root_record(store, "talk", first.turn_id).snapshot_key
    clock.advance(20 * DAY)
    second = service.start_turn("talk", "delete the prod-db record")
    assert second.status == "waiting"
    session = next(i for i in session_items(store, "talk") if i["sk"] == "SESSION")
    assert "purge_at" not in session and "gsi4pk" not in session, "an active session has no retention end"

    clock.advance(15 * DAY)  # the first turn's retention ended; the session's did not begin
    assert service.sweep().expired == 1
    with pytest.raises(NotFoundError):
        service.get_turn("talk", first.turn_id)
    objects, tagged = retired(store, "talk")
    assert conversation in objects and conversation not in tagged, "the second turn began from it"

    done = service.submit_approval("talk", second.turn_id, second.interactions[0].request_id, APPROVE)
    assert done.status == "completed"


def test_a_session_whose_retention_ended_starts_again_as_a_new_one(
    make_service: Callable[..., Service], store: DynamoDBStore, clock: FakeClock
) -> None:
    service = make_service()
    first = _completed(service, "again")
    old = root_record(store, "again", first.turn_id).snapshot_key
    clock.advance(service.settings.retention_seconds)

    started = make_service().start_turn("again", "delete the prod-db record", principal="someone-else")

    fresh = root_record(store, "again", started.turn_id)
    assert (fresh.base_snapshot_key, fresh.principal) == (None, "someone-else"), "nothing of the old session"
    _, tagged = retired(store, "again")
    assert old in tagged, "the old conversation is retired"

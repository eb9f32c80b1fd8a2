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
    make_service: Callable[..., Service],
    store: DynamoDBStore,
    clock: FakeClock,
    session_id: str,
    ledger: Path,
) -> None:
    settled_at = clock.now()
    done = _completed(make_service(), f"{session_id}-settled")
    waiting = _waiting_after_one_action(make_service("deletes_twice", **LONG_QUESTIONS), f"{session_id}-unsettled")
    retention = make_service().settings.retention_seconds
    assert retention == 30 * DAY

    settled = _purge_times(store, f"{session_id}-settled")
    assert {kind.split(":")[0] for kind in settled} == {"session", "turn", "child", "interaction", "action"}
    assert set(settled.values()) == {settled_at + retention}, "every item of the tree, and the session"
    unsettled = _purge_times(store, f"{session_id}-unsettled")
    assert {kind.split(":")[0] for kind in unsettled} == {"session", "turn", "child", "interaction", "action"}
    assert set(unsettled.values()) == {None}, "nothing of an unsettled turn expires, its journal entry neither"

    clock.advance(retention - 1)
    reader = make_service("deletes_twice")
    assert reader.get_turn(f"{session_id}-settled", done.turn_id).status == "completed"
    clock.advance(1)
    with pytest.raises(NotFoundError):
        reader.get_turn(f"{session_id}-settled", done.turn_id)
    with pytest.raises(NotFoundError):
        reader.list_interactions(f"{session_id}-settled")
    assert reader.get_turn(f"{session_id}-unsettled", waiting.turn_id).status == "waiting"

    deleted = ttl_deletes_expired(store, clock.now())
    assert deleted == len(settled)
    assert {i.get("entity") for i in session_items(store, f"{session_id}-settled")} == {"event"}, (
        "the outbox's, unpublished here"
    )
    assert _purge_times(store, f"{session_id}-unsettled") == unsettled, "the unsettled turn's items, all of them, stay"

    [asked] = [i for i in waiting.interactions if i.status == "requested"]
    done = reader.submit_approval(f"{session_id}-unsettled", waiting.turn_id, asked.request_id, APPROVE)
    assert done.status == "completed"
    assert executions(ledger) == ["delete prod-db", "delete a-db", "delete b-db"], "each action once, none again"


def test_the_sweeper_retires_the_snapshots_only_expired_records_pointed_at(
    make_service: Callable[..., Service],
    store: DynamoDBStore,
    clock: FakeClock,
    session_id: str,
) -> None:
    service = make_service("nested_preserving", **LONG_QUESTIONS)
    _completed(service, f"{session_id}-gone")
    waiting = service.start_turn(f"{session_id}-kept", "delete the prod-db record")
    assert waiting.status == "waiting"
    clock.advance(service.settings.retention_seconds)

    # As deployed: a sweeper with a continuation to ask for (none is needed here).
    report = make_service(**LONG_QUESTIONS).continued_by(lambda s, t: None).sweep()

    assert (report.looked, report.expired) == (0, 2), "the turn and its session; the waiting turn is nobody's"
    objects, tagged = retired(store, f"{session_id}-gone")
    assert objects and tagged == objects, "every snapshot of the expired session"
    kept_objects, kept_tagged = retired(store, f"{session_id}-kept")
    assert kept_objects and kept_tagged == kept_objects - pointed_at(store, f"{session_id}-kept")
    assert make_service(**LONG_QUESTIONS).sweep().expired == 0, "each once"


def test_a_session_keeps_its_conversation_while_a_turn_is_active_and_for_the_retention_after(
    make_service: Callable[..., Service],
    store: DynamoDBStore,
    clock: FakeClock,
    session_id: str,
) -> None:
    service = make_service("nested_twice", **LONG_QUESTIONS)
    first = _completed(service, f"{session_id}-talk")
    conversation = root_record(store, f"{session_id}-talk", first.turn_id).snapshot_key
    clock.advance(20 * DAY)
    second = service.start_turn(f"{session_id}-talk", "delete the prod-db record")
    assert second.status == "waiting"
    session = next(i for i in session_items(store, f"{session_id}-talk") if i["sk"] == "SESSION")
    assert "purge_at" not in session and "gsi4pk" not in session, "an active session has no retention end"

    clock.advance(15 * DAY)  # the first turn's retention ended; the session's did not begin
    assert service.sweep().expired == 1
    with pytest.raises(NotFoundError):
        service.get_turn(f"{session_id}-talk", first.turn_id)
    objects, tagged = retired(store, f"{session_id}-talk")
    assert conversation in objects and conversation not in tagged, "the second turn began from it"

    done = service.submit_approval(f"{session_id}-talk", second.turn_id, second.interactions[0].request_id, APPROVE)
    assert done.status == "completed"


def test_a_session_whose_retention_ended_starts_again_as_a_new_one(
    make_service: Callable[..., Service],
    store: DynamoDBStore,
    clock: FakeClock,
    session_id: str,
) -> None:
    service = make_service()
    first = _completed(service, f"{session_id}-again")
    old = root_record(store, f"{session_id}-again", first.turn_id).snapshot_key
    clock.advance(service.settings.retention_seconds)

    started = make_service().start_turn(f"{session_id}-again", "delete the prod-db record", principal="someone-else")

    fresh = root_record(store, f"{session_id}-again", started.turn_id)
    assert (fresh.base_snapshot_key, fresh.principal) == (None, "someone-else"), "nothing of the old session"
    _, tagged = retired(store, f"{session_id}-again")
    assert old in tagged, "the old conversation is retired"


def test_once_the_sweeper_claims_an_expired_session_nothing_brings_it_back_however_late_a_clock(
    make_service: Callable[..., Service], store: DynamoDBStore, clock: FakeClock, session_id: str
) -> None:
    """A restore or a turn whose process reads the session just before its retention ends, and writes
    just after the sweeper began retiring its snapshots (or whose clock lags), is refused: it would point
    at snapshots on their way out."""
    from resumable.store.outbox import session_restored

    service = make_service()
    _completed(service, session_id)
    service.delete_session(session_id)
    seen = store.get_session(session_id)
    assert seen is not None and seen.purge_at is not None
    clock.advance(service.settings.retention_seconds)
    [claimed] = [e for e in store.due_expiries(clock.now(), 10) if e.turn_id is None]
    assert store.claim_expiry(claimed, clock.now())

    lagging = seen.purge_at - 10  # a process that believes the retention has not ended yet
    event = session_restored(1, "late", lagging)
    assert store.end_restore(seen, 1, lagging, lagging + DAY, event) is False
    restored_view = store.get_session(session_id)
    assert restored_view is not None and restored_view.deleted, "still deleted, on its way out"

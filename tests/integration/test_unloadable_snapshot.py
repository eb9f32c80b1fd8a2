"""A snapshot that cannot be loaded keeps the turn waiting and the answer recorded;
after repair the approved action runs exactly once.

Two places can be unloadable: the root agent's snapshot object in S3 (overwritten or removed behind
the store's back), and the sub-agent's stored turn inside it (written by a version this code cannot
read). Either way the answer is kept, and ``recover`` (or the client replaying the same answer)
finishes the turn once the snapshot is repaired.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from resumable.config import Settings
from resumable.runtime.snapshot import SCHEMA_VERSION
from resumable.service import Service, TurnView
from resumable.service.operating.sweep import ATTEMPTS
from resumable.store import DynamoDBStore, S3Snapshots
from tests.clock import FakeClock
from tests.factories import executions
from tests.integration.helpers import APPROVE, answered_but_not_resumed, root_record


def _read(snapshots: S3Snapshots, key: str) -> bytes:
    body: bytes = snapshots.s3.get_object(Bucket=snapshots.bucket, Key=key)["Body"].read()
    return body


def _overwrite(snapshots: S3Snapshots, key: str, body: bytes) -> None:
    """Replace an object behind the store's back: no ``IfNoneMatch``, as an operator or a bug would."""
    snapshots.s3.put_object(Bucket=snapshots.bucket, Key=key, Body=body)


def _stored_turn_version(snapshot: dict[str, Any], version: str) -> dict[str, Any]:
    """``snapshot`` with the db_admin call's stored turn marked as written by schema ``version``."""
    stored = snapshot["interrupt_state"]["context"]["sub_agent_interrupted_turns"]["o-1"]
    stored["schema_version"] = version
    return snapshot


class Breakage:
    """One way a turn's snapshot becomes unloadable, and how an operator repairs it."""

    def __init__(self, aws: Settings, session_id: str, turn_id: str) -> None:
        self.store = store = DynamoDBStore(aws)
        self.snapshots = S3Snapshots(aws)
        self.session_id = session_id
        self.turn_id = turn_id
        key = root_record(store, session_id, turn_id).snapshot_key
        assert key is not None
        self.key: str = key
        self.original = _read(self.snapshots, self.key)

    def corrupt_root_snapshot(self) -> None:
        _overwrite(self.snapshots, self.key, b'{"schema_version": "1.0", "agent": "orchestr')

    def root_snapshot_from_a_future_version(self) -> None:
        _overwrite(
            self.snapshots, self.key, json.dumps({**json.loads(self.original), "schema_version": "9.0"}).encode()
        )

    def delete_root_snapshot(self) -> None:
        self.snapshots.s3.delete_object(Bucket=self.snapshots.bucket, Key=self.key)

    def old_stored_sub_agent_turn(self) -> None:
        _overwrite(
            self.snapshots, self.key, json.dumps(_stored_turn_version(json.loads(self.original), "0.0")).encode()
        )

    def repair(self) -> None:
        """Put the turn's current snapshot right: the original bytes back, or the stored turn migrated."""
        current = root_record(self.store, self.session_id, self.turn_id).snapshot_key
        assert current is not None
        if current == self.key:
            _overwrite(self.snapshots, current, self.original)
        else:  # a failed resume committed a new snapshot that still holds the unloadable stored turn
            snapshot = json.loads(_read(self.snapshots, current))
            _overwrite(self.snapshots, current, json.dumps(_stored_turn_version(snapshot, SCHEMA_VERSION)).encode())


BREAKAGES = ["corrupt_root_snapshot", "root_snapshot_from_a_future_version", "delete_root_snapshot"]
ALL_BREAKAGES = [*BREAKAGES, "old_stored_sub_agent_turn"]


def swept_to_the_brink(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, aws: Any
) -> tuple[TurnView, Breakage]:
    """A turn answered but not resumed whose snapshot cannot be loaded, moved on by the sweeper as often
    as it may (``ATTEMPTS``) without it moving, and due its next look: the next sweep gives up on it."""
    service = make_service()
    started = answered_but_not_resumed(service, session_id, clock)
    breakage = Breakage(aws, session_id, started.turn_id)
    breakage.corrupt_root_snapshot()
    for _ in range(ATTEMPTS):
        clock.advance(service.settings.stall_seconds)
        assert dict(make_service().sweep().moved) == {"answered_unresumed": 1}
    clock.advance(service.settings.stall_seconds)
    return started, breakage


def _break_and_answer(
    make_service: Callable[..., Service], aws: Settings, session_id: str, breakage: str
) -> tuple[TurnView, TurnView, Breakage]:
    started = make_service().start_turn(session_id, "delete the prod-db record")
    assert started.status == "waiting"
    broken = Breakage(aws, session_id, started.turn_id)
    getattr(broken, breakage)()
    answered = make_service().submit_approval(
        session_id, started.turn_id, started.interactions[0].request_id, APPROVE, principal="alice"
    )
    return started, answered, broken


def _assert_waiting_with_the_answer_kept(view: TurnView, started: TurnView) -> None:
    assert view.status == "waiting"
    assert view.error is not None
    assert "cannot be loaded" in view.error
    [interaction] = view.interactions
    assert interaction.request_id == started.interactions[0].request_id
    assert (interaction.status, interaction.response, interaction.answered_by) == ("answered", APPROVE, "alice")
    assert [c.status for c in view.children] == ["waiting"]


@pytest.mark.parametrize("breakage", ALL_BREAKAGES)
def test_an_unloadable_snapshot_keeps_the_turn_waiting_with_the_answer_recorded(
    breakage: str, make_service: Callable[..., Service], aws: Settings, session_id: str, ledger: Path
) -> None:
    started, answered, _ = _break_and_answer(make_service, aws, session_id, breakage)

    _assert_waiting_with_the_answer_kept(answered, started)
    _assert_waiting_with_the_answer_kept(make_service().get_turn(session_id, started.turn_id), started)
    assert executions(ledger) == []
    # Retrying while it is still broken changes nothing and runs nothing.
    _assert_waiting_with_the_answer_kept(make_service().recover(session_id, started.turn_id), started)
    _assert_waiting_with_the_answer_kept(
        make_service().submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE),
        started,
    )
    assert executions(ledger) == []
    assert make_service().list_interactions(session_id, "requested") == []


@pytest.mark.parametrize("breakage", ALL_BREAKAGES)
def test_after_repair_recover_runs_the_approved_action_once(
    breakage: str, make_service: Callable[..., Service], aws: Settings, session_id: str, ledger: Path
) -> None:
    started, _, broken = _break_and_answer(make_service, aws, session_id, breakage)
    if breakage == "delete_root_snapshot":
        broken.snapshots.s3.put_object(Bucket=broken.snapshots.bucket, Key=broken.key, Body=broken.original)
    else:
        broken.repair()

    done = make_service().recover(session_id, started.turn_id)

    assert (done.status, done.output, done.error) == ("completed", "The record is gone.", None)
    assert [c.status for c in done.children] == ["completed"]
    assert [(i.status, i.response) for i in done.interactions] == [("answered", APPROVE)]
    assert executions(ledger) == ["delete prod-db"]
    assert make_service().recover(session_id, started.turn_id) == done
    assert executions(ledger) == ["delete prod-db"]


@pytest.mark.parametrize("breakage", ["corrupt_root_snapshot", "old_stored_sub_agent_turn"])
def test_after_repair_the_client_replaying_the_same_answer_runs_the_action_once(
    breakage: str, make_service: Callable[..., Service], aws: Settings, session_id: str, ledger: Path
) -> None:
    started, _, broken = _break_and_answer(make_service, aws, session_id, breakage)
    broken.repair()
    request = started.interactions[0].request_id

    done = make_service().submit_approval(session_id, started.turn_id, request, APPROVE, principal="alice")

    assert (done.status, done.output) == ("completed", "The record is gone.")
    assert executions(ledger) == ["delete prod-db"]
    again = make_service().submit_approval(session_id, started.turn_id, request, APPROVE, principal="alice")
    assert again == done
    assert make_service().recover(session_id, started.turn_id) == done
    assert executions(ledger) == ["delete prod-db"]


def test_a_new_turn_in_a_session_whose_conversation_is_gone_fails_saying_so(
    make_service: Callable[..., Service], aws: Settings, store: DynamoDBStore, session_id: str
) -> None:
    """S3 says NoSuchKey (the start's role may list the bucket; without it S3 would say AccessDenied,
    which reads as a fault): the turn fails, naming the snapshot."""
    first = make_service("chatty").start_turn(session_id, "hello")
    key = root_record(store, session_id, first.turn_id).snapshot_key
    snapshots = S3Snapshots(aws)
    snapshots.s3.delete_object(Bucket=snapshots.bucket, Key=key)

    second = make_service("chatty").start_turn(session_id, "again")

    assert second.status == "failed"
    assert second.error is not None and "conversation cannot be loaded" in second.error and key in second.error

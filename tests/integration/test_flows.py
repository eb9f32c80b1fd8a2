"""The use cases end to end against the embedded AWS: pause, approve, complete."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from resumable.service import Service
from tests.clock import FakeClock
from tests.factories import executions
from tests.integration.helpers import APPROVE


def test_a_nested_approval_pauses_then_runs_once_when_approved(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = make_service().start_turn(session_id, "delete the prod-db record")
    assert started.status == "waiting"
    [interaction] = started.interactions
    assert interaction.status == "requested"
    assert interaction.agent_path == ["orchestrator", "db_admin"]
    assert interaction.reason == {"agent": "db_admin", "tool": "delete_record", "input": {"name": "prod-db"}}
    assert [c.agent for c in started.children] == ["db_admin"]
    assert started.children[0].status == "waiting"
    assert (interaction.turn_id, interaction.child_turn_id) == (started.turn_id, started.children[0].turn_id)

    done = make_service().submit_approval(
        session_id, started.turn_id, interaction.request_id, APPROVE, principal="alice"
    )
    assert (done.status, done.output) == ("completed", "The record is gone.")
    assert done.interactions[0].status == "answered"
    assert done.interactions[0].answered_by == "alice"
    assert [c.status for c in done.children] == ["completed"]
    assert executions(ledger) == ["delete prod-db"]


def test_deny_runs_nothing_and_completes_the_turn(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = make_service().start_turn(session_id, "delete it")
    request = started.interactions[0].request_id
    done = make_service().submit_approval(session_id, started.turn_id, request, {"decision": "deny", "message": "no"})
    assert done.status == "completed"
    assert executions(ledger) == []


def test_partial_answers_keep_the_turn_waiting_until_the_last_one(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = make_service("fan_out").start_turn(session_id, "delete both")
    assert len(started.interactions) == 2
    first, second = started.interactions
    partial = make_service("fan_out").submit_approval(session_id, started.turn_id, first.request_id, APPROVE)
    assert partial.status == "waiting"
    assert executions(ledger) == []
    done = make_service("fan_out").submit_approval(session_id, started.turn_id, second.request_id, APPROVE)
    assert done.status == "completed"
    assert sorted(executions(ledger)) == ["delete a-db", "delete b-db"]
    assert {c.status for c in done.children} == {"completed"}


def test_three_levels_resume_through_the_store(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = make_service("three_levels").start_turn(session_id, "delete")
    [interaction] = started.interactions
    assert interaction.agent_path == ["orchestrator", "manager", "db_admin"]
    assert {c.agent for c in started.children} == {"manager", "db_admin"}
    done = make_service("three_levels").submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE)
    assert (done.status, done.output) == ("completed", "all done")
    assert executions(ledger) == ["delete prod-db"]
    db_admin = next(c for c in done.children if c.agent == "db_admin")
    manager = next(c for c in done.children if c.agent == "manager")
    assert db_admin.parent_turn_id == manager.turn_id
    assert manager.parent_turn_id == done.turn_id


def test_a_session_continues_its_conversation_turn_after_turn(
    make_service: Callable[..., Service], session_id: str
) -> None:
    assert make_service("chatty").start_turn(session_id, "one").output == "first answer"
    assert make_service("chatty").start_turn(session_id, "two").output == "second answer"


def test_the_interactions_of_a_session_are_listed_by_status(
    make_service: Callable[..., Service], session_id: str
) -> None:
    service = make_service("fan_out")
    started = service.start_turn(session_id, "delete both")
    first = started.interactions[0]
    service.submit_approval(session_id, started.turn_id, first.request_id, APPROVE)
    requested = service.list_interactions(session_id, "requested")
    answered = service.list_interactions(session_id, "answered")
    assert [i.request_id for i in answered] == [first.request_id]
    assert [i.request_id for i in requested] == [started.interactions[1].request_id]
    assert len(service.list_interactions(session_id)) == 2


def test_get_turn_shows_a_child_turn_with_the_interactions_it_owns(
    make_service: Callable[..., Service], session_id: str
) -> None:
    service = make_service()
    started = service.start_turn(session_id, "delete")
    child = started.children[0]
    view = service.get_turn(session_id, child.turn_id)
    assert (view.turn_id, view.status) == (child.turn_id, "waiting")
    assert [i.request_id for i in view.interactions] == [started.interactions[0].request_id]


def test_an_oversized_reason_and_output_are_cut_for_the_table_and_the_turn_still_completes(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = make_service("oversized").start_turn(session_id, "delete them all")
    [interaction] = started.interactions
    # What the call is stays whole; its input is a preview (the whole input is in the snapshot).
    assert (interaction.reason["tool"], interaction.reason["input"]["truncated"]) == ("bulk_delete", True)
    assert interaction.reason["input"]["bytes"] > 400_000
    assert len(json.dumps(interaction.reason).encode()) <= 16 * 1024
    done = make_service("oversized").submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE)
    assert done.status == "completed"
    assert done.output is not None
    assert done.output.endswith("[cut at 65536 bytes; the whole text is in the snapshot]")
    assert executions(ledger) == ["bulk delete 40000"]


def test_an_interaction_past_its_expiry_is_listed_as_expired_before_its_turn_is_touched(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    service = make_service()
    service.start_turn(session_id, "delete")
    clock.advance(service.settings.approval_expiry_seconds + 1)
    assert service.list_interactions(session_id, "requested") == []
    assert [i.status for i in service.list_interactions(session_id, "expired")] == ["expired"]
    assert [i.status for i in service.list_interactions(session_id)] == ["expired"]

"""The four sub-agent configurations of the runtime, now with state in S3.

The service rebuilds every agent on every call, so the orchestrator's snapshot and the sub-agent's
S3Session are all that carry a turn from one request to the next.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from resumable import Agent
from resumable.config import Settings
from resumable.service import Service
from resumable.store import DynamoDBStore, S3Snapshots
from tests.agents import approve, build_orchestrator
from tests.factories import executions
from tests.integration.helpers import APPROVE

DENY = {"decision": "deny", "message": "prod is frozen"}


@pytest.mark.parametrize("factory", ["nested", "nested_preserving"], ids=["ephemeral", "own S3Session"])
def test_a_resumable_configuration_runs_the_approved_action_once(
    factory: str, make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = make_service(factory).start_turn(session_id, "delete the prod-db record")
    request = started.interactions[0].request_id
    done = make_service(factory).submit_approval(session_id, started.turn_id, request, APPROVE)
    assert (done.status, done.output) == ("completed", "The record is gone.")
    assert executions(ledger) == ["delete prod-db"]


def test_a_sub_agent_with_its_own_s3_session_keeps_its_history(
    make_service: Callable[..., Service], session_id: str, aws: Settings
) -> None:
    service = make_service("nested_preserving")
    started = service.start_turn(session_id, "delete the prod-db record")
    service.submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE)
    store = DynamoDBStore(aws)
    session = store.get_session(session_id)
    assert session is not None
    history = S3Snapshots(aws).get(session.agent_snapshots["db_admin"])["messages"]
    assert [(m["role"], next(iter(m["content"][0]))) for m in history] == [
        ("user", "text"),
        ("assistant", "toolUse"),
        ("user", "toolResult"),
        ("assistant", "text"),
    ]


def test_only_the_sub_agents_own_s3_objects_hold_its_turn(
    make_service: Callable[..., Service], session_id: str, aws: Settings
) -> None:
    started = make_service("nested_preserving").start_turn(session_id, "delete")
    store = DynamoDBStore(aws)
    tree = store.load_tree(session_id, started.turn_id)
    assert tree is not None
    assert tree.root.snapshot_key is not None
    root_snapshot = S3Snapshots(aws).get(tree.root.snapshot_key)
    assert "sub_agent_interrupted_turns" not in root_snapshot["interrupt_state"]["context"]
    assert S3Snapshots(aws).get(tree.root.agent_snapshots["db_admin"])["interrupt_state"]["activated"]


def test_a_context_preserving_sub_agent_without_a_session_warns_and_runs_nothing_after_the_rebuild(
    make_service: Callable[..., Service], session_id: str, ledger: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="resumable"):
        started = make_service("nested_in_memory").start_turn(session_id, "delete")
    assert any("preserve_context=True with no session" in r.getMessage() for r in caplog.records)
    done = make_service("nested_in_memory").submit_approval(
        session_id, started.turn_id, started.interactions[0].request_id, APPROVE
    )
    assert done.status == "completed"
    assert executions(ledger) == []


def test_in_one_process_a_context_preserving_sub_agent_resumes_from_memory_with_the_snapshot_in_s3(
    aws: Settings, tmp_path: Path
) -> None:
    runs: list[str] = []
    orchestrator: Agent = build_orchestrator(runs, preserve_context=True)
    [interrupt] = orchestrator("delete").interrupts
    key = f"config-c/{tmp_path.name}.json"
    snapshots = S3Snapshots(aws)
    snapshots.put(key, orchestrator.snapshot())
    orchestrator.restore(json.loads(json.dumps(snapshots.get(key))))
    assert orchestrator([approve(interrupt.id)]).stop_reason == "end_turn"
    assert runs == ["prod-db"]


@pytest.mark.parametrize("factory", ["nested", "nested_preserving", "nested_in_memory"])
def test_deny_runs_nothing_in_every_configuration(
    factory: str, make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = make_service(factory).start_turn(session_id, "delete")
    done = make_service(factory).submit_approval(session_id, started.turn_id, started.interactions[0].request_id, DENY)
    assert done.status == "completed"
    assert executions(ledger) == []

"""The service's acceptance scenarios with Strands Agents SDK trees (tests.strands_factories, a scripted
Strands model, offline): approve, deny, edit, cancel, expiry, fifty duplicate answers at once, nested
agent-as-tool turns (preserve_context False and True) resumed after every agent is rebuilt."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from resumable.config import Settings
from resumable.exceptions import GoneError, ValidationFailedError
from resumable.service import AgentContext, Service, TurnView
from tests import strands_factories
from tests.clock import FakeClock
from tests.factories import executions
from tests.integration.helpers import APPROVE, at_once


@pytest.fixture
def strands_service(make_service: Callable[..., Service]) -> Callable[..., Service]:
    """A new Service (a rebuilt process) whose factory is ``tests.strands_factories:<name>``."""

    def make(name: str = "nested", **settings: object) -> Service:
        return make_service(
            strands_factories.__dict__[name], agent_factory=f"tests.strands_factories:{name}", **settings
        )

    return make


@pytest.mark.parametrize("factory", ["nested", "nested_preserving"])
def test_a_nested_strands_approval_pauses_then_runs_once_when_approved_in_a_rebuilt_process(
    factory: str, strands_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = strands_service(factory).start_turn(session_id, "delete the prod-db record")
    assert started.status == "waiting"
    [interaction] = started.interactions
    assert interaction.status == "requested"
    assert interaction.agent_path == ["orchestrator", "db_admin"]
    assert interaction.reason == {
        "agent": "db_admin",
        "tool": "delete_record",
        "input": {"name": "prod-db"},
        "editable": True,
    }
    assert interaction.interrupt_id.startswith("v1:agent_as_tool:o-1:v1:before_tool_call:w-1:")
    assert [(c.agent, c.status) for c in started.children] == [("db_admin", "waiting")]
    assert interaction.child_turn_id == started.children[0].turn_id

    done = strands_service(factory).submit_approval(
        session_id, started.turn_id, interaction.request_id, APPROVE, principal="alice"
    )
    assert (done.status, done.output) == ("completed", "The record is gone.")
    assert [(i.status, i.answered_by) for i in done.interactions] == [("answered", "alice")]
    assert [c.status for c in done.children] == ["completed"]
    assert executions(ledger) == ["delete prod-db"]
    assert [a.status for a in strands_service(factory).store.load_tree(session_id, started.turn_id).actions] == [
        "finished"
    ]


def test_deny_runs_nothing_and_tells_the_model(
    strands_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = strands_service().start_turn(session_id, "delete it")
    request = started.interactions[0].request_id
    done = strands_service().submit_approval(
        session_id, started.turn_id, request, {"decision": "deny", "message": "no"}
    )
    assert done.status == "completed"
    assert executions(ledger) == []


def test_an_edited_approval_runs_once_with_the_edit(
    strands_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = strands_service().start_turn(session_id, "delete it")
    [question] = started.interactions
    assert question.editable is True
    edited = {"decision": "approve", "input": {"name": "prod-db-replica"}}
    done = strands_service().submit_approval(session_id, started.turn_id, question.request_id, edited)
    assert done.status == "completed"
    assert executions(ledger) == ["delete prod-db-replica"]
    assert done.interactions[0].reason["input"] == {"name": "prod-db"}


def test_fan_out_and_three_levels_resume_as_child_turns(
    strands_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = strands_service("fan_out").start_turn(session_id, "delete both")
    assert sorted(c.agent for c in started.children) == ["admin_a", "admin_b"]
    first, second = started.interactions
    partial_view = strands_service("fan_out").submit_approval(session_id, started.turn_id, first.request_id, APPROVE)
    assert partial_view.status == "waiting" and executions(ledger) == []
    done = strands_service("fan_out").submit_approval(session_id, started.turn_id, second.request_id, APPROVE)
    assert (done.status, done.output) == ("completed", "Both are gone.")
    assert sorted(executions(ledger)) == ["delete a-db", "delete b-db"]
    assert {c.status for c in done.children} == {"completed"}

    deep = strands_service("three_levels").start_turn(f"{session_id}-3", "delete")
    [interaction] = deep.interactions
    assert interaction.agent_path == ["orchestrator", "manager", "db_admin"]
    assert {c.agent for c in deep.children} == {"manager", "db_admin"}
    done = strands_service("three_levels").submit_approval(
        f"{session_id}-3", deep.turn_id, interaction.request_id, APPROVE
    )
    assert (done.status, done.output) == ("completed", "all done")
    assert {c.status for c in done.children} == {"completed"}


def test_a_bare_strands_agent_from_the_factory_runs_under_the_default_policy(
    strands_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    unguarded = strands_service("bare").start_turn(session_id, "delete")
    assert (unguarded.status, executions(ledger)) == ("completed", ["delete prod-db"]), "no policy: no approval"
    guarded = strands_service("bare", approval_required=("delete_*",)).start_turn(f"{session_id}-2", "delete")
    assert guarded.status == "waiting"
    done = strands_service("bare", approval_required=("delete_*",)).submit_approval(
        f"{session_id}-2", guarded.turn_id, guarded.interactions[0].request_id, APPROVE
    )
    assert done.status == "completed"
    assert executions(ledger) == ["delete prod-db", "delete prod-db"]


def test_canceling_a_waiting_strands_tree_cancels_every_turn_and_runs_nothing(
    strands_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = strands_service("fan_out").start_turn(session_id, "delete")
    canceled = strands_service("fan_out").cancel(session_id, started.turn_id)
    assert canceled.status == "canceled"
    assert [c.status for c in canceled.children] == ["canceled", "canceled"]
    assert {i.status for i in canceled.interactions} == {"superseded"}
    assert executions(ledger) == []


def test_a_cancel_during_a_running_strands_resume_stops_it_at_the_next_tool_call(
    strands_service: Callable[..., Service], session_id: str, ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[TurnView] = []

    def cancel_own_turn(context: AgentContext) -> None:
        asked.append(strands_service("acting_on_itself").cancel(context.session_id, context.turn_id))

    started = strands_service("acting_on_itself").start_turn(session_id, "delete")
    monkeypatch.setattr(strands_factories, "while_acting", cancel_own_turn)
    done = started
    for interaction in started.interactions:
        done = strands_service("acting_on_itself").submit_approval(
            session_id, started.turn_id, interaction.request_id, APPROVE
        )
    assert [a.status for a in asked] == ["running"]
    assert (done.status, done.output) == ("canceled", None)
    assert [c.status for c in done.children] == ["canceled"]
    # The action running when the cancel came finished; the second approved call never started.
    assert executions(ledger) == ["delete prod-db"]


def test_an_answer_after_the_interaction_expired_is_gone_and_the_strands_turn_ends_expired(
    strands_service: Callable[..., Service], aws: Settings, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    started = strands_service().start_turn(session_id, "delete")
    clock.advance(aws.approval_expiry_seconds + 1)
    with pytest.raises(GoneError):
        strands_service().submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE)
    view = strands_service().get_turn(session_id, started.turn_id)
    assert view.status == "expired"
    assert [c.status for c in view.children] == ["expired"]
    assert executions(ledger) == []


def test_fifty_identical_answers_at_once_run_the_strands_action_once(
    strands_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = strands_service().start_turn(session_id, "delete the prod-db record")
    [interaction] = started.interactions
    services = [strands_service() for _ in range(50)]
    outcomes = at_once(
        [
            partial(service.submit_approval, session_id, started.turn_id, interaction.request_id, dict(APPROVE))
            for service in services
        ]
    )
    assert [o for o in outcomes if isinstance(o, Exception)] == []
    final = strands_service().get_turn(session_id, started.turn_id)
    assert (final.status, final.output) == ("completed", "The record is gone.")
    assert executions(ledger) == ["delete prod-db"]


def test_a_strands_turn_over_budget_is_checkpointed_continued_then_pauses_and_completes(
    strands_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    requested: list[tuple[str, str]] = []

    def continuable() -> Service:
        service = strands_service("looks_twice_then_deletes", turn_budget_seconds=0)
        return service.continued_by(lambda session, turn: requested.append((session, turn)))

    started = continuable().start_turn(session_id, "delete the prod-db record")
    # db_admin's first look-up ran; its second was checkpointed before it ran.
    assert (started.status, started.interactions) == ("running", [])
    assert [c.status for c in started.children] == ["running"]
    assert requested == [(session_id, started.turn_id)]
    continued = continuable().recover(session_id, started.turn_id)
    assert continued.status == "waiting"
    assert [i.reason["tool"] for i in continued.interactions] == ["delete_record"]
    done = continuable().submit_approval(session_id, started.turn_id, continued.interactions[0].request_id, APPROVE)
    assert (done.status, done.output) == ("completed", "The record is gone.")
    assert executions(ledger) == ["delete prod-db"]
    assert len(requested) == 1


def test_a_strands_session_continues_its_conversation_turn_after_turn(
    strands_service: Callable[..., Service], session_id: str
) -> None:
    first = strands_service("chatty").start_turn(session_id, "hello")
    second = strands_service("chatty").start_turn(session_id, "again")
    assert [(first.status, first.output), (second.status, second.output)] == [
        ("completed", "first answer"),
        ("completed", "second answer"),
    ]


def test_an_edit_with_a_property_the_tool_does_not_declare_is_422_and_writes_nothing(
    strands_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = strands_service().start_turn(session_id, "delete it")
    [question] = started.interactions
    with pytest.raises(ValidationFailedError, match="extra"):
        strands_service().submit_approval(
            session_id,
            started.turn_id,
            question.request_id,
            {"decision": "approve", "input": {"name": "x", "extra": 1}},
        )
    assert strands_service().get_turn(session_id, started.turn_id).interactions[0].status == "requested"
    assert executions(ledger) == []


def test_a_strands_agent_s_own_words_reach_the_approver(
    strands_service: Callable[..., Service], session_id: str
) -> None:
    started = strands_service("explains").start_turn(session_id, "tidy up")
    [asked] = started.interactions
    assert asked.explanation == "The migration finished, so prod-db is no longer used."
    assert asked.summary == "delete_record prod-db"

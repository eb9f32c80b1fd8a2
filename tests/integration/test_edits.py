"""Edit, then approve: the edited input is checked against the tool's schema before anything is
written, runs once through the action journal, and the interaction keeps both inputs. And approval
for tools nobody declared it on: the deployment's default policy."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from resumable import Agent, ScriptedModel, ToolContext, tool
from resumable.exceptions import ConflictError, NotFoundError, ValidationFailedError
from resumable.service import Service
from resumable.store import DynamoDBStore
from tests import factories
from tests.agents import calls, says
from tests.factories import executions
from tests.integration.helpers import APPROVE, session_items, table_and_bucket

EDITED = {"decision": "approve", "input": {"name": "prod-db-replica"}}


@pytest.fixture
def service(make_service: Callable[..., Service]) -> Service:
    return make_service("nested_editable")


def test_an_edited_approval_runs_the_tool_once_with_the_edit_and_the_interaction_keeps_both_inputs(
    service: Service, session_id: str, ledger: Path, store: DynamoDBStore
) -> None:
    started = service.start_turn(session_id, "delete")
    [question] = started.interactions
    assert question.editable is True
    assert "inputSchema" not in question.reason, "the schema is kept apart from what people are shown"
    done = service.submit_approval(session_id, started.turn_id, question.request_id, EDITED)
    assert done.status == "completed"
    assert executions(ledger) == ["delete prod-db-replica"]
    [answered] = done.interactions
    assert answered.reason["input"] == {"name": "prod-db"}
    assert answered.response == EDITED
    [action] = [i for i in session_items(store, session_id) if i.get("entity") == "action"]
    assert '"prod-db-replica"' in action["input"], "the journal recorded the input the tool ran with"
    again = service.submit_approval(session_id, started.turn_id, question.request_id, EDITED)
    assert again.status == "completed" and executions(ledger) == ["delete prod-db-replica"], "a replay is idempotent"
    with pytest.raises(ConflictError):
        service.submit_approval(
            session_id, started.turn_id, question.request_id, {"decision": "approve", "input": {"name": "x"}}
        )


@pytest.mark.parametrize(
    ("edited", "said"),
    [
        ({"name": 5}, "at name: 5 is not of type 'string'"),
        ({}, "'name' is a required property"),
        ({"name": "prod-db", "also": 1}, "Additional properties are not allowed"),
        ("prod-db", "is an approval"),
        (None, "is an approval"),
        (["prod-db"], "is an approval"),
        ({"name": "x" * 9000}, "the limit is 8192"),
    ],
    ids=["wrong type", "missing field", "unknown field", "a string", "null", "a list", "too large"],
)
def test_an_edit_that_breaks_the_tools_schema_or_is_not_an_object_is_422_and_writes_nothing(
    service: Service, session_id: str, ledger: Path, store: DynamoDBStore, edited: Any, said: str
) -> None:
    started = service.start_turn(session_id, "delete")
    [question] = started.interactions
    before = table_and_bucket(store, session_id)
    with pytest.raises(ValidationFailedError, match=said) as refused:
        service.submit_approval(
            session_id, started.turn_id, question.request_id, {"decision": "approve", "input": edited}
        )
    assert "nothing was answered" in str(refused.value)
    assert table_and_bucket(store, session_id) == before
    assert executions(ledger) == []


def test_an_edit_to_a_tool_that_does_not_allow_edits_is_422_and_writes_nothing(
    make_service: Callable[..., Service], session_id: str, ledger: Path, store: DynamoDBStore
) -> None:
    service = make_service("nested")
    started = service.start_turn(session_id, "delete")
    [question] = started.interactions
    assert question.editable is False
    before = table_and_bucket(store, session_id)
    with pytest.raises(ValidationFailedError, match="may not be edited"):
        service.submit_approval(session_id, started.turn_id, question.request_id, EDITED)
    assert table_and_bucket(store, session_id) == before
    assert service.submit_approval(session_id, started.turn_id, question.request_id, APPROVE).status == "completed"
    assert executions(ledger) == ["delete prod-db"]


def test_the_deployment_default_policy_guards_a_tool_nobody_declared_approval_on(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    unguarded = make_service(factories.third_party("drop_table"))
    assert unguarded.start_turn(session_id, "drop").status == "completed"
    assert executions(ledger) == ["delete users"]

    guarded = make_service(
        factories.third_party("drop_table"), approval_required=("drop_*",), approval_edits=("drop_*",)
    )
    started = guarded.start_turn(f"{session_id}-2", "drop")
    [question] = started.interactions
    assert (started.status, question.editable) == ("waiting", True)
    assert question.reason == {"agent": "ops", "tool": "drop_table", "input": {"table": "users"}, "editable": True}
    edited = {"decision": "approve", "input": {"table": "users_tmp"}}
    assert (
        guarded.submit_approval(f"{session_id}-2", started.turn_id, question.request_id, edited).status == "completed"
    )
    assert executions(ledger) == ["delete users", "delete users_tmp"]


def test_an_edit_by_someone_who_may_not_answer_is_404_like_any_answer_and_names_nothing(
    make_service: Callable[..., Service], session_id: str, store: DynamoDBStore
) -> None:
    service = make_service("nested_editable")
    started = service.start_turn(session_id, "delete", principal="alice")
    [question] = started.interactions
    before = table_and_bucket(store, session_id)
    with pytest.raises(NotFoundError) as refused:
        service.submit_approval(session_id, started.turn_id, question.request_id, EDITED, principal="mallory")
    assert "delete_record" not in str(refused.value)
    with pytest.raises(NotFoundError):  # a turn id that is not the question's
        service.submit_approval(session_id, "0" * 32, question.request_id, EDITED, principal="alice")
    assert table_and_bucket(store, session_id) == before


def test_an_edit_that_denies_is_422_and_an_answer_to_another_kind_of_interrupt_may_hold_any_json(
    make_service: Callable[..., Service], session_id: str, store: DynamoDBStore
) -> None:
    service = make_service("nested_editable")
    started = service.start_turn(session_id, "delete")
    [question] = started.interactions
    with pytest.raises(ValidationFailedError, match="approves the call"):
        service.submit_approval(
            session_id, started.turn_id, question.request_id, {"decision": "deny", "input": {"name": "x"}}
        )

    @tool(context=True)
    def confirm(context: ToolContext) -> str:
        """Ask for a confirmation."""
        return json.dumps(context.interrupt("confirm", "which?"))

    def asks(_: Any) -> Agent:
        return Agent(name="asker", model=ScriptedModel([calls(("c-1", "confirm", {})), says("ok")]), tools=[confirm])

    other = make_service(asks)
    waiting = other.start_turn(f"{session_id}-2", "ask")
    [asked] = waiting.interactions
    answer = {"decision": "approve", "input": {"anything": True}}
    assert other.submit_approval(f"{session_id}-2", waiting.turn_id, asked.request_id, answer).status == "completed"

"""A provider that numbers every reply's tool calls from call_0, behind the service: within one turn
each reply's call_0 is a call of its own, with its own interaction, action entry and child turn."""

from __future__ import annotations

from pathlib import Path

from resumable import Agent, ScriptedModel
from resumable.config import Settings
from resumable.service import AgentContext, Service
from resumable.store import DynamoDBStore
from tests.agents import calls, says
from tests.clock import FakeClock
from tests.factories import delete_record, executions

APPROVE = {"decision": "approve"}


def call_0_every_time(context: AgentContext) -> Agent:
    """The orchestrator and its sub-agent both call call_0 in every reply."""
    db_admin = Agent(
        name="db_admin",
        model=ScriptedModel([calls(("call_0", "delete_record", {"name": "prod-db"})), says("prod-db is deleted")]),
        tools=[delete_record],
    )
    return Agent(
        name="orchestrator",
        model=ScriptedModel(
            [
                calls(("call_0", "db_admin", {"prompt": "delete prod-db"})),
                calls(("call_0", "delete_record", {"name": "staging-db"})),
                calls(("call_0", "db_admin", {"prompt": "delete prod-db again"})),
                says("all three done"),
            ]
        ),
        tools=[db_admin.as_tool(), delete_record],
    )


def test_each_replys_call_0_is_asked_answered_and_run_once_in_one_turn(
    aws: Settings, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    service = Service(DynamoDBStore(aws), aws, clock, call_0_every_time)
    view = service.start_turn(session_id, "delete them")
    asked = []
    while view.status == "waiting":
        [interaction] = [i for i in view.interactions if i.status == "requested"]
        asked.append((interaction.agent_path[-1], interaction.reason["input"]["name"], interaction.request_id))
        # A new service for every answer: a rebuilt process, as in Lambda.
        view = Service(DynamoDBStore(aws), aws, clock, call_0_every_time).submit_approval(
            session_id, view.turn_id, interaction.request_id, APPROVE
        )
    assert (view.status, view.output) == ("completed", "all three done")
    assert [(agent, name) for agent, name, _ in asked] == [
        ("db_admin", "prod-db"),
        ("orchestrator", "staging-db"),
        ("db_admin", "prod-db"),
    ]
    assert len({request_id for *_, request_id in asked}) == 3, "three interactions, none inherited"
    assert executions(ledger) == ["delete prod-db", "delete staging-db", "delete prod-db"]
    assert len(view.children) == 2
    assert {c.status for c in view.children} == {"completed"}
    assert len({c.turn_id for c in view.children}) == 2, "each call of the sub-agent is a child turn of its own"

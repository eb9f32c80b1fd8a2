"""The default agent factory (the offline demo) through the service."""

from __future__ import annotations

from resumable import demo_agents
from resumable.config import Settings
from resumable.service import Service
from resumable.store import DynamoDBStore
from tests.clock import FakeClock
from tests.integration.helpers import APPROVE


def test_the_default_factory_asks_before_deleting_and_deletes_once_when_approved(
    aws: Settings, session_id: str
) -> None:
    service = Service(DynamoDBStore(aws), aws, FakeClock())
    assert aws.agent_factory == "resumable.demo_agents:build_demo_agents"
    demo_agents.DATABASE["demo-db"] = "demo"
    started = service.start_turn(session_id, "please delete the demo-db record")
    [interaction] = started.interactions
    assert interaction.agent_path == ["orchestrator", "db_admin"]
    assert interaction.reason == {
        "agent": "db_admin",
        "tool": "delete_record",
        "input": {"name": "demo-db"},
        "explanation": "You asked me to delete the record demo-db; delete_record does that.",
        "risk": "destructive",
        "impact": "Deletes the named record for good: there is no undo",
    }
    assert "demo-db" in demo_agents.DATABASE
    done = service.submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE)
    assert (done.status, done.output) == ("completed", "record demo-db deleted")
    assert demo_agents.DELETIONS.count("demo-db") == 1
    assert service.start_turn(session_id, "hello").output == "Ask me to delete a record, e.g. 'delete prod-db'."

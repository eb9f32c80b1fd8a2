"""Agent factories for the service tests (``AGENT_FACTORY=tests.factories:<name>``).

Approved actions append a line to a ledger file named by ``RESUMABLE_TEST_LEDGER``, so executions
are counted across threads and processes alike.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from resumable import Agent, ScriptedModel, tool
from resumable.service import AgentContext
from tests.agents import calls, says

LEDGER_ENV = "RESUMABLE_TEST_LEDGER"


def executions(ledger: Path) -> list[str]:
    return ledger.read_text().splitlines() if ledger.exists() else []


@tool(approval=True)
def delete_record(name: str) -> str:
    """Delete a database record."""
    with open(os.environ[LEDGER_ENV], "a") as ledger:
        ledger.write(f"delete {name}\n")
    return f"deleted {name}"


def _db_admin(name: str = "db_admin", session: Any = None, target: str = "prod-db") -> Agent:
    return Agent(
        name=name,
        model=ScriptedModel([calls(("w-1", "delete_record", {"name": target})), says(f"{target} is deleted")]),
        tools=[delete_record],
        session=session,
    )


def nested(context: AgentContext) -> Agent:
    """orchestrator -> db_admin (ephemeral) -> delete_record (approval)."""
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "db_admin", {"prompt": "delete prod-db"})), says("The record is gone.")]),
        tools=[_db_admin().as_tool()],
    )


def nested_preserving(context: AgentContext) -> Agent:
    """orchestrator -> db_admin (preserve_context=True, its own S3Session) -> delete_record."""
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "db_admin", {"prompt": "delete prod-db"})), says("The record is gone.")]),
        tools=[_db_admin(session=context.session).as_tool(preserve_context=True)],
    )


def fan_out(context: AgentContext) -> Agent:
    """orchestrator -> two db_admin calls in one step, deleting two records."""
    return Agent(
        name="orchestrator",
        model=ScriptedModel(
            [
                calls(("o-1", "admin_a", {"prompt": "delete a"}), ("o-2", "admin_b", {"prompt": "delete b"})),
                says("Both are gone."),
            ]
        ),
        tools=[_db_admin("admin_a", target="a-db").as_tool(), _db_admin("admin_b", target="b-db").as_tool()],
    )


def three_levels(context: AgentContext) -> Agent:
    """orchestrator -> manager -> db_admin -> delete_record."""
    manager = Agent(
        name="manager",
        model=ScriptedModel([calls(("m-1", "db_admin", {"prompt": "delete"})), says("manager: done")]),
        tools=[_db_admin().as_tool()],
    )
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "manager", {"prompt": "delete"})), says("all done")]),
        tools=[manager.as_tool()],
    )


def direct(context: AgentContext) -> Agent:
    """An orchestrator that asks for approval itself (no sub-agent)."""
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "delete_record", {"name": "prod-db"})), says("done")]),
        tools=[delete_record],
    )


def chatty(context: AgentContext) -> Agent:
    """No tools: every turn of the session is answered from the script, in conversation order."""
    return Agent(name="chatty", model=ScriptedModel([says("first answer"), says("second answer")]))


def nested_in_memory(context: AgentContext) -> Agent:
    """orchestrator -> db_admin (preserve_context=True, no session: cannot resume after a rebuild)."""
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "db_admin", {"prompt": "delete prod-db"})), says("The record is gone.")]),
        tools=[_db_admin().as_tool(preserve_context=True)],
    )

"""The agents ``make load`` runs: the demo's (an orchestrator and a ``db_admin`` sub-agent whose
``delete_record`` needs a person's approval, driven by the demo's deterministic model), with an
action that writes one line to a ledger (``RESUMABLE_LOAD_LEDGER``) each time it runs, naming its
session and turn: how the load test counts that every approved action ran exactly once."""

from __future__ import annotations

import os
import threading

from resumable import Agent, tool
from resumable.demo_agents import DemoModel
from resumable.service import AgentContext

LEDGER_ENV = "RESUMABLE_LOAD_LEDGER"
_WRITING = threading.Lock()


def build(context: AgentContext) -> Agent:
    @tool(approval=True, risk="destructive", impact="Deletes the named record for good: there is no undo")
    def delete_record(name: str) -> str:
        """Delete a database record. A person must approve it first.

        Args:
            name: The name of the record.
        """
        with _WRITING, open(os.environ[LEDGER_ENV], "a") as ledger:
            ledger.write(f"{context.session_id} {context.turn_id} {name}\n")
        return f"record {name} deleted"

    db_admin = Agent(name="db_admin", model=DemoModel(), tools=[delete_record])
    return Agent(
        name="orchestrator",
        model=DemoModel(),
        tools=[db_admin.as_tool(description="Ask the database administrator to do a task, e.g. delete a record.")],
    )

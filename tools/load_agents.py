"""The agents ``make load`` runs: an orchestrator and a ``db_admin`` sub-agent with two destructive
tools that need a person's approval, ``delete_record`` (one approver) and ``drop_table`` (two: the
load test's deployment rule, ``RULES``), driven by a deterministic model. Each run of either writes
one line to a ledger (``RESUMABLE_LOAD_LEDGER``) naming its session and turn: how the load test
counts that every approved action ran exactly once."""

from __future__ import annotations

import json
import os
import re
import threading
from typing import Any

from resumable import Agent, tool
from resumable.service import AgentContext

LEDGER_ENV = "RESUMABLE_LOAD_LEDGER"
RULES = json.dumps([{"tools": ["drop_*"], "required": 2, "name": "two-person drop"}])
"""The load test's approval rules (``APPROVAL_RULES``): dropping a table takes two people's approval."""
_WRITING = threading.Lock()
_ASKED = re.compile(r"(delete|drop) ([A-Za-z0-9_.-]+)")


class LoadModel:
    """Asks its first tool for what the prompt says ("delete rec-1", "drop tbl-2"), then reports the
    result: the orchestrator's first tool is db_admin; db_admin's are the two destructive ones."""

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        last = messages[-1]["content"]
        results = [b["toolResult"] for b in last if "toolResult" in b]
        if results:
            return {"role": "assistant", "content": [{"text": str(results[0]["content"][0].get("text"))}]}
        asked = _ASKED.search(" ".join(b["text"] for b in last if "text" in b))
        names = [spec["name"] for spec in tool_specs]
        if asked is None or not names:
            return {"role": "assistant", "content": [{"text": "Ask me to delete a record or drop a table."}]}
        verb, target = asked.groups()
        name = f"{verb}_{'record' if verb == 'delete' else 'table'}"
        use, given = (name, {"name": target}) if name in names else (names[0], {"prompt": f"{verb} {target}"})
        replies = sum(1 for m in messages if m["role"] == "assistant")
        return {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": f"{use}-{replies}", "name": use, "input": given}}],
        }


def build(context: AgentContext) -> Agent:
    def ran(what: str) -> str:
        with _WRITING, open(os.environ[LEDGER_ENV], "a") as ledger:
            ledger.write(f"{context.session_id} {context.turn_id} {what}\n")
        return f"{what}: done"

    @tool(approval=True, risk="destructive", impact="Deletes the named record for good: there is no undo")
    def delete_record(name: str) -> str:
        """Delete a database record. A person must approve it first.

        Args:
            name: The name of the record.
        """
        return ran(f"delete {name}")

    @tool(approval=True, risk="destructive", impact="Drops the named table and every record in it")
    def drop_table(name: str) -> str:
        """Drop a table. Two people must approve it first.

        Args:
            name: The name of the table.
        """
        return ran(f"drop {name}")

    db_admin = Agent(name="db_admin", model=LoadModel(), tools=[delete_record, drop_table])
    return Agent(
        name="orchestrator",
        model=LoadModel(),
        tools=[db_admin.as_tool(description="Ask the database administrator to delete a record or drop a table.")],
    )

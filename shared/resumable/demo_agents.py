"""The default agent factory: an orchestrator and a ``db_admin`` sub-agent whose ``delete_record``
needs a person's approval.

Offline it is driven by ``DemoModel``, a deterministic model that needs no credentials; with
``MODEL_ID`` set it uses Bedrock (and so needs AWS credentials). The "database" lives in memory.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

from resumable.runtime.agent import Agent
from resumable.runtime.models import BedrockModel, Model
from resumable.runtime.tools import tool
from resumable.service.agent_factory import AgentContext

DATABASE: dict[str, str] = {
    "prod-db": "production",
    "staging-db": "staging",
    "test-db": "test",
    "dev-db": "development",
}
DELETIONS: list[str] = []
_LOCK = threading.Lock()
_TARGET = re.compile(r"delete (?:the )?([A-Za-z0-9_.-]+)", re.IGNORECASE)


@tool(approval=True, risk="destructive", impact="Deletes the named record for good: there is no undo")
def delete_record(name: str) -> str:
    """Delete a database record. A person must approve it first.

    Args:
        name: The name of the record, such as prod-db.
    """
    with _LOCK:
        if name not in DATABASE:
            return f"there is no record named {name}"
        del DATABASE[name]
        DELETIONS.append(name)
    return f"record {name} deleted"


class DemoModel:
    """A deterministic stand-in for a model: delegates "delete <name>" to the tool it has, saying why,
    and reports the tool's result. Tool use ids count the conversation's replies, so they never repeat."""

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        replies = sum(1 for m in messages if m["role"] == "assistant")
        last = messages[-1]["content"]
        results = [b["toolResult"] for b in last if "toolResult" in b]
        if results:
            text = " ".join(str(c.get("text", c.get("json"))) for r in results for c in r["content"])
            return {"role": "assistant", "content": [{"text": text}]}
        prompt = " ".join(b["text"] for b in last if "text" in b)
        target = _TARGET.search(prompt)
        if target is None or not tool_specs:
            return {"role": "assistant", "content": [{"text": "Ask me to delete a record, e.g. 'delete prod-db'."}]}
        name = target.group(1)
        tool_name = tool_specs[0]["name"]
        tool_input = {"name": name} if tool_name == "delete_record" else {"prompt": f"delete {name}"}
        said = (
            f"You asked me to delete the record {name}; delete_record does that."
            if tool_name == "delete_record"
            else f"Deleting {name} is a database task: I am handing it to {tool_name}."
        )
        return {
            "role": "assistant",
            "content": [
                {"text": said},
                {"toolUse": {"toolUseId": f"{tool_name}-{replies}", "name": tool_name, "input": tool_input}},
            ],
        }


def build_demo_agents(context: AgentContext) -> Agent:
    model_id = os.environ.get("MODEL_ID")
    model: Model = BedrockModel(model_id) if model_id else DemoModel()
    db_admin = Agent(
        name="db_admin",
        model=model,
        tools=[delete_record],
        system_prompt="You administer the databases. Delete records only with the delete_record tool.",
    )
    return Agent(
        name="orchestrator",
        model=model,
        tools=[db_admin.as_tool(description="Ask the database administrator to do a task, e.g. delete a record.")],
        system_prompt="You help the user; database work goes to db_admin.",
    )

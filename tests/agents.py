"""Builders for the agent trees the tests rebuild from nothing but stored state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from resumable import Agent, FileSession, ScriptedModel, tool
from resumable.runtime.invocation import ApprovedAction, FencingToken


def says(text: str) -> dict[str, Any]:
    """An assistant message with text only."""
    return {"role": "assistant", "content": [{"text": text}]}


def calls(*uses: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """An assistant message calling tools: each use is (toolUseId, tool name, input)."""
    return {
        "role": "assistant",
        "content": [{"toolUse": {"toolUseId": i, "name": n, "input": inp}} for i, n, inp in uses],
    }


def approve(interrupt_id: str) -> dict[str, Any]:
    return {"interruptResponse": {"interruptId": interrupt_id, "response": {"decision": "approve"}}}


def deny(interrupt_id: str, message: str = "not today") -> dict[str, Any]:
    return {"interruptResponse": {"interruptId": interrupt_id, "response": {"decision": "deny", "message": message}}}


def make_delete_record(executions: list[str]) -> Any:
    @tool(approval=True)
    def delete_record(name: str) -> str:
        """Delete a database record.

        Args:
            name: The record to delete.
        """
        executions.append(name)
        return f"deleted {name}"

    return delete_record


def build_worker(
    executions: list[str],
    *,
    name: str = "db_admin",
    session_dir: Any = None,
    script: list[dict[str, Any]] | None = None,
) -> Agent:
    """A sub-agent whose delete_record tool needs approval."""
    return Agent(
        name=name,
        model=ScriptedModel(
            script or [calls(("w-1", "delete_record", {"name": "prod-db"})), says("prod-db is deleted")]
        ),
        tools=[make_delete_record(executions)],
        system_prompt="You administer databases.",
        session=FileSession(session_dir) if session_dir is not None else None,
    )


def build_orchestrator(
    executions: list[str],
    *,
    preserve_context: bool = False,
    worker_session_dir: Any = None,
    worker: Agent | None = None,
) -> Agent:
    """An orchestrator that calls the db_admin sub-agent once as a tool."""
    worker = worker or build_worker(executions, session_dir=worker_session_dir)
    return Agent(
        name="orchestrator",
        model=ScriptedModel(
            [calls(("o-1", "db_admin", {"prompt": "delete the prod-db record"})), says("The record is gone.")]
        ),
        tools=[worker.as_tool(preserve_context=preserve_context)],
    )


class RoundModel:
    """A model that answers from what the conversation holds, not from how many replies it holds (as
    ScriptedModel does), so it suits an agent whose conversation manager drops messages. A prompt gets
    a call of ``tool`` with the prompt as ``{key: prompt}`` (toolUseId ``call_0`` in every reply, as some
    providers number them); tool results get an answer quoting them; a call that offers no tools (a
    conversation manager asking for a summary) gets a summary.

    ``last_input`` is the conversation of its last call that offered tools; ``summaries`` counts the
    summaries it wrote.
    """

    def __init__(self, tool: str = "lookup", key: str = "query") -> None:
        self.tool, self.key = tool, key
        self.last_input: list[dict[str, Any]] = []
        self.summaries = 0

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        if not tool_specs:
            self.summaries += 1
            asked = len(messages[0]["content"][0]["text"])
            return says(f"summary of {asked} characters: the user asked for records and was given them.")
        self.last_input = list(messages)
        last = messages[-1]["content"]
        results = [block["toolResult"] for block in last if "toolResult" in block]
        if results:
            quoted = [part["text"] for result in results for part in result["content"] if "text" in part]
            return says("answer: " + "; ".join(quoted))
        prompt = " ".join(block["text"] for block in last if "text" in block)
        return calls(("call_0", self.tool, {self.key: prompt}))


class RememberingJournal:
    """An action journal that remembers every key it ran and gives its result again, as the service's
    does across rebuilds (runtime tests need no AWS for it)."""

    def __init__(self) -> None:
        self.results: dict[str, dict[str, Any]] = {}

    def run(self, action: ApprovedAction, perform: Callable[[FencingToken], dict[str, Any]]) -> dict[str, Any]:
        if action.key not in self.results:
            self.results[action.key] = perform(FencingToken(action.key, 1))
        return {**self.results[action.key], "toolUseId": action.tool_use_id}


@tool
def get_weather(city: str, days: int = 1) -> dict[str, Any]:
    """Look up the weather forecast for a city.

    Args:
        city: The city to look up.
        days: How many days ahead to forecast.
    """
    return {"city": city, "forecast": ["sunny"] * days}

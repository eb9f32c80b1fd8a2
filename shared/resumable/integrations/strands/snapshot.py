"""A StrandsTree's state: the tree's snapshot (the root's Strands snapshot, which holds the interrupted
turns of ``preserve_context=False`` sub-agents, with the interrupts it waits on and the approvals it
asked), a stored state loaded into an agent all or nothing, a context-keeping sub-agent's paused turn
dismissed when a new turn starts, and Strands' warning about such a sub-agent dropped (its state is
kept in the run's session)."""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

import strands

from resumable.exceptions import SnapshotError
from resumable.runtime.interrupts import Interrupt

logger = logging.getLogger(__name__)

SNAPSHOT_KIND = "strands"
SNAPSHOT_VERSION = "1"


def _tree_snapshot(name: str, root: Any, pending: Mapping[str, Interrupt], asked: Mapping[str, Any]) -> dict[str, Any]:
    """The snapshot of the tree ``name`` whose root agent is ``root``."""
    return {
        "kind": SNAPSHOT_KIND,
        "schema_version": SNAPSHOT_VERSION,
        "agent": name,
        "root": root.take_snapshot(preset="session").to_dict(),
        "pending": [i.to_dict() for i in pending.values()],
        "asked": dict(asked),
    }


def _tree_state(snapshot: dict[str, Any], name: str) -> tuple[dict[str, Interrupt], dict[str, Any]]:
    """The interrupts the stored ``snapshot`` of the tree ``name`` waits on and the approvals it asked;
    SnapshotError, saying why, for a snapshot this build does not read."""
    if not isinstance(snapshot, dict) or snapshot.get("kind") != SNAPSHOT_KIND:
        raise SnapshotError(
            f"the stored snapshot is not a Strands tree's (kind {_kind(snapshot)!r}): was the agent factory "
            "changed from our runtime to Strands while the turn waited? Deploy the factory it was paused under"
        )
    if snapshot.get("schema_version") != SNAPSHOT_VERSION or snapshot.get("agent") != name:
        raise SnapshotError(
            f"the stored Strands snapshot is of schema {snapshot.get('schema_version')!r} for root agent "
            f"{snapshot.get('agent')!r}; this build reads schema {SNAPSHOT_VERSION!r} for {name!r}"
        )
    try:
        pending = {i["id"]: Interrupt(i["id"], i["name"], i.get("reason")) for i in snapshot["pending"]}
        asked = dict(snapshot["asked"])
    except (KeyError, TypeError) as error:
        raise SnapshotError(f"the stored Strands snapshot is malformed: {error!r}") from error
    return pending, asked


def _kind(snapshot: Any) -> Any:
    return snapshot.get("kind", "resumable") if isinstance(snapshot, dict) else type(snapshot).__name__


class _KeptByUs(logging.Filter):
    """Drops Strands' warning that a paused ``preserve_context=True`` sub-agent cannot be resumed after a
    restart for want of a session manager: under a StrandsTree its state is kept in the run's session."""

    def __init__(self) -> None:
        super().__init__()
        self.tools: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            "cannot be resumed after a restart" in str(record.msg)
            and isinstance(record.args, tuple)
            and bool(record.args)
            and record.args[0] in self.tools
        )


_KEPT_BY_US = _KeptByUs()
logging.getLogger("strands.agent._agent_as_tool").addFilter(_KEPT_BY_US)


def _load(agent: Any, stored: dict[str, Any]) -> None:
    """Load ``stored`` into ``agent``, or change nothing: Strands loads field by field, so a snapshot that
    fails halfway is undone from the state taken before."""
    before = agent.take_snapshot(preset="session")
    try:
        agent.load_snapshot(strands.Snapshot.from_dict(stored))
    except Exception as error:
        agent.load_snapshot(before)
        raise SnapshotError(f"Strands agent {agent.name!r} cannot load its stored state: {error}") from error


def _dismiss_paused_turn(agent: Any) -> None:
    """A context-keeping sub-agent still paused when a new turn starts (its turn was canceled, expired or
    failed while it waited): its paused calls are closed as not run, so they are never asked again."""
    stored = agent.take_snapshot(preset="session").to_dict()
    state = stored["data"].get("interrupt_state") or {}
    if not state.get("activated"):
        return
    messages = stored["data"]["messages"]
    pending = (state.get("pending_tool_execution") or {}).get("assistant_message")
    last = messages[-1] if messages else None
    if last is not None and last.get("role") == "assistant":
        pending = None  # the paused reply is already in the conversation
    elif pending is not None:
        messages.append(copy.deepcopy(pending))
    uses = [b["toolUse"] for b in (messages[-1]["content"] if messages else []) if "toolUse" in b]
    if messages and messages[-1].get("role") == "assistant" and uses:
        # Calls that finished keep their results (an approved action that ran is reported as run).
        finished = {
            r["toolUseId"]: r
            for r in (state.get("pending_tool_execution") or {}).get("completed_tool_results") or []
            if isinstance(r, dict) and "toolUseId" in r
        }
        text = "DISMISSED: the turn this call waited in ended without it (canceled, expired or failed); it did not run."
        unfinished = {"status": "error", "content": [{"text": text}]}
        results = [
            {"toolResult": finished.get(u["toolUseId"]) or {"toolUseId": u["toolUseId"], **unfinished}} for u in uses
        ]
        messages.append({"role": "user", "content": results})
        # Roles alternate (Bedrock refuses two user messages in a row): the next prompt follows a reply.
        messages.append(
            {"role": "assistant", "content": [{"text": "That turn ended before these calls were answered."}]}
        )
    stored["data"]["interrupt_state"] = {"interrupts": {}, "context": {}, "activated": False}
    _load(agent, stored)
    logger.info("agent=<%s> | a paused turn of an earlier turn dismissed: its calls did not run", agent.name)

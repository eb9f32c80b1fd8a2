"""What a StrandsTree refuses, and why: configurations that would weaken a guarantee, refused when the
tree is built (``_refuse``, saying why): an agent with its own Strands session manager (its state would
be written outside the turn's commit), background tool tasks (they outlive the run and its lease),
tool-execution middleware (it runs after the approval), two agents of one name, one agent in two places
or two trees, a ``preserve_context=True`` sub-agent without a session. And at the call: a tool call
whose toolUseId an earlier reply of the same agent used (Strands names interrupts by toolUseId alone,
so the answer to the earlier call would apply to it).
"""

from __future__ import annotations

from typing import Any

from strands.middleware.stages import ExecuteToolStage

from resumable.runtime.session import Session

REUSED_ID = (
    "Refused: an earlier reply of this agent already used toolUseId {id!r}, so an answer given about that call "
    "would apply to this one; it did NOT run. The model provider must give every tool call its own id."
)

_GUARDED = "_resumable_strands_tree"
"""The attribute that marks an agent a StrandsTree guards (one tree per agent)."""


def _tool_middleware(agent: Any) -> bool:
    """Whether ``agent`` has tool-execution middleware besides Strands' own (read from Strands' registry,
    not public in 1.62: an input or output phase, or a wrapper that is not Strands' own delegation)."""
    handlers = getattr(getattr(agent, "_middleware_registry", None), "_handlers", None)
    if not isinstance(handlers, dict):
        return False
    return any(
        getattr(tagged, "phase", None) != "wrap"
        or not str(getattr(tagged.handler, "__module__", "")).startswith("strands.")
        for tagged in handlers.get(ExecuteToolStage, [])
    )


def _refuse(agent: Any, *, known: Any, preserving: bool, session: Session | None) -> None:
    """Raise ValueError, saying why, when ``agent`` cannot be run under the guarantees: ``known`` is the
    tree's agent of the same name (None: none yet), ``preserving`` whether its caller keeps its context,
    ``session`` the tree's."""
    name = agent.name
    if known is agent:
        raise ValueError(
            f"Strands agent {name!r} is the tool of two as_tool wrappers: a tree's agent has one caller (its "
            "wrappers would disagree about keeping its context); build a second agent"
        )
    if known is not None:
        raise ValueError(
            f"two Strands agents are named {name!r}: each agent of a tree needs its own name (it keys the "
            "agent's stored state and its child turns)"
        )
    if getattr(agent, _GUARDED, None) is not None:
        raise ValueError(
            f"Strands agent {name!r} is already run by another StrandsTree: build the agents afresh in the "
            "factory, on every call (the service rebuilds them for every request and restores their state)"
        )
    if _tool_middleware(agent):
        raise ValueError(
            f"Strands agent {name!r} has tool-execution middleware (ExecuteToolStage), which runs after the "
            "approval and could replace an approved call or its input, outside the action journal: remove it"
        )
    if getattr(agent, "_session_manager", None) is not None:
        raise ValueError(
            f"Strands agent {name!r} has a session manager: under the service an agent's state is stored "
            "with its turn (a session manager would write it outside the turn's commit, so a turn resumed "
            "twice could keep the loser's state); remove session_manager=..."
        )
    if getattr(agent, "_background_tasks", None) is not None:
        raise ValueError(
            f"Strands agent {name!r} runs tools as background tasks, which outlive the run that holds the "
            "turn's lease (an approved action could run unjournaled): remove background_tasks=..."
        )
    if preserving and session is None:
        raise ValueError(
            f"Strands sub-agent {name!r} keeps its context (as_tool(preserve_context=True)) but the tree "
            "has no session to keep it in: StrandsTree(root, session=context.session)"
        )


def _reused(agent: Any, tool_use_id: str) -> bool:
    """Whether an earlier reply of ``agent`` than its latest one called a tool with ``tool_use_id``."""
    replies = [m for m in agent.messages if m.get("role") == "assistant"]
    return any(
        "toolUse" in block and block["toolUse"].get("toolUseId") == tool_use_id
        for message in replies[:-1]
        for block in message.get("content", [])
    )

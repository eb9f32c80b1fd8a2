"""One run of a StrandsTree: what its ``invoke`` keeps (the stop signal Strands observes, what stopped it,
what was asked), where each agent's call runs in the tree (its frame: the invocation, and for a
sub-agent the call that made it, its child turn), and what the hooks of a run ask of the tree."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from resumable.runtime.invocation import Invocation, SubAgentCall
from resumable.runtime.rules import ApprovalRule
from resumable.runtime.session import Session


@dataclass(frozen=True)
class _Frame:
    """Where one call of a Strands agent runs in the tree: its invocation (id prefix, agent path) and,
    for a sub-agent, the call that made it (its child turn)."""

    invocation: Invocation
    call: SubAgentCall | None = None


# The frame of each agent running in this task, by ``id(agent)``: a sub-agent's frame is set by its
# caller's hook in the task that runs the call (Strands runs each tool call, and the sub-agent it
# calls, in one task; concurrent calls in tasks of their own, each with a copy of this).
_FRAMES: contextvars.ContextVar[Mapping[int, _Frame] | None] = contextvars.ContextVar(
    "resumable_strands_frames", default=None
)


def _with_frame(agent: Any, frame: _Frame) -> contextvars.Token[Mapping[int, _Frame] | None]:
    return _FRAMES.set({**(_FRAMES.get() or {}), id(agent): frame})


@dataclass
class _Run:
    """One ``invoke`` of the tree: the stop signal Strands observes, what stopped it, what it asked."""

    cancel_signal: threading.Event = field(default_factory=threading.Event)
    canceled: bool = False
    fatal: Exception | None = None
    notes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What the model is told beside a call's result (a person's edit), by call (id prefix + toolUseId)."""
    approved_inputs: dict[str, Any] = field(default_factory=dict)
    """The input each approval of this run approved, by approval id (an edit's, or the asked one)."""
    just_asked: set[str] = field(default_factory=set)
    """The calls of agents (by id prefix) whose model call was a step boundary with nothing asked since."""


class _Tree(Protocol):
    """What the hooks on an agent, and the journaled tools they run, ask of the ``StrandsTree`` that runs
    them (tree.py, which imports them: they know it by this alone)."""

    _run: _Run
    session: Session | None
    preserving: dict[str, Any]

    def step_boundary(self, frame: _Frame) -> bool: ...

    def failed(self, error: Exception) -> None: ...

    def asked(self, interrupt_id: str) -> Any: ...

    def needs_approval(self, tool_name: str, invocation: Invocation) -> tuple[bool, bool, ApprovalRule | None]: ...

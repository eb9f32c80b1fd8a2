"""Interrupts: pauses that wait for a response from outside the agent.

An interrupt id is opaque to callers: pass it back unchanged in an ``interruptResponse`` block and
use ``name`` and ``reason`` for anything shown to a person. Ids are deterministic, so a replayed step
raises the same id again rather than a second pending question.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

APPROVAL_INTERRUPT = "approval"
"""The name of the interrupt raised before a call that needs approval runs (``resumable.runtime.approval``)."""

_TOOL_ID_NAMESPACE = uuid.UUID("5d0c1a52-6b0e-4f38-9d39-7a4c1e6f2b10")


def tool_interrupt_id(tool_use_id: str, name: str, cycle: int | None = None) -> str:
    """The id of the interrupt ``name`` raised by the tool call ``tool_use_id`` of the model's reply
    number ``cycle`` (see ``Agent.cycle``): some providers number their tool calls afresh in every
    reply, so a toolUseId names a call only within one reply.

    The JSON list keeps the parts unambiguous whatever characters they hold. ``cycle=None`` is the
    id of a turn paused before replies were numbered (a snapshot of schema 1.0): its list has two
    parts, so it never equals a numbered one.
    """
    parts: list[Any] = [tool_use_id, name] if cycle is None else [tool_use_id, name, cycle]
    return f"v1:tool:{uuid.uuid5(_TOOL_ID_NAMESPACE, json.dumps(parts))}"


CHECKPOINT_INTERRUPT = "resumable.checkpoint"
"""The name of the interrupt a turn pauses on when its invocation asks for a checkpoint before a tool
call (its time budget is spent): nobody answers it; the invocation that continues the turn answers
it with ``CONTINUE``, and the tool call runs then."""

CONTINUE: dict[str, bool] = {"continue": True}


@dataclass(frozen=True)
class Interrupt:
    """A pause awaiting a response: ``id`` (opaque), ``name`` and a JSON ``reason``."""

    id: str
    name: str
    reason: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "reason": self.reason}


def describe(interrupts: Iterable[Interrupt]) -> str:
    """Interrupts as an error message lists them: ``'<id>' (<name>)``, comma-separated."""
    return ", ".join(f"{i.id!r} ({i.name})" for i in interrupts)


class InterruptException(Exception):  # noqa: N818 - it is a control-flow signal, not an error
    """Raised inside a tool to pause the turn; the agent loop turns it into pending interrupts."""

    def __init__(self, interrupts: list[Interrupt]) -> None:
        super().__init__(", ".join(i.id for i in interrupts))
        self.interrupts = interrupts


# The interrupt-context keys the agent loop owns. Every other key belongs to someone else (an
# agent-as-tool's stored turns, an application's own data) and survives storing a turn.
TOOL_RESULTS_KEY = "tool_results"
STEPS_KEY = "steps"
"""How many model calls the paused turn has made: ``max_steps`` holds for a whole turn, across pauses."""
CYCLE_KEY = "cycle"
"""The number of the reply whose tool calls the turn paused in (absent: paused before replies were
numbered, whose calls keep the ids they were asked under)."""


@dataclass
class InterruptState:
    """An agent's record of the turn it paused.

    ``pending`` holds exactly the interrupts raised when the turn last stopped; ``answers`` holds the
    responses given to interrupts of this turn, so a tool that pauses twice gets its first answer back
    when it runs again. A pending interrupt has an answer only when that answer could not be applied
    yet (a sub-agent's stored turn failed to load): it is kept, applied once it can be, and replaced
    if the interrupt is answered again.
    """

    activated: bool = False
    pending: dict[str, Interrupt] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)

    def stop_for(
        self, interrupts: list[Interrupt], tool_results: dict[str, Any], steps: int, cycle: int | None
    ) -> None:
        """Record that the turn stopped on ``interrupts`` in the tool calls of reply ``cycle``, after
        ``steps`` model calls; keys the loop does not own are kept."""
        self.activated = True
        self.pending = {i.id: i for i in interrupts}
        self.context[TOOL_RESULTS_KEY] = tool_results
        self.context[STEPS_KEY] = steps
        if cycle is not None:
            self.context[CYCLE_KEY] = cycle

    @property
    def cycle(self) -> int | None:
        """The number of the reply the paused turn stopped in (None: paused before replies were numbered)."""
        value = self.context.get(CYCLE_KEY)
        return value if isinstance(value, int) else None

    def deactivate(self) -> None:
        """Forget the paused turn entirely (it ended, or was dismissed)."""
        self.activated = False
        self.pending = {}
        self.answers = {}
        self.context = {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "activated": self.activated,
            "pending": [i.to_dict() for i in self.pending.values()],
            "answers": dict(self.answers),
            "context": dict(self.context),
        }

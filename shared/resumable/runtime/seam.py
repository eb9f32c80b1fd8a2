"""The runtime's seam: what the service needs of an agent tree, whichever runtime runs it.

The service runs a tree through these five things and nothing else: its root's ``name``; ``invoke``
(run a prompt, or resume with ``interruptResponse`` blocks, under an ``Invocation`` whose ``stop`` is
asked at every step boundary (looking at the lease, reading a cancel), whose ``journal`` runs every
approved action, whose ``observer`` hears of every sub-agent call (a child turn), whose ``checkpoint``
may pause it before a tool call); the ``AgentResult`` it returns (stop reason, answer, and the
interrupts it waits on, each with the display detail people are shown: its ``reason``);
``pending_interrupts`` (what the stored turn waits on); and ``snapshot``/``restore`` (the whole
tree's state as JSON, stored by the service on S3).

Our ``Agent`` implements it; ``resumable.integrations.strands.StrandsTree`` implements it for an agent
tree of the Strands Agents SDK. Both take a ``Prompt`` and return an ``AgentResult`` (with its
``StopReason``), which this module holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from resumable.runtime.interrupts import Interrupt

if TYPE_CHECKING:
    from resumable.runtime.invocation import Invocation

Prompt = str | Sequence[dict[str, Any]]
StopReason = Literal["end_turn", "interrupt", "max_steps", "canceled"]


@dataclass
class AgentResult:
    """How a call of an agent ended."""

    stop_reason: StopReason
    message: dict[str, Any] | None = None
    interrupts: list[Interrupt] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The text of the final assistant message ('' when the turn did not end with one)."""
        if self.message is None:
            return ""
        return "".join(block["text"] for block in self.message.get("content", []) if "text" in block)

    def __str__(self) -> str:
        return self.text


@runtime_checkable
class AgentRuntime(Protocol):
    """An agent tree the service can run, pause, store, rebuild and resume (see the module)."""

    name: str

    def invoke(self, prompt: Prompt, invocation: Invocation) -> AgentResult:
        """Run ``prompt`` (a new turn) or resume the paused turn with its answers, to the next stop.
        Raises ``LeaseLostError`` when ``invocation.stop`` says the run lost its lease (nothing it did
        may be committed) and ``ModelError`` when the model failed (the turn fails)."""
        ...

    def pending_interrupts(self) -> dict[str, Interrupt]:
        """The interrupts the paused turn waits on, by id (empty when no turn is paused)."""
        ...

    def snapshot(self) -> dict[str, Any]:
        """The tree's state as JSON-serialisable data."""
        ...

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Replace the tree's state with ``snapshot``; ``SnapshotError`` (and nothing changed) if it
        cannot be loaded."""
        ...

"""Hooks: code an application runs before and after each model call and each tool call, and when a
turn pauses or ends.

A hook is an object with any of ``Hook``'s methods; give agents a list of them
(``Agent(hooks=[...])``). Each method gets one event. Before a tool call a hook may change the
call's input, refuse the call (the model is told why and the tool does not run), or pause the turn
with an interrupt (on resume it is called again and the interrupt returns the answer). The other
events are for observing (logging, metrics). The approval policy is itself such a hook
(``resumable.runtime.approval.ApprovalHook``), which every agent runs after its own hooks, so a
person approves the input the call will actually run with.

Hooks are rebuilt with the agents on every request and never stored. So a hook must not do what
would make a resumed turn differ from the paused one: it must decide the same way from the same
call (no clock, no randomness, no state kept in memory between a pause and its resume), must not
change the conversation, and must not use another hook's interrupt name. With tools running
concurrently (``Agent(max_concurrent_tools=...)``), tool-call hooks run on the pool's threads, so a
hook that keeps counters must lock them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from resumable.runtime.agent import Agent
    from resumable.runtime.interrupts import Interrupt
    from resumable.runtime.seam import AgentResult
    from resumable.runtime.tools import Tool, ToolContext

__all__ = [
    "AfterModelCall",
    "AfterToolCall",
    "BeforeModelCall",
    "BeforeToolCall",
    "Hook",
    "TurnEnded",
    "TurnPaused",
]

logger = logging.getLogger(__name__)


@dataclass
class BeforeModelCall:
    """The agent is about to ask its model; ``messages`` is what it sends (do not change it). When the
    model found the conversation too long and the conversation manager dropped more, it is asked again
    (and this event comes again). A manager's request for a summary is not a model call of the turn."""

    agent: Agent
    messages: list[dict[str, Any]]


@dataclass
class AfterModelCall:
    """The model replied; ``message`` is the reply as the conversation records it."""

    agent: Agent
    message: dict[str, Any]


@dataclass
class BeforeToolCall:
    """A tool call is about to run: ``tool_input`` is the input it will run with (a hook may replace
    it); ``refuse`` stops it; ``interrupt`` pauses the turn for an answer. ``approved`` marks the call
    as an approved action (it then runs through the action journal: at most once per approval);
    ``notes`` are content blocks put before its result (what the model should know of the change)."""

    agent: Agent
    tool: Tool
    context: ToolContext
    tool_input: Any
    approved: bool = False
    notes: list[dict[str, Any]] = field(default_factory=list)
    refusal: str | None = None
    grant: str | None = None
    """The standing grant that approved the call without a question (its id), if one did."""

    @property
    def tool_use(self) -> dict[str, Any]:
        """The model's toolUse block (its ``input`` as the model asked for it)."""
        return self.context.tool_use

    def refuse(self, message: str) -> None:
        """Do not run the call: the model gets ``message`` as its error result. Hooks after this one
        are not asked."""
        if not isinstance(message, str) or not message.strip():
            raise ValueError("refuse() needs the message the model is told: a non-blank string")
        self.refusal = message

    def interrupt(self, name: str, reason: Any = None) -> Any:
        """Pause the turn until ``name`` is answered; on resume (this hook is called again), return
        the answer. ``name`` must differ from the tool's own interrupts' names and other hooks'; the
        approval policy's and the checkpoint's names are refused (an answer to one would approve the
        call, or continue it)."""
        from resumable.runtime.interrupts import APPROVAL_INTERRUPT, CHECKPOINT_INTERRUPT

        if name in (APPROVAL_INTERRUPT, CHECKPOINT_INTERRUPT):
            raise ValueError(
                f"a hook's interrupt cannot be named {name!r}: that name belongs to the "
                f"{'approval policy' if name == APPROVAL_INTERRUPT else 'checkpoint'}; the call did not run. "
                "Name the hook's question after what it asks"
            )
        return self.context.interrupt(name, reason)

    def refused_result(self) -> dict[str, Any]:
        from resumable.runtime.tools import tool_result  # tools imports this module's users

        return tool_result(self.context.tool_use_id, self.refusal, "error")


@dataclass
class AfterToolCall:
    """A tool call ended with ``result`` (a Converse toolResult; a hook may replace it, keeping its
    toolUseId). ``refused`` says a hook refused it and the tool did not run."""

    agent: Agent
    tool: Tool
    context: ToolContext
    result: dict[str, Any]
    refused: bool = False


@dataclass
class TurnPaused:
    """The turn paused for ``interrupts`` (questions for people, or a checkpoint)."""

    agent: Agent
    interrupts: list[Interrupt]


@dataclass
class TurnEnded:
    """The turn ended: ``result.stop_reason`` is ``end_turn``, ``max_steps`` or ``canceled``."""

    agent: Agent
    result: AgentResult


class Hook:
    """Override the methods for the events a hook handles; the others do nothing."""

    def before_model_call(self, event: BeforeModelCall) -> None:
        """Called before each model call."""

    def after_model_call(self, event: AfterModelCall) -> None:
        """Called after each model reply is recorded."""

    def before_tool_call(self, event: BeforeToolCall) -> None:
        """Called before each tool call (again when a paused call resumes)."""

    def after_tool_call(self, event: AfterToolCall) -> None:
        """Called after each tool call that ended (not one that paused), in reverse hook order."""

    def turn_paused(self, event: TurnPaused) -> None:
        """Called when the turn pauses for interrupts."""

    def turn_ended(self, event: TurnEnded) -> None:
        """Called when the turn ends."""


def observe(agent: Agent, method: str, event: Any) -> None:
    """Tell every hook of ``agent`` of an event it may only observe: a hook that raises is logged, and
    the turn goes on as it was (a question it asked, a reply it recorded, stays)."""
    for hook in agent.hooks:
        try:
            getattr(hook, method)(event)
        except Exception as error:
            logger.error(
                "agent=<%s> | %s hook %s raised %s: %s; the turn goes on",
                agent.name,
                method,
                type(hook).__name__,
                type(error).__name__,
                error,
            )

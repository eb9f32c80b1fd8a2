"""The agent and its loop: ask the model, run the tools it calls, repeat until it stops.

A turn stops with ``end_turn`` (the model answered), ``interrupt`` (a tool is waiting for a
response), ``max_steps`` (the step limit was reached) or ``canceled`` (the stop signal was seen at
a step boundary). An interrupted turn is resumed by calling the agent with ``interruptResponse``
blocks; tools that already finished in that step are not run again.

Each step has its helpers' home: checking a prompt and its answers (resumable.runtime.prompt), running
and closing a reply's tool calls (tool_calls), dropping more of a conversation too long for the model
(conversation), telling the hooks (hooks), the snapshot (snapshot) and what a call returns (seam).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from resumable.exceptions import ContextWindowOverflowError, InvalidInvocationError, ModelError
from resumable.runtime.approval import ApprovalPolicy
from resumable.runtime.conversation import ConversationManager, reduce_for
from resumable.runtime.hooks import AfterModelCall, BeforeModelCall, Hook, TurnEnded, TurnPaused, observe
from resumable.runtime.interrupts import STEPS_KEY, Interrupt, InterruptState, describe
from resumable.runtime.invocation import Invocation
from resumable.runtime.models import Model, check_assistant_message
from resumable.runtime.prompt import checked_answers, prompt_blocks
from resumable.runtime.seam import AgentResult, Prompt, StopReason
from resumable.runtime.session import Session
from resumable.runtime.snapshot import load_snapshot, make_snapshot
from resumable.runtime.tool_calls import close_step, run_step
from resumable.runtime.tools import Tool

if TYPE_CHECKING:
    from resumable.runtime.agent_as_tool import AgentTool

__all__ = ["Agent", "AgentResult", "Prompt", "StopReason"]

logger = logging.getLogger(__name__)


class Agent:
    """A tool-using agent whose turns can pause for a person and resume after a full rebuild.

    ``session`` makes the agent persist itself: its snapshot is loaded on construction and saved
    after every invocation. ``hooks`` run before and after model and tool calls (resumable.runtime.hooks).
    ``max_concurrent_tools`` bounds how many tool calls of one reply run at once (1: one after another).
    ``conversation_manager`` decides which messages are kept (resumable.runtime.conversation); without
    one, every message is kept and sent to the model.
    """

    def __init__(
        self,
        name: str,
        model: Model,
        tools: Iterable[Tool] = (),
        system_prompt: str | None = None,
        session: Session | None = None,
        max_steps: int = 20,
        approval_policy: ApprovalPolicy | None = None,
        hooks: Iterable[Hook] = (),
        max_concurrent_tools: int = 8,
        conversation_manager: ConversationManager | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("an agent needs a non-empty name: it keys its snapshot and its interrupts' reasons")
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        if type(max_concurrent_tools) is not int or max_concurrent_tools < 1:
            raise ValueError(
                f"max_concurrent_tools must be an int of at least 1 (1 runs tool calls one after another), "
                f"got {max_concurrent_tools!r}"
            )
        self.hooks: list[Hook] = list(hooks)
        for hook in self.hooks:
            if not isinstance(hook, Hook):
                raise ValueError(
                    f"agent '{name}' was given {hook!r} as a hook: hooks subclass resumable.runtime.hooks.Hook"
                )
        if conversation_manager is not None and not isinstance(conversation_manager, ConversationManager):
            raise ValueError(
                f"agent '{name}' was given {conversation_manager!r} as its conversation manager: use SlidingWindow, "
                "Summarizing or a subclass of resumable.runtime.conversation.ConversationManager"
            )
        self.conversation_manager = conversation_manager
        self.max_concurrent_tools = max_concurrent_tools
        self.called_as_tool = threading.RLock()
        """Held by each call of this agent as a tool: calls through any of its tools (``as_tool``) run
        one after another, since they share its state."""
        self.name = name
        self.model = model
        self.system_prompt = system_prompt
        self.session = session
        self.max_steps = max_steps
        self.approval_policy = approval_policy
        self.tools: dict[str, Tool] = {}
        for candidate in tools:
            if not isinstance(candidate, Tool):
                raise ValueError(
                    f"agent '{name}' was given {candidate!r} as a tool: decorate functions with @tool "
                    "and pass sub-agents as agent.as_tool()"
                )
            if candidate.name in self.tools:
                raise ValueError(f"agent '{name}' has two tools named '{candidate.name}': give one another name")
            self.tools[candidate.name] = candidate
        self.messages: list[dict[str, Any]] = []
        self.cycle = 0
        """How many replies of its model the agent has recorded (numbers its tool calls' interrupt ids)."""
        self.dropped_messages = 0
        """How many messages its conversation manager has taken out of the conversation."""
        self.interrupt_state = InterruptState()
        if session is not None:
            stored = session.load(name)
            if stored is not None:
                self.restore(stored)

    def as_tool(
        self, name: str | None = None, description: str | None = None, preserve_context: bool = False
    ) -> AgentTool:
        """This agent as a tool another agent can call.

        ``preserve_context=False`` (the default) gives every call a fresh conversation and lets the
        calling agent keep this agent's interrupted turn, so it resumes after a restart.
        ``preserve_context=True`` keeps this agent's history across calls; it then keeps its own
        interrupted turn, so it resumes after a restart only if it has a ``session``.
        """
        from resumable.runtime.agent_as_tool import AgentTool

        return AgentTool(self, name=name, description=description, preserve_context=preserve_context)

    def snapshot(self) -> dict[str, Any]:
        """The agent's state as JSON-serialisable data (a deep copy), versioned by ``schema_version``."""
        return make_snapshot(self.name, self.messages, self.interrupt_state, self.cycle, self.dropped_messages)

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Replace this agent's state with ``snapshot``; on a snapshot it cannot load, change nothing."""
        self.messages, self.interrupt_state, self.cycle, self.dropped_messages = load_snapshot(self.name, snapshot)

    def pending_interrupts(self) -> dict[str, Interrupt]:
        """The interrupts the paused turn waits on, by id (empty when no turn is paused)."""
        return dict(self.interrupt_state.pending) if self.interrupt_state.activated else {}

    def reset(self) -> None:
        """Forget the conversation and any paused turn."""
        self.messages = []
        self.cycle = 0
        self.dropped_messages = 0
        self.interrupt_state = InterruptState()

    def dismiss_interrupts(self) -> list[Interrupt]:
        """Drop the pending interrupts on purpose and return them.

        The paused tool calls get an error result saying they were not answered and did not run,
        so the conversation stays valid and the next prompt starts a fresh turn.
        """
        dismissed = list(self.interrupt_state.pending.values())
        if self.interrupt_state.activated:
            close_step(self, "DISMISSED: nobody answered this tool call's interrupt; it did not run.")
            logger.info("agent=<%s>, interrupt_ids=<%s> | interrupts dismissed", self.name, [i.id for i in dismissed])
            if self.session is not None:
                self.session.save(self.name, self.snapshot())
        return dismissed

    def __call__(self, prompt: Prompt, *, stop: Callable[[], bool] | None = None) -> AgentResult:
        """Run a turn from ``prompt``, or resume the paused one from ``interruptResponse`` blocks.

        ``stop`` is checked at every step boundary; when it returns True the turn ends ``canceled``.
        """
        return self.invoke(prompt, Invocation(stop=stop, agent_path=(self.name,)))

    def invoke(self, prompt: Prompt, invocation: Invocation) -> AgentResult:
        """``__call__`` with an explicit invocation (used for sub-agents and by the service layer)."""
        self._accept(prompt)
        try:
            result = self._run(invocation)
            self._tell_hooks(result)
        except ModelError:
            # The model fails only between steps, when the conversation is whole: keep it, so that a tool
            # that already ran (an approved action among them) is recorded as having run.
            if self.session is not None:
                self.session.save(self.name, self.snapshot())
            raise
        if self.session is not None:
            self.session.save(self.name, self.snapshot())
        return result

    def _accept(self, prompt: Prompt) -> None:
        """Check the prompt and apply it: a new user message, or the answers to pending interrupts."""
        state = self.interrupt_state
        blocks = prompt_blocks(self.name, prompt)
        if any("interruptResponse" in block for block in blocks):
            state.answers.update(checked_answers(self.name, state, blocks))
            return
        if state.activated:
            raise InvalidInvocationError(
                f"agent '{self.name}' is waiting for responses to {len(state.pending)} interrupt(s): "
                f"{describe(state.pending.values())}. Answer them with "
                '[{"interruptResponse": {"interruptId": <id>, "response": <answer>}}] '
                "or call dismiss_interrupts() to drop them; the new prompt was not added"
            )
        if self.messages and self.messages[-1]["role"] == "user":
            # A turn that ended on tool results (max_steps, canceled, dismissed): Converse needs
            # roles to alternate, so the new prompt joins that user message.
            self.messages[-1]["content"].extend(blocks)
        else:
            self.messages.append({"role": "user", "content": blocks})

    def _run(self, invocation: Invocation) -> AgentResult:
        state = self.interrupt_state
        # max_steps holds for the whole turn: a resumed turn goes on counting (a checkpointed turn
        # continued again and again must still stop).
        steps = int(state.context.get(STEPS_KEY, 0)) if state.activated else 0
        while True:
            if invocation.should_stop():
                if state.activated:
                    close_step(self, "CANCELED: the turn was canceled before this tool call ran.")
                logger.info("agent=<%s>, steps=<%d> | stop signal seen, turn canceled", self.name, steps)
                return AgentResult("canceled")
            if not state.activated:
                if steps >= self.max_steps:
                    logger.warning("agent=<%s>, max_steps=<%d> | step limit reached", self.name, self.max_steps)
                    return AgentResult("max_steps")
                steps += 1
                message = self._ask_model()
                if not any("toolUse" in block for block in message["content"]):
                    state.deactivate()
                    return AgentResult("end_turn", message)
            # A resumed step keeps the number it was paused under (None: paused before numbering).
            cycle = state.cycle if state.activated else self.cycle
            tool_uses = [b["toolUse"] for b in self.messages[-1]["content"] if "toolUse" in b]
            step = run_step(self, tool_uses, invocation, cycle)
            if step.canceled:
                close_step(self, "CANCELED: the turn was canceled before this tool call ran.", step.results)
                logger.info("agent=<%s>, steps=<%d> | stop signal seen mid-step, turn canceled", self.name, steps)
                return AgentResult("canceled")
            if step.interrupts:
                state.stop_for(step.interrupts, step.results, steps, cycle)
                logger.info(
                    "agent=<%s>, interrupt_ids=<%s> | turn paused for responses",
                    self.name,
                    [i.id for i in step.interrupts],
                )
                return AgentResult("interrupt", interrupts=step.interrupts)
            state.deactivate()
            self.messages.append(
                {"role": "user", "content": [{"toolResult": step.results[u["toolUseId"]]} for u in tool_uses]}
            )

    def _ask_model(self) -> dict[str, Any]:
        """The model's next reply, recorded in the conversation under the next cycle number."""
        if self.conversation_manager is not None:
            self.conversation_manager.apply(self)
        message = self._checked_reply(self._converse())
        self.messages.append(message)
        self.cycle += 1
        observe(self, "after_model_call", AfterModelCall(self, message))
        return message

    def _converse(self) -> dict[str, Any]:
        """The model's answer to the conversation. When the model finds the conversation longer than its
        context window, the conversation manager drops more and the model is asked again."""
        tool_specs = [t.spec for t in self.tools.values()]
        reductions = 0
        while True:
            observe(self, "before_model_call", BeforeModelCall(self, self.messages))
            try:
                return self.model.converse(self.messages, self.system_prompt, tool_specs)
            except ContextWindowOverflowError as error:
                reduce_for(self, error, reductions)
            reductions += 1

    def _tell_hooks(self, result: AgentResult) -> None:
        if result.stop_reason == "interrupt":
            observe(self, "turn_paused", TurnPaused(self, result.interrupts))
        else:
            observe(self, "turn_ended", TurnEnded(self, result))

    def _checked_reply(self, reply: Any) -> dict[str, Any]:
        """The model's reply, if it is a Converse assistant message whose toolUseIds differ.

        Two calls of one reply with one toolUseId could not be told apart (the same interrupt ids,
        the same result), so such a reply is refused before anything runs. A toolUseId of an earlier
        reply may come again (some providers number each reply's calls from ``call_0``): every id
        the runtime derives from a call also carries its reply's number (``cycle``).
        """
        message = check_assistant_message(reply, f"the reply of agent '{self.name}''s model")
        ids = [b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ModelError(
                f"the model of agent '{self.name}' gave two tool calls of one reply the same toolUseId "
                f"{repeated}: no tool ran and the reply was not recorded; every call of a reply needs its own id"
            )
        return message

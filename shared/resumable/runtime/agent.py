"""The agent and its loop: ask the model, run the tools it calls, repeat until it stops.

A turn stops with ``end_turn`` (the model answered), ``interrupt`` (a tool is waiting for a
response), ``max_steps`` (the step limit was reached) or ``canceled`` (the stop signal was seen at
a step boundary). An interrupted turn is resumed by calling the agent with ``interruptResponse``
blocks; tools that already finished in that step are not run again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from resumable.exceptions import ContextWindowOverflowError, InvalidInvocationError, ModelError, UnknownInterruptError
from resumable.runtime.approval import ApprovalPolicy
from resumable.runtime.conversation import ConversationManager
from resumable.runtime.hooks import AfterModelCall, BeforeModelCall, Hook, TurnEnded, TurnPaused
from resumable.runtime.interrupts import STEPS_KEY, TOOL_RESULTS_KEY, Interrupt, InterruptState
from resumable.runtime.invocation import Invocation
from resumable.runtime.models import Model, check_assistant_message
from resumable.runtime.seam import AgentResult, Prompt, StopReason
from resumable.runtime.session import Session
from resumable.runtime.snapshot import load_snapshot, make_snapshot
from resumable.runtime.tool_calls import run_step
from resumable.runtime.tools import APPROVAL_INTERRUPT, ApprovalAnswer, Tool, tool_result

if TYPE_CHECKING:
    from resumable.runtime.agent_as_tool import AgentTool

__all__ = ["MAX_REDUCTIONS", "Agent", "AgentResult", "Prompt", "StopReason"]

logger = logging.getLogger(__name__)

MAX_REDUCTIONS = 3
"""How many times, for one reply, the conversation manager drops more after the model found the
conversation longer than its context window."""


def _describe(interrupts: Iterable[Interrupt]) -> str:
    return ", ".join(f"{i.id!r} ({i.name})" for i in interrupts)


# The Converse content blocks a prompt may carry.
_PROMPT_BLOCKS = frozenset({"text", "image", "document", "video", "guardContent", "cachePoint"})


def _check_prompt_blocks(agent_name: str, blocks: list[dict[str, Any]]) -> None:
    for block in blocks:
        if len(block) != 1 or next(iter(block)) not in _PROMPT_BLOCKS:
            raise InvalidInvocationError(
                f"agent '{agent_name}' got a prompt block {block!r}; each block must have exactly one of "
                f"{sorted(_PROMPT_BLOCKS)} (or be an interruptResponse): nothing was added"
            )
        if "text" in block and (not isinstance(block["text"], str) or not block["text"].strip()):
            raise InvalidInvocationError(
                f"agent '{agent_name}' got a text block that is not a non-blank string: {block!r}; nothing was added"
            )


def _parse_responses(blocks: Sequence[Any]) -> dict[str, Any]:
    """The ``{interrupt id: response}`` of a prompt made of interruptResponse blocks."""
    responses: dict[str, Any] = {}
    for block in blocks:
        body = block.get("interruptResponse")
        if not isinstance(body, dict) or not isinstance(body.get("interruptId"), str):
            raise InvalidInvocationError(
                "an interruptResponse block must be "
                '{"interruptResponse": {"interruptId": "<id>", "response": <answer>}}, '
                f"got {block!r}: nothing was resumed"
            )
        interrupt_id = body["interruptId"]
        if body.get("response") is None:
            raise InvalidInvocationError(
                f"the interruptResponse for {interrupt_id!r} has no response (missing or null): "
                "send the answer as its 'response'; nothing was resumed"
            )
        if interrupt_id in responses:
            raise InvalidInvocationError(
                f"interrupt {interrupt_id!r} is answered twice in one prompt: nothing was resumed"
            )
        responses[interrupt_id] = body["response"]
    return responses


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
            self._close_step("DISMISSED: nobody answered this tool call's interrupt; it did not run.")
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
        if isinstance(prompt, str) and prompt.strip():
            blocks: list[Any] = [{"text": prompt}]
        elif isinstance(prompt, Sequence) and prompt and all(isinstance(b, dict) for b in prompt):
            blocks = list(prompt)
        else:
            raise InvalidInvocationError(
                f"agent '{self.name}' needs a prompt that is a non-blank string or a non-empty list of content blocks, "
                f"got {prompt!r}"
            )
        answering = [b for b in blocks if "interruptResponse" in b]
        if not answering:
            _check_prompt_blocks(self.name, blocks)
        if answering and len(answering) != len(blocks):
            raise InvalidInvocationError(
                "a prompt cannot mix interruptResponse blocks with other content: send the answers alone "
                "to resume, then a new prompt; nothing was changed"
            )
        if not answering:
            if state.activated:
                raise InvalidInvocationError(
                    f"agent '{self.name}' is waiting for responses to {len(state.pending)} interrupt(s): "
                    f"{_describe(state.pending.values())}. Answer them with "
                    '[{"interruptResponse": {"interruptId": <id>, "response": <answer>}}] '
                    "or call dismiss_interrupts() to drop them; the new prompt was not added"
                )
            if self.messages and self.messages[-1]["role"] == "user":
                # A turn that ended on tool results (max_steps, canceled, dismissed): Converse needs
                # roles to alternate, so the new prompt joins that user message.
                self.messages[-1]["content"].extend(blocks)
            else:
                self.messages.append({"role": "user", "content": blocks})
            return
        responses = _parse_responses(answering)
        if not state.activated:
            raise UnknownInterruptError(
                f"agent '{self.name}' has no pending interrupts, so {sorted(responses)} cannot be answered and "
                "nothing was resumed: send a text prompt to start a new turn"
            )
        unknown = [i for i in responses if i not in state.pending]
        if unknown:
            raise UnknownInterruptError(
                f"agent '{self.name}' has no pending interrupt {', '.join(map(repr, unknown))}; pending: "
                f"{_describe(state.pending.values())}. Nothing was resumed"
            )
        for interrupt_id, response in responses.items():
            if state.pending[interrupt_id].name == APPROVAL_INTERRUPT:
                try:
                    ApprovalAnswer.model_validate(response)
                except ValidationError as error:
                    raise InvalidInvocationError(
                        f"the answer to approval {interrupt_id!r} must be {{'decision': 'approve'}} or "
                        f"{{'decision': 'deny', 'message': '...'}}, got {response!r}: nothing was resumed"
                    ) from error
        state.answers.update(responses)

    def _run(self, invocation: Invocation) -> AgentResult:
        state = self.interrupt_state
        # max_steps holds for the whole turn: a resumed turn goes on counting (a checkpointed turn
        # continued again and again must still stop).
        steps = int(state.context.get(STEPS_KEY, 0)) if state.activated else 0
        while True:
            if invocation.should_stop():
                if state.activated:
                    self._close_step("CANCELED: the turn was canceled before this tool call ran.")
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
                self._close_step("CANCELED: the turn was canceled before this tool call ran.", step.results)
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
        self._observe("after_model_call", AfterModelCall(self, message))
        return message

    def _converse(self) -> dict[str, Any]:
        """The model's answer to the conversation. When the model finds the conversation longer than its
        context window, the conversation manager drops more and the model is asked again."""
        tool_specs = [t.spec for t in self.tools.values()]
        reductions = 0
        while True:
            self._observe("before_model_call", BeforeModelCall(self, self.messages))
            try:
                return self.model.converse(self.messages, self.system_prompt, tool_specs)
            except ContextWindowOverflowError as error:
                self._reduce_for(error, reductions)
            reductions += 1

    def _reduce_for(self, overflow: ContextWindowOverflowError, reductions: int) -> None:
        """Have the conversation manager drop more after ``overflow``, or say why the turn fails."""
        manager = self.conversation_manager
        too_long = (
            f"the conversation of agent '{self.name}' ({len(self.messages)} messages) is longer than its model's "
            "context window"
        )
        if manager is None:
            raise ContextWindowOverflowError(
                f"{too_long}, and the agent has no conversation manager, so nothing was dropped and no reply was "
                "recorded: give it one (Agent(conversation_manager=SlidingWindow(...)) or Summarizing(...)), or use "
                f"a model with a larger window. The model said: {overflow}"
            ) from overflow
        if reductions >= MAX_REDUCTIONS:
            raise ContextWindowOverflowError(
                f"{too_long} after its conversation manager {manager!r} dropped more {reductions} times: no reply "
                "was recorded and nothing more was tried (what it dropped stays dropped); keep fewer messages "
                f"(max_messages) or use a model with a larger window. The model said: {overflow}"
            ) from overflow
        if not manager.reduce(self):
            raise ContextWindowOverflowError(
                f"{too_long}, and its conversation manager {manager!r} cannot drop more of it (a sliding window "
                "keeps the turn in progress whole; a summary keeps at least the latest reply and what follows it): "
                "no reply was recorded; use a model with a larger window or fewer steps in a turn (max_steps). "
                f"The model said: {overflow}"
            ) from overflow
        logger.warning(
            "agent=<%s>, messages=<%d> | conversation too long for the model: its manager dropped more, asking again",
            self.name,
            len(self.messages),
        )

    def _tell_hooks(self, result: AgentResult) -> None:
        if result.stop_reason == "interrupt":
            self._observe("turn_paused", TurnPaused(self, result.interrupts))
        else:
            self._observe("turn_ended", TurnEnded(self, result))

    def _observe(self, method: str, event: Any) -> None:
        """Tell every hook of an event it may only observe: a hook that raises is logged, and the turn
        goes on as it was (a question it asked, a reply it recorded, stays)."""
        for hook in self.hooks:
            try:
                getattr(hook, method)(event)
            except Exception as error:
                logger.error(
                    "agent=<%s> | %s hook %s raised %s: %s; the turn goes on",
                    self.name,
                    method,
                    type(hook).__name__,
                    type(error).__name__,
                    error,
                )

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

    def _close_step(self, unfinished: str, results: dict[str, dict[str, Any]] | None = None) -> None:
        """End the paused step: finished calls keep their results (``results``, else those of the
        paused turn), unfinished ones get ``unfinished``."""
        if results is None:
            results = self.interrupt_state.context.get(TOOL_RESULTS_KEY, {})
        tool_uses = [b["toolUse"] for b in self.messages[-1]["content"] if "toolUse" in b] if self.messages else []
        for use in tool_uses:
            paused = self.tools.get(use["name"])
            if use["toolUseId"] not in results and paused is not None:
                paused.abandon(use["toolUseId"])
        if tool_uses:
            self.messages.append(
                {
                    "role": "user",
                    "content": [
                        {"toolResult": results.get(u["toolUseId"]) or tool_result(u["toolUseId"], unfinished, "error")}
                        for u in tool_uses
                    ],
                }
            )
        self.interrupt_state.deactivate()

"""An agent called as a tool by another agent, with interrupts that resume after a full rebuild.

A sub-agent's interrupts travel up as copies whose ids carry a prefix naming the tool call:
``v1:agent_as_tool:<percent-encoded toolUseId>@<cycle>:<local id>``, one prefix per nesting level,
where ``cycle`` numbers the orchestrator's model reply that made the call (a toolUseId names a call
only within one reply: some providers number every reply's calls from ``call_0``). The
percent-encoding keeps ``:`` and ``@`` out of the encoded toolUseId, so one call's prefix never
matches another call's ids, and the ``v1:agent_as_tool:`` marker keeps it from matching the
orchestrator's own ids (which start ``v1:tool:``). On resume the orchestrator's answers are routed
back by prefix and handed to the sub-agent under their local ids. (A call paused before replies
were numbered keeps its prefix without ``@<cycle>``.)

Calls of one sub-agent never run at once (they share its state); its calls wait for each other
while the orchestrator's other tool calls go on.

Who keeps the sub-agent's interrupted turn depends on ``preserve_context``:

- ``False``: the sub-agent is reset on every call, so the orchestrator stores its interrupted turn
  (a deep copy of its snapshot) under ``sub_agent_interrupted_turns[<toolUseId>]`` in its own
  interrupt context, and frees it once restored. It resumes after any restart.
- ``True``: the sub-agent keeps its own state. With a ``session`` it resumes after a restart;
  without one its turn lives only in memory, which is warned about when the interrupt is raised.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from resumable.exceptions import InvalidInvocationError, ModelError, SnapshotError
from resumable.runtime.interrupts import Interrupt, InterruptException
from resumable.runtime.invocation import SubAgentCall
from resumable.runtime.tools import Tool, ToolContext, tool_result

if TYPE_CHECKING:
    from resumable.runtime.agent import Agent
    from resumable.runtime.seam import AgentResult

logger = logging.getLogger(__name__)

NAMESPACE_MARKER = "v1:agent_as_tool:"
STORED_TURNS_KEY = "sub_agent_interrupted_turns"


def namespace_prefix(tool_use_id: str, cycle: int | None) -> str:
    """The prefix of every interrupt id raised inside the sub-agent call ``tool_use_id`` of the
    orchestrator's reply ``cycle`` (None: a call paused before replies were numbered)."""
    call = quote(tool_use_id, safe="")
    return f"{NAMESPACE_MARKER}{call}:" if cycle is None else f"{NAMESPACE_MARKER}{call}@{cycle}:"


def call_prefix(interrupt_id: str) -> str:
    """The id prefix of the (innermost) sub-agent call that raised ``interrupt_id``, as the root sees
    it: one ``namespace_prefix`` per level, or '' for an interrupt the root agent raised itself.
    The encoded toolUseId holds no ``:``, so the first ``:`` after a marker ends its prefix."""
    end = 0
    while interrupt_id.startswith(NAMESPACE_MARKER, end):
        separator = interrupt_id.find(":", end + len(NAMESPACE_MARKER))
        if separator < 0:
            break
        end = separator + 1
    return interrupt_id[:end]


class AgentTool(Tool):
    """The tool made by ``Agent.as_tool``. Its input is ``{"prompt": "<what to ask the agent>"}``."""

    # A sub-agent call checkpoints inside, before its own tool calls: resuming it is not progress.
    checkpoints_before = False
    journals_approved_calls = False

    def __init__(self, agent: Agent, *, name: str | None, description: str | None, preserve_context: bool) -> None:
        if not preserve_context and agent.session is not None:
            raise ValueError(
                f"agent '{agent.name}' has a session, but as_tool(preserve_context=False) resets it on every "
                "call, which would overwrite what the session keeps: use preserve_context=True to keep its "
                "history, or build the agent without a session"
            )
        self.agent = agent
        self.preserve_context = preserve_context
        self.name = name or agent.name
        self.description = description or agent.system_prompt or f"Ask the agent '{agent.name}' to do a task."
        self.input_schema = {
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": f"The task for the agent '{agent.name}'."}},
            "required": ["prompt"],
            "additionalProperties": False,
        }

    def paused_inside(self, context: ToolContext) -> bool:
        state = context.agent.interrupt_state
        prefix = namespace_prefix(context.tool_use_id, context.cycle)
        return any(i.startswith(prefix) for i in state.pending) or context.tool_use_id in state.context.get(
            STORED_TURNS_KEY, {}
        )

    def invoke(self, tool_input: Any, context: ToolContext) -> dict[str, Any]:
        with self.agent.called_as_tool:
            return self._invoke(tool_input, context)

    def _invoke(self, tool_input: Any, context: ToolContext) -> dict[str, Any]:
        tool_use_id = context.tool_use_id
        parent = context.agent
        prefix = namespace_prefix(tool_use_id, context.cycle)
        invocation = context.invocation.nested(prefix, self.agent.name)
        if self.preserve_context and self.agent.session is None:
            # Its paused turn lives only in this process's memory: a checkpoint would lose its work.
            invocation = replace(invocation, checkpoint=None)
        call = SubAgentCall(invocation.id_prefix, context.invocation.id_prefix, tool_use_id, invocation.agent_path)
        state = parent.interrupt_state
        pending = [i for i in state.pending.values() if i.id.startswith(prefix)] if state.activated else []
        if pending:
            answered = {i.id[len(prefix) :]: state.answers[i.id] for i in pending if i.id in state.answers}
            if not answered:
                raise InterruptException(pending)
            prepared = self._prepare_resume(parent, tool_use_id, pending, answered)
            if isinstance(prepared, dict):
                return prepared
            prompt: str | list[dict[str, Any]] = prepared
        else:
            task = tool_input.get("prompt") if isinstance(tool_input, dict) else None
            if not isinstance(task, str) or not task.strip():
                return tool_result(
                    tool_use_id, f"Agent '{self.name}' did not run: its input must be {{'prompt': '<task>'}}", "error"
                )
            if not self.preserve_context:
                self.agent.reset()
            prompt = task
        observer = invocation.observer
        if observer is not None:
            observer.started(call)
        try:
            result = self.agent.invoke(prompt, invocation)
        except (InvalidInvocationError, ModelError) as error:
            if observer is not None:
                observer.finished(call, "failed")
            if isinstance(error, ModelError):
                logger.warning(
                    "tool_name=<%s>, tool_use_id=<%s> | sub-agent's model failed: %s", self.name, tool_use_id, error
                )
                return tool_result(
                    tool_use_id,
                    f"Agent '{self.name}' failed before it finished: {error}. Tools it had already run keep their "
                    "effect.",
                    "error",
                )
            return tool_result(tool_use_id, f"Agent '{self.name}' did not run: {error}", "error")
        if observer is not None:
            observer.finished(call, result.stop_reason)
        return self._finish(parent, tool_use_id, prefix, result)

    def abandon(self, tool_use_id: str) -> None:
        """A context-preserving sub-agent's paused turn is dismissed with its caller's, so that its next
        call starts fresh instead of finding it still waiting."""
        if self.preserve_context and self.agent.interrupt_state.activated:
            self.agent.dismiss_interrupts()

    def _prepare_resume(
        self, parent: Agent, tool_use_id: str, pending: list[Interrupt], answered: dict[str, Any]
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """Bring back the sub-agent's interrupted turn and return the answers (under local ids) that
        resume it, or the tool result that says why it cannot resume."""
        if not self.preserve_context:
            stored_turns = parent.interrupt_state.context.get(STORED_TURNS_KEY, {})
            stored = stored_turns.get(tool_use_id)
            if stored is None:
                logger.error(
                    "tool_name=<%s>, tool_use_id=<%s> | no stored turn for this call, the answer cannot be applied",
                    self.name,
                    tool_use_id,
                )
                return self._not_run(tool_use_id, "its interrupted turn was not found in the orchestrator's state")
            try:
                self.agent.restore(stored)
            except SnapshotError as error:
                logger.error(
                    "tool_name=<%s>, agent_name=<%s>, tool_use_id=<%s>, interrupt_ids=<%s> | the interrupted turn "
                    "could not be restored (%s), so the response cannot be applied yet: raising the interrupt "
                    "again so it survives to be answered once more",
                    self.name,
                    self.agent.name,
                    tool_use_id,
                    [i.id for i in pending],
                    error,
                )
                raise InterruptException(pending) from error
            del stored_turns[tool_use_id]
        elif self.agent.session is None and not self.agent.interrupt_state.activated:
            logger.error(
                "tool_name=<%s>, agent_name=<%s>, tool_use_id=<%s> | the sub-agent uses preserve_context=True "
                "with no session and was rebuilt, so its interrupted turn is gone and the answer cannot be applied",
                self.name,
                self.agent.name,
                tool_use_id,
            )
            return self._not_run(
                tool_use_id,
                "it keeps its own interrupted turn (preserve_context=True) but has no session, and this process "
                "was rebuilt, so that turn is gone. Give the agent a session to make it resumable",
            )
        sub_pending = self.agent.interrupt_state.pending
        local_answers = {local_id: answer for local_id, answer in answered.items() if local_id in sub_pending}
        if not local_answers:
            logger.error(
                "tool_name=<%s>, agent_name=<%s>, tool_use_id=<%s>, interrupt_ids=<%s> | the sub-agent is not "
                "waiting for the answered interrupts",
                self.name,
                self.agent.name,
                tool_use_id,
                sorted(answered),
            )
            return tool_result(
                tool_use_id,
                f"Agent '{self.name}' is no longer waiting for the answered interrupts (its saved state has moved "
                "on or was lost), so the answer was NOT applied now. Whether the action ran in an earlier attempt "
                "is unknown: do not report it as done and do not ask for it again before checking.",
                "error",
            )
        return [{"interruptResponse": {"interruptId": i, "response": a}} for i, a in local_answers.items()]

    def _not_run(self, tool_use_id: str, why: str) -> dict[str, Any]:
        return tool_result(
            tool_use_id,
            f"Agent '{self.name}' did NOT resume and the answered action did NOT run: {why}. Do not report "
            "this action as done; tell the user it did not happen and that it must be asked for again.",
            "error",
        )

    def _finish(self, parent: Agent, tool_use_id: str, prefix: str, result: AgentResult) -> dict[str, Any]:
        """Turn the sub-agent's result into this tool's result, or pass its interrupts up, namespaced."""
        if result.stop_reason == "interrupt":
            namespaced = [Interrupt(prefix + i.id, i.name, i.reason) for i in result.interrupts]
            if not self.preserve_context:
                stored_turns = parent.interrupt_state.context.setdefault(STORED_TURNS_KEY, {})
                stored_turns[tool_use_id] = self.agent.snapshot()
            elif self.agent.session is None:
                logger.warning(
                    "tool_name=<%s>, agent_name=<%s>, tool_use_id=<%s>, interrupt_ids=<%s> | interrupted sub-agent "
                    "uses preserve_context=True with no session, so its interrupted turn is held only in memory: "
                    "the interrupt resumes in this process but not after a restart",
                    self.name,
                    self.agent.name,
                    tool_use_id,
                    [i.id for i in namespaced],
                )
            raise InterruptException(namespaced)
        if result.stop_reason == "end_turn":
            return tool_result(tool_use_id, result.text)
        if result.stop_reason == "max_steps":
            return tool_result(
                tool_use_id,
                f"Agent '{self.name}' stopped at its step limit ({self.agent.max_steps}) unfinished.",
                "error",
            )
        return tool_result(tool_use_id, f"Agent '{self.name}' was canceled before it finished.", "error")

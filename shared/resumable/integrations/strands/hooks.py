"""The service's hooks on every agent of a StrandsTree (``_Guard``, one hook provider per agent, registered
after the agent's own): every model call and tool call a step boundary (the lease looked at, a cancel
read), a call that needs approval asked about through a Strands ``approval`` interrupt (a denial cancels
it, an edit replaces its input, checked against the tool's schema) and then run through the action
journal, a checkpoint before a tool call past the time budget, and each sub-agent call a child turn."""

from __future__ import annotations

import math
from typing import Any, cast

from strands.hooks import (
    AfterInvocationEvent,
    AfterToolCallEvent,
    BeforeInvocationEvent,
    BeforeModelCallEvent,
    BeforeToolCallEvent,
    HookProvider,
    HookRegistry,
)
from strands.interrupt import InterruptException as StrandsInterruptException

from resumable.integrations.strands.journal import _Journaled
from resumable.integrations.strands.refusal import REUSED_ID, _reused
from resumable.integrations.strands.run import _FRAMES, _Frame, _Tree, _with_frame
from resumable.runtime.agent_as_tool import namespace_prefix
from resumable.runtime.approval import decide, explanation_of
from resumable.runtime.interrupts import APPROVAL_INTERRUPT, CHECKPOINT_INTERRUPT
from resumable.runtime.invocation import ApprovedAction, SubAgentCall
from resumable.runtime.rules import ApprovalRule
from resumable.runtime.schema import schema_problem

CANCELED = "CANCELED: the turn was canceled before this call ran; it did not run."
STOPPED = "STOPPED: this run no longer holds the turn; the call did not run here."


def _local_id(event: Any, name: str) -> str:
    """The id Strands gives the interrupt ``name`` of this hook event, unprefixed. Not public in Strands
    1.62 (every interruptible event has it; asking ``interrupt`` would record the interrupt), so a test
    pins it to the ids Strands raises."""
    return str(event._interrupt_id(name))


class _Guard(HookProvider):
    """The service's hooks on one agent of the tree (registered after the agent's own)."""

    def __init__(self, tree: _Tree, agent: Any) -> None:
        self.tree = tree
        self.agent = agent

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeInvocationEvent, self._guarded(self.before_invocation))
        registry.add_callback(AfterInvocationEvent, self._guarded(self.after_invocation))
        registry.add_callback(BeforeModelCallEvent, self._guarded(self.before_model_call))
        # Last: what runs is what the approval saw (a later hook could change the call after it).
        registry.add_callback(BeforeToolCallEvent, self._guarded(self.before_tool_call), order=math.inf)
        registry.add_callback(AfterToolCallEvent, self._guarded(self.after_tool_call))

    def _guarded(self, callback: Any) -> Any:
        def guarded(event: Any) -> None:
            try:
                callback(event)
            except StrandsInterruptException:
                raise
            except Exception as error:  # not a BaseException: a task Strands cancels is not the service failing
                self.tree.failed(error)
                raise

        return guarded

    def frame(self) -> _Frame | None:
        return (_FRAMES.get() or {}).get(id(self.agent))

    def before_invocation(self, event: BeforeInvocationEvent) -> None:
        frame = self.frame()
        if frame is not None and frame.call is not None and frame.invocation.observer is not None:
            frame.invocation.observer.started(frame.call)

    def after_invocation(self, event: AfterInvocationEvent) -> None:
        frame = self.frame()
        if frame is None or frame.call is None:
            return
        result = event.result
        reason: str = "failed" if result is None else result.stop_reason
        if self.tree._run.canceled:
            reason = "canceled"
        if frame.invocation.observer is not None:
            stop = {"end_turn": "end_turn", "interrupt": "interrupt", "cancelled": "canceled"}.get(reason, "failed")
            frame.invocation.observer.finished(frame.call, "canceled" if reason == "canceled" else stop)
        if self.agent.name in self.tree.preserving and self.tree.session is not None and self.tree._run.fatal is None:
            self.tree.session.save(self.agent.name, self.agent.take_snapshot(preset="session").to_dict())

    def before_model_call(self, event: BeforeModelCallEvent) -> None:
        frame = self.frame()
        if frame is None:
            return
        if self.tree.step_boundary(frame):
            event.cancel = CANCELED
            return
        # The reply's first tool call starts right after this boundary: it asks no other (a look at the
        # lease each), as our runtime's first call of a step does not.
        self.tree._run.just_asked.add(self._call_key(""))

    def before_tool_call(self, event: BeforeToolCallEvent) -> None:
        frame = self.frame()
        if frame is None or event.cancel_tool:
            return  # an agent of the tree called outside a run of it, or the agent's own hook canceled the call
        use = event.tool_use
        run = self.tree._run
        first = self._call_key("") in run.just_asked
        run.just_asked.discard(self._call_key(""))
        if run.canceled or run.fatal is not None or (not first and self.tree.step_boundary(frame)):
            event.cancel_tool = CANCELED if run.fatal is None else STOPPED
            return
        if _reused(self.agent, use["toolUseId"]):
            event.cancel_tool = REUSED_ID.format(id=use["toolUseId"])
            return
        invocation = frame.invocation
        tool: Any = event.selected_tool
        sub_agent = tool is not None and tool.tool_type == "agent" and hasattr(tool, "agent")
        approval_id = invocation.id_prefix + _local_id(event, APPROVAL_INTERRUPT)
        required, edits, rule = self.tree.needs_approval(use["name"], invocation)
        asked = self.tree.asked(approval_id)
        approved = False
        if required or asked is not None:
            if not self._approve(event, approval_id, edits, asked, rule):
                return
            approved = True
        if not sub_agent and invocation.should_checkpoint():
            event.interrupt(CHECKPOINT_INTERRUPT, reason={"agent": self.agent.name, "tool": use["name"]})
        if sub_agent:
            assert tool is not None
            prefix = invocation.id_prefix + namespace_prefix(use["toolUseId"], None)
            name = tool.agent.name
            nested = invocation.nested(namespace_prefix(use["toolUseId"], None), name)
            call = SubAgentCall(prefix, invocation.id_prefix, use["toolUseId"], nested.agent_path)
            _with_frame(tool.agent, _Frame(nested, call))
        elif approved and invocation.journal is not None and tool is not None:
            use = event.tool_use  # as approved: an edit replaced it
            action = ApprovedAction(approval_id, use["toolUseId"], use["name"], use["input"], invocation.agent_path)
            event.selected_tool = _Journaled(tool, action, invocation, self.tree)

    def _approve(
        self, event: BeforeToolCallEvent, approval_id: str, edits: bool, asked: Any, rule: ApprovalRule | None
    ) -> bool:
        """Ask for (or apply the answer to) the call's approval; False when the call does not run."""
        use, run = event.tool_use, self.tree._run
        schema = _input_schema(event.selected_tool)
        editable = _closed(schema) if edits else None
        decision = decide(
            agent=self.agent.name,
            tool=use["name"],
            tool_input=use["input"],
            invalid=lambda value: _invalid(use["name"], value, schema),
            ask=lambda reason: event.interrupt(APPROVAL_INTERRUPT, reason=reason),
            asked=asked if isinstance(asked, dict) else None,
            edit_schema=editable,
            invalid_edit=lambda value: _invalid(use["name"], value, editable),
            approved=run.approved_inputs.get(approval_id),
            rule=rule,
            explanation=explanation_of(list(self.agent.messages), use["input"]),
        )
        if decision.refusal is not None:
            event.cancel_tool = decision.refusal
            return False
        if decision.note is not None:
            run.notes[self._call_key(use["toolUseId"])] = decision.note
        event.tool_use = {**use, "input": decision.tool_input}
        run.approved_inputs[approval_id] = decision.tool_input
        return True

    def _call_key(self, tool_use_id: str) -> str:
        frame = self.frame()
        return (frame.invocation.id_prefix if frame is not None else "") + tool_use_id

    def after_tool_call(self, event: AfterToolCallEvent) -> None:
        note = self.tree._run.notes.pop(self._call_key(event.tool_use["toolUseId"]), None)
        if note is not None and isinstance(event.result, dict):
            event.result = cast(Any, {**event.result, "content": [*event.result.get("content", []), note]})


def _invalid(tool_name: str, tool_input: Any, schema: dict[str, Any] | None) -> str | None:
    problem = schema_problem(tool_input, schema) if schema is not None else None
    return f"Invalid input for tool '{tool_name}', it did not run: {problem}" if problem else None


def _input_schema(tool: Any) -> dict[str, Any] | None:
    if tool is None:
        return None
    schema = tool.tool_spec.get("inputSchema", {})
    found = schema.get("json", schema) if isinstance(schema, dict) else None
    return found if isinstance(found, dict) else None


def _closed(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """``schema`` for a person's edit: an object schema that declares its properties at the top and does
    not say otherwise takes no others (Strands' generated schemas leave them open; the tool would get
    them). Nested objects, and schemas composed of ``$ref``/``allOf``/``anyOf``/``oneOf``, stay as they are."""
    composed = {"$ref", "allOf", "anyOf", "oneOf", "additionalProperties", "unevaluatedProperties"}
    if schema is None or schema.get("type") != "object" or "properties" not in schema or composed & set(schema):
        return schema
    return {**schema, "additionalProperties": False}

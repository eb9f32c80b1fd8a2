"""Approval: which tool calls wait for a person before they run, and running the approved ones.

A call needs approval when any of these says so, in this order:

1. the tool's declaration (``@tool(approval=True)``): always, whatever a policy says;
2. the calling agent's ``ApprovalPolicy`` (``Agent(approval_policy=...)``): ``exempt`` patterns first,
   then ``require`` patterns (``fnmatch`` patterns of tool names, e.g. ``delete_*``);
3. the deployment's default policy (the invocation's ``default_policy``; the service makes it from
   ``APPROVAL_REQUIRED``, ``APPROVAL_EDITS`` and ``APPROVAL_RULES``), for a tool neither of the above
   decides.

An approval rule (``ApprovalRule``, in a policy's ``rules``) says more of the calls it matches: who may
answer, how many distinct approvers must agree, whether the principal who started the turn may approve
its own, and whether the input may be edited. A call a rule matches always asks (``exempt`` does not
apply to it), under the first matching rule of the deployment's policy, else of the agent's: the
organisation's rules come before an agent's. The rule travels with the question (its reason's
``rule``) and is stored with it, so the rule a question was asked under is the one its answers meet,
whatever the deployment says later.

And whatever they say now, a call that was already asked about (its approval is pending or answered
in the restored turn) is still asked: a rebuilt agent with another policy never runs, unapproved, a
call that was waiting for a person. A call that had already started (a sub-agent call paused inside)
is not newly asked about when a policy changes: it goes on as it was. An approved sub-agent call is
not journaled (it may pause): approving it guards its start, and its own approved tools are each
journaled inside it. A person may edit the input before approving (``{"decision":
"approve", "input": {...}}``) where the tool declares ``edits=True`` or a policy's ``edits`` patterns
name it; the call then runs once with the edited input, and its result tells the model so.

These rules run as ``ApprovalHook``, a hook (resumable.runtime.hooks) every agent runs after its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from resumable.exceptions import ResumableError
from resumable.runtime.hooks import BeforeToolCall, Hook
from resumable.runtime.interrupts import APPROVAL_INTERRUPT, InterruptException
from resumable.runtime.invocation import ApprovedAction, FencingToken
from resumable.runtime.rules import ApprovalRule, matches_any, riskier

if TYPE_CHECKING:
    from resumable.runtime.tools import Tool, ToolContext


class ApprovalAnswer(BaseModel):
    """A person's answer to an ``approval`` interrupt; ``message`` is told to the model (why a call was
    denied, or a note with an approval); ``input`` replaces the call's input (an edit). The service
    refuses a null for either (it would be recorded as the answer, and a later answer without it would
    then conflict); a stored answer with one still resumes."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    decision: Literal["approve", "deny"]
    message: str | None = None
    input: dict[str, Any] | None = None


@dataclass(frozen=True)
class ApprovalPolicy:
    """Tool-name patterns: ``require`` approval, ``exempt`` from it (wins over ``require``), and whose
    input a person may edit before approving (``edits``); and ``rules`` (``ApprovalRule``), each of
    which requires approval of the calls it matches and says who may give it."""

    require: tuple[str, ...] = ()
    exempt: tuple[str, ...] = ()
    edits: tuple[str, ...] = ()
    rules: tuple[ApprovalRule, ...] = ()

    def __post_init__(self) -> None:
        rules: Any = self.rules
        if isinstance(rules, ApprovalRule) or not all(isinstance(r, ApprovalRule) for r in rules):
            raise ValueError(f"ApprovalPolicy.rules takes a tuple of ApprovalRule, got {self.rules!r}")
        object.__setattr__(self, "rules", tuple(self.rules))
        for field_name in ("require", "exempt", "edits"):
            value = getattr(self, field_name)
            if isinstance(value, str) or not all(isinstance(p, str) and p for p in value):
                raise ValueError(
                    f"ApprovalPolicy.{field_name} takes tool-name patterns as a tuple of non-empty strings, "
                    f"got {value!r}"
                )
            object.__setattr__(self, field_name, tuple(value))

    def decides(self, tool_name: str) -> bool | None:
        """True: needs approval; False: exempt; None: this policy does not say."""
        if matches_any(tool_name, self.exempt):
            return False
        if matches_any(tool_name, self.require):
            return True
        return None

    def allows_edits(self, tool_name: str) -> bool:
        return matches_any(tool_name, self.edits)

    def rule_for(self, tool_name: str) -> ApprovalRule | None:
        return next((r for r in self.rules if r.matches(tool_name)), None)


def rule_for(tool_name: str, *policies: ApprovalPolicy | None) -> ApprovalRule | None:
    """The first rule that matches ``tool_name`` in ``policies``, in the order given."""
    return next((r for p in policies if p is not None and (r := p.rule_for(tool_name)) is not None), None)


@dataclass(frozen=True)
class Approval:
    """What a call's approval allows: whether its input may be edited, and under which rule (None:
    whoever may answer the session's questions, one answer)."""

    edits: bool
    rule: ApprovalRule | None = None


def approval_for(tool: Tool, context: ToolContext) -> Approval | None:
    """The approval ``tool``'s call needs (None: none), by the precedence of this module."""
    agent_policy = context.agent.approval_policy
    default = context.invocation.default_policy
    rule = rule_for(tool.name, default, agent_policy)
    required = tool.approval or rule is not None
    if not required:
        said = agent_policy.decides(tool.name) if agent_policy else None
        if said is None and default is not None:
            said = default.decides(tool.name)
        required = bool(said)
    interrupt_id = context.interrupt_id(APPROVAL_INTERRUPT)
    state = context.agent.interrupt_state
    asked = state.activated and (interrupt_id in state.pending or interrupt_id in state.answers)
    # (a call whose journal entry began under a standing grant was approved, as an answered one was)
    grants = context.invocation.grants
    asked = asked or (grants is not None and grants.begun(context.invocation.id_prefix + interrupt_id) is not None)
    if not asked and (not required or (state.activated and tool.paused_inside(context))):
        return None
    edits = (
        tool.approval_edits
        or bool(rule and rule.edits)
        or bool(agent_policy and agent_policy.allows_edits(tool.name))
        or bool(default and default.allows_edits(tool.name))
    )
    return Approval(edits=edits, rule=rule)


def _edited_note(original: Any, edited: Any) -> dict[str, Any]:
    return {
        "text": "A person edited this call's input before approving it: approved with "
        f"{json.dumps(edited, ensure_ascii=False)} instead of {json.dumps(original, ensure_ascii=False)}."
    }


@dataclass(frozen=True)
class Decision:
    """What a call's approval decided: ``refusal`` (the call does not run; the model is told why), else
    the call runs with ``tool_input``, and ``note`` (an edit) is told to the model beside its result."""

    refusal: str | None = None
    tool_input: Any = None
    note: dict[str, Any] | None = None


def decide(
    *,
    agent: str,
    tool: str,
    tool_input: Any,
    invalid: Callable[[Any], str | None],
    ask: Callable[[dict[str, Any]], Any],
    asked: dict[str, Any] | None,
    edit_schema: dict[str, Any] | None = None,
    invalid_edit: Callable[[Any], str | None] | None = None,
    approved: Any = None,
    rule: ApprovalRule | None = None,
    explanation: str | None = None,
    risk: str | None = None,
    impact: str | None = None,
) -> Decision:
    """The approval of one call that needs it, whatever runtime runs the call: refuse a call that cannot
    run (nobody is asked about it) or whose input changed since the person was asked (``asked``: the
    reason they saw; ``approved``, an input this run already approved for it, is no change: a retry);
    else ``ask`` (which pauses the turn until answered) with the reason people are shown, and apply the
    answer: a denial, or an approval, whose edit (allowed where ``edit_schema`` is given, checked by
    ``invalid_edit``, else ``invalid``) replaces the input. The ``rule`` goes with the question, and so
    do what the approver needs to judge it: the agent's ``explanation`` (``explanation_of``), and the
    tool's declared ``risk`` and ``impact``."""
    problem = invalid(tool_input)
    if problem is not None:
        return Decision(refusal=problem)
    reason: dict[str, Any] = {"agent": agent, "tool": tool, "input": tool_input}
    if explanation:
        reason["explanation"] = explanation
    if risk is not None:
        reason["risk"] = risk
    if impact is not None:
        reason["impact"] = impact
    if edit_schema is not None:
        reason |= {"editable": True, "inputSchema": edit_schema}
    if rule is not None:
        reason["rule"] = rule.stored()
    if asked is not None and asked.get("input") != tool_input and (approved is None or approved != tool_input):
        # What runs must be what the person saw: the agent's hooks changed it since (a new deployment).
        return Decision(
            refusal=f"The input of '{tool}' changed since a person was asked to approve it (asked about "
            f"{json.dumps(asked.get('input'), ensure_ascii=False)}, now "
            f"{json.dumps(tool_input, ensure_ascii=False)}): it did NOT run; ask for it again"
        )
    answer = ApprovalAnswer.model_validate(ask(reason))
    if answer.decision == "deny":
        return Decision(
            refusal=f"DENIED: {answer.message or 'a person denied this action'}. The tool '{tool}' did not run."
        )
    if answer.input is None:
        return Decision(tool_input=tool_input)
    if edit_schema is None:
        return Decision(
            refusal=f"The approval edited the input of '{tool}', whose input may not be edited (its approval "
            "policy changed since it was asked): it did not run"
        )
    problem = (invalid_edit or invalid)(answer.input)
    if problem is not None:
        return Decision(refusal=f"The edited input was refused: {problem}")
    note = _edited_note(tool_input, answer.input) if answer.input != tool_input else None  # equal: a retry
    return Decision(tool_input=answer.input, note=note)


MAX_EXPLANATION_CHARS = 2000
"""The most of an agent's explanation a question carries (the whole reply stays in the conversation)."""


def explanation_of(messages: list[dict[str, Any]], tool_input: Any) -> str | None:
    """Why the agent makes a call, in its own words: the text of the model's reply that made it (the
    last message, when it holds tool uses), else the call's own ``reason`` input; cut to
    ``MAX_EXPLANATION_CHARS``. None when it said nothing."""
    reply = messages[-1] if messages and messages[-1].get("role") == "assistant" else None
    said = " ".join(
        block["text"].strip()
        for block in (reply or {}).get("content", [])
        if isinstance(block, dict) and isinstance(block.get("text"), str) and block["text"].strip()
    )
    if not said and isinstance(tool_input, dict) and isinstance(tool_input.get("reason"), str):
        said = tool_input["reason"].strip()
    if not said:
        return None
    return said if len(said) <= MAX_EXPLANATION_CHARS else said[: MAX_EXPLANATION_CHARS - 1] + "…"


class ApprovalHook(Hook):
    """The approval policy as a hook: before a call that needs approval (by this module's rules), ask
    a person, unless a standing grant covers it; run it only if approved, with the input they approved;
    tell the model a denial. Every agent runs it after its own hooks."""

    def before_tool_call(self, event: BeforeToolCall) -> None:
        approval = approval_for(event.tool, event.context)
        if approval is None:
            return
        grant = _granted(event, approval)
        if grant is not None:
            event.approved, event.grant = True, grant
            return
        self.ask(event, approval)

    def ask(self, event: BeforeToolCall, approval: Approval | None = None) -> None:
        """Ask for the call's approval (or apply its answer), as if no grant covered it."""
        tool, context = event.tool, event.context
        approval = approval or approval_for(tool, context) or Approval(edits=False)
        event.grant = None
        decision = decide(
            agent=context.agent.name,
            tool=tool.name,
            tool_input=event.tool_input,
            invalid=tool.invalid_input,
            ask=lambda reason: context.interrupt(APPROVAL_INTERRUPT, reason=reason),
            asked=_asked(context),
            edit_schema=tool.input_schema if approval.edits else None,
            rule=approval.rule,
            explanation=explanation_of(context.agent.messages, event.tool_input),
            risk=tool.risk,
            impact=tool.impact,
        )
        if decision.refusal is not None:
            event.refuse(decision.refusal)
            return
        if decision.note is not None:
            event.notes.append(decision.note)
        event.tool_input = decision.tool_input
        event.approved = True


def _granted(event: BeforeToolCall, approval: Approval) -> str | None:
    """The standing grant that approves this call without a question (its id), or None: the call asks.
    Only a journaled call that nobody was asked about yet: one whose journal entry began under a grant
    (a run that crashed after it) goes back to the journal, which says what became of it; else only
    under a rule that allows grants (for a destructive call, only where it says so), with a valid
    input. A person's answer, a deny above all, always stands over a grant, and a grant whose rule
    changed since no longer applies."""
    tool, context = event.tool, event.context
    grants, rule = context.invocation.grants, approval.rule
    if grants is None or context.invocation.journal is None or not tool.journals_approved_calls:
        return None  # (its journal entry is where a revoke is checked, atomically: without one, no grant)
    state = context.agent.interrupt_state
    interrupt_id = context.interrupt_id(APPROVAL_INTERRUPT)
    if state.activated and (interrupt_id in state.pending or interrupt_id in state.answers):
        return None
    begun = grants.begun(context.invocation.id_prefix + interrupt_id)
    if begun is not None:
        return begun
    if rule is None or rule.grants is None:
        return None
    if riskier(tool.risk, rule.risk) == "destructive" and not rule.grants.destructive:
        return None
    if tool.invalid_input(event.tool_input) is not None:
        return None  # (asking refuses it, naming the problem)
    return grants.covering(tool.name, event.tool_input, rule)


def _asked(context: ToolContext) -> dict[str, Any] | None:
    """The reason a pending approval of this call showed the person (None: not pending)."""
    state = context.agent.interrupt_state
    pending = state.pending.get(context.interrupt_id(APPROVAL_INTERRUPT)) if state.activated else None
    return pending.reason if pending is not None and isinstance(pending.reason, dict) else None


def run_approved(tool: Tool, tool_input: Any, context: ToolContext, grant: str | None = None) -> dict[str, Any]:
    """Run an approved call once: through the invocation's action journal when there is one (a
    sub-agent call is not journaled: it may pause; its own approved calls are). ``grant``: the standing
    grant that approved it (the journal raises ``GrantLapsedError`` when it no longer holds)."""
    from resumable.runtime.tools import tool_result

    journal = context.invocation.journal
    if journal is None or not tool.journals_approved_calls:
        return tool.invoke(tool_input, context)

    def perform(token: FencingToken) -> dict[str, Any]:
        context.fencing_token = token
        try:
            return tool.invoke(tool_input, context)
        except (InterruptException, ResumableError):
            raise
        except Exception as error:
            return tool_result(context.tool_use_id, f"Error: {type(error).__name__}: {error}", "error")
        finally:
            context.fencing_token = None

    action = ApprovedAction(
        key=context.invocation.id_prefix + context.interrupt_id(APPROVAL_INTERRUPT),
        tool_use_id=context.tool_use_id,
        tool=tool.name,
        input=tool_input,
        agent_path=context.invocation.agent_path,
        grant=grant,
    )
    return journal.run(action, perform)

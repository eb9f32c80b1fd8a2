"""``StrandsTree``: a tree of Strands agents as the service runs it, through the runtime's seam
(``resumable.runtime.seam.AgentRuntime``): the tree visited and guarded when built, each ``invoke`` run
under its invocation's stop signal, the result read as the service's, the state snapshotted and
restored; and what the hooks ask of it (a step boundary, a failure, an approval's policy)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, cast

import strands

from resumable.exceptions import InvalidInvocationError, ModelError, ResumableError
from resumable.integrations.strands.hooks import _Guard
from resumable.integrations.strands.refusal import _GUARDED, _refuse
from resumable.integrations.strands.run import _FRAMES, _Frame, _Run, _with_frame
from resumable.integrations.strands.snapshot import (
    _KEPT_BY_US,
    _dismiss_paused_turn,
    _load,
    _tree_snapshot,
    _tree_state,
)
from resumable.runtime.approval import ApprovalPolicy, rule_for
from resumable.runtime.interrupts import APPROVAL_INTERRUPT, Interrupt
from resumable.runtime.invocation import Invocation
from resumable.runtime.rules import ApprovalRule
from resumable.runtime.seam import AgentResult, Prompt, StopReason
from resumable.runtime.session import Session

logger = logging.getLogger(__name__)


def _agent_tools(agent: Any) -> list[Any]:
    """The tools of ``agent`` that call a sub-agent (``as_tool``)."""
    return [t for t in agent.tool_registry.registry.values() if t.tool_type == "agent" and hasattr(t, "agent")]


def _preserves_context(agent_tool: Any) -> bool:
    # Not public in Strands 1.62 (the constructor's argument is kept privately); read with a safe
    # default: a sub-agent whose wrapper does not say is treated as keeping its context (saved).
    return bool(getattr(agent_tool, "_preserve_context", True))


class StrandsTree:
    """A tree of Strands agents as the service runs it (see ``resumable.integrations.strands``).

    ``root`` is the orchestrating ``strands.Agent``; sub-agents are found through its ``as_tool()``
    tools, at any depth. ``session`` keeps the state of ``preserve_context=True`` sub-agents (the
    factory's ``context.session``). ``approval_policy`` names the tools that wait for a person (the
    deployment's default policy decides the others).
    """

    def __init__(self, root: Any, *, session: Session | None = None, approval_policy: ApprovalPolicy | None = None):
        if not isinstance(root, strands.Agent):
            raise ValueError(f"StrandsTree takes the root strands.Agent of a tree, got {type(root).__name__}")
        if approval_policy is not None and not isinstance(approval_policy, ApprovalPolicy):
            raise ValueError(f"approval_policy must be a resumable ApprovalPolicy, got {approval_policy!r}")
        self.root = root
        self.name: str = root.name
        self.session = session
        self.approval_policy = approval_policy
        self.agents: dict[str, Any] = {}
        self.preserving: dict[str, Any] = {}
        self._visit(root, preserving=False)
        self._run = _Run()
        self._asked: dict[str, Any] = {}
        """The reason of every approval this turn asked (full id -> reason): what the person saw."""
        self._pending: dict[str, Interrupt] = {}
        for agent in self.agents.values():
            setattr(agent, _GUARDED, self)
            agent.hooks.add_hook(_Guard(self, agent))
        for name, agent in self.preserving.items():
            stored = session.load(name) if session is not None else None
            if stored is not None:
                _load(agent, stored)

    def _visit(self, agent: Any, *, preserving: bool) -> None:
        name = agent.name
        _refuse(agent, known=self.agents.get(name), preserving=preserving, session=self.session)
        self.agents[name] = agent
        if preserving:
            self.preserving[name] = agent
        for sub in _agent_tools(agent):
            if _preserves_context(sub):
                _KEPT_BY_US.tools.add(sub.tool_name)
            self._visit(sub.agent, preserving=_preserves_context(sub))

    # The runtime's seam.

    def invoke(self, prompt: Prompt, invocation: Invocation) -> AgentResult:
        if isinstance(prompt, str) and not prompt.strip():
            raise InvalidInvocationError(f"agent '{self.name}' needs a non-blank prompt; nothing was added")
        self._run = run = _Run()
        if not _answers(prompt):
            for agent in self.preserving.values():
                _dismiss_paused_turn(agent)
        token = _with_frame(self.root, _Frame(invocation))
        try:
            result = self.root(cast(Any, prompt), cancel_signal=run.cancel_signal)
        except ResumableError:
            raise
        except Exception as error:
            if run.fatal is not None:
                # ``error`` is Strands' wrapper of it (or of what it stopped): keep the fatal error's own cause.
                raise run.fatal from run.fatal.__cause__
            if isinstance(error, (KeyError, TypeError)) and not isinstance(prompt, str):
                raise InvalidInvocationError(f"the Strands agent refused the resume: {error}") from error
            raise ModelError(f"the Strands agent '{self.name}' failed: {type(error).__name__}: {error}") from error
        finally:
            _FRAMES.reset(token)
        if run.fatal is not None:
            raise run.fatal
        return self._result(result)

    def _result(self, result: Any) -> AgentResult:
        reason = result.stop_reason
        if self._run.canceled:
            self._pending = {}
            return AgentResult("canceled")
        if reason == "interrupt":
            interrupts = [Interrupt(i.id, i.name, i.reason) for i in result.interrupts or ()]
            self._pending = {i.id: i for i in interrupts}
            self._asked |= {i.id: i.reason for i in interrupts if i.name == APPROVAL_INTERRUPT}
            return AgentResult("interrupt", interrupts=interrupts)
        self._pending, self._asked = {}, {}
        stop: StopReason
        if reason == "end_turn":
            stop = "end_turn"
        elif reason in ("cancelled", "limit_turns"):
            # Canceled by something other than the service (a tool's deferred cancel), or out of turns.
            stop = "max_steps"
        else:
            raise ModelError(f"the Strands agent '{self.name}' stopped with {reason!r}, without an answer")
        return AgentResult(stop, message=result.message)

    def pending_interrupts(self) -> dict[str, Interrupt]:
        return dict(self._pending)

    def snapshot(self) -> dict[str, Any]:
        return _tree_snapshot(self.name, self.root, self._pending, self._asked)

    def restore(self, snapshot: dict[str, Any]) -> None:
        pending, asked = _tree_state(snapshot, self.name)
        _load(self.root, snapshot["root"])
        self._pending, self._asked = pending, asked

    # What the hooks do.

    def step_boundary(self, frame: _Frame) -> bool:
        """Ask the run's stop signal (it looks at the lease): True once the turn is to stop here."""
        run = self._run
        if run.canceled or run.fatal is not None:
            return True
        if frame.invocation.should_stop():
            run.canceled = True
            logger.info("agent=<%s> | stop signal seen, canceling the Strands tree", self.name)
            self.stop_all()
            return True
        return False

    def stop_all(self) -> None:
        self._run.cancel_signal.set()
        for agent in self.agents.values():
            agent.cancel()

    def failed(self, error: Exception) -> None:
        """Something of the service failed inside a Strands agent (a store call, a lost lease): stop the
        whole tree; ``invoke`` raises it, whatever Strands made of it."""
        if self._run.fatal is None:
            self._run.fatal = error
        self.stop_all()

    def asked(self, interrupt_id: str) -> Any:
        """The reason shown to a person for the approval ``interrupt_id`` this turn asked (None: not asked)."""
        return self._asked.get(interrupt_id)

    def needs_approval(self, tool_name: str, invocation: Invocation) -> tuple[bool, bool, ApprovalRule | None]:
        """(needs approval, may be edited, under which rule) for a call of ``tool_name``: a rule of the
        deployment's or the tree's policy, else the tree's policy, then the default."""
        policies = [p for p in (self.approval_policy, invocation.default_policy) if p is not None]
        rule = rule_for(tool_name, invocation.default_policy, self.approval_policy)
        said = next((said for p in policies if (said := p.decides(tool_name)) is not None), False)
        required = rule is not None or said
        edits = bool(rule and rule.edits) or any(p.allows_edits(tool_name) for p in policies)
        return required, edits, rule


def _answers(prompt: Any) -> bool:
    return (
        isinstance(prompt, Sequence)
        and not isinstance(prompt, str)
        and any(isinstance(b, dict) and "interruptResponse" in b for b in prompt)
    )

"""Strands Agents SDK trees under the service's guarantees: ``StrandsTree`` implements the runtime's seam.

An agent factory may return the root ``strands.Agent`` of a tree (sub-agents as ``agent.as_tool()``);
the service wraps it in a ``StrandsTree`` with the run's session, or the factory returns one itself
to give it an approval policy. Everything is done through Strands' public API, on every agent of the
tree, by one hook provider each:

- every model call and every tool call is a step boundary: the run's ``stop`` renews the lease and
  reads a cancel (a cancel stops the whole tree; a lost lease stops it and is raised, so nothing of
  the run is committed);
- a tool call that needs approval (the tree's ``ApprovalPolicy``, then the deployment's default) asks
  a person through a Strands interrupt named ``approval`` whose reason is the display detail the
  service shows; a denial cancels the call, an edit replaces its input (checked against its schema);
  an approved call runs through the service's action journal (``selected_tool`` replaced by a
  journaled one), so it runs once however many processes resume the turn;
- the turn's time budget pauses the turn before a tool call with a checkpoint interrupt;
- a sub-agent call (``as_tool``) is a child turn; its interrupts reach the root namespaced by Strands
  (``v1:agent_as_tool:<toolUseId>:...``, read by ``call_prefix`` like ours);
- the state is the root's Strands snapshot (which holds the interrupted turns of ``preserve_context
  =False`` sub-agents), stored by the service on S3; a ``preserve_context=True`` sub-agent keeps its
  own snapshot in the run's session (also on S3, committed with the turn).

Configurations that would weaken a guarantee are refused when the tree is built, saying why: an
agent with its own Strands session manager (its state would be written outside the turn's commit),
background tool tasks (they outlive the run and its lease), tool-execution middleware (it runs after
the approval), two agents of one name, one agent in two places or two trees, a
``preserve_context=True`` sub-agent without a session. A tool call whose toolUseId an earlier reply
of the same agent used is refused (Strands names interrupts by toolUseId alone, so the answer to the
earlier call would apply to it).
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import json
import logging
import math
import threading
from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from resumable.exceptions import InvalidInvocationError, ModelError, ResumableError, SnapshotError
from resumable.runtime.agent_as_tool import namespace_prefix
from resumable.runtime.approval import APPROVAL_INTERRUPT, ApprovalPolicy, decide
from resumable.runtime.interrupts import CHECKPOINT_INTERRUPT, Interrupt, InterruptException
from resumable.runtime.invocation import ApprovedAction, FencingToken, Invocation, SubAgentCall
from resumable.runtime.schema import schema_problem
from resumable.runtime.seam import AgentResult, Prompt, StopReason
from resumable.runtime.session import Session

try:
    import strands
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
    from strands.middleware.stages import ExecuteToolStage
    from strands.models.model import Model as StrandsModel
    from strands.types._events import ToolInterruptEvent
    from strands.types.events import ToolResultEvent
    from strands.types.tools import AgentTool as StrandsTool
except ImportError as error:  # pragma: no cover - the extra is installed wherever this is imported
    raise ImportError(
        "resumable.integrations.strands needs the Strands Agents SDK: install resumable[strands] "
        "(strands-agents==1.62.0, the version it is tested with)"
    ) from error

logger = logging.getLogger(__name__)

TESTED_VERSION = "1.62.0"
SNAPSHOT_KIND = "strands"
SNAPSHOT_VERSION = "1"

CANCELED = "CANCELED: the turn was canceled before this call ran; it did not run."
STOPPED = "STOPPED: this run no longer holds the turn; the call did not run here."
REUSED_ID = (
    "Refused: an earlier reply of this agent already used toolUseId {id!r}, so an answer given about that call "
    "would apply to this one; it did NOT run. The model provider must give every tool call its own id."
)


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


_FENCING_TOKEN: contextvars.ContextVar[FencingToken | None] = contextvars.ContextVar(
    "resumable_strands_fencing_token", default=None
)


def fencing_token() -> FencingToken | None:
    """The fencing token of the approved call running now (inside a Strands tool the service's journal
    runs), else None: pass it to a write to another system so a stale attempt is refused (see
    ``resumable.FencingToken``)."""
    return _FENCING_TOKEN.get()


def _agent_tools(agent: Any) -> list[Any]:
    """The tools of ``agent`` that call a sub-agent (``as_tool``)."""
    return [t for t in agent.tool_registry.registry.values() if t.tool_type == "agent" and hasattr(t, "agent")]


def _preserves_context(agent_tool: Any) -> bool:
    # Not public in Strands 1.62 (the constructor's argument is kept privately); read with a safe
    # default: a sub-agent whose wrapper does not say is treated as keeping its context (saved).
    return bool(getattr(agent_tool, "_preserve_context", True))


@dataclass
class _Run:
    """One ``invoke`` of the tree: the stop signal Strands observes, what stopped it, what it asked."""

    cancel_signal: threading.Event = field(default_factory=threading.Event)
    canceled: bool = False
    fatal: Exception | None = None
    notes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What the model is told beside a call's result (a person's edit), by call (id prefix + toolUseId)."""
    approved_inputs: dict[str, Any] = field(default_factory=dict)
    just_asked: set[str] = field(default_factory=set)
    """The calls of agents (by id prefix) whose model call was a step boundary with nothing asked since."""
    """The input each approval of this run approved, by approval id (an edit's, or the asked one)."""


class StrandsTree:
    """A tree of Strands agents as the service runs it (see the module).

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
        known = self.agents.get(name)
        if known is agent:
            raise ValueError(
                f"Strands agent {name!r} is the tool of two as_tool wrappers: a tree's agent has one caller (its "
                "wrappers would disagree about keeping its context); build a second agent"
            )
        if known is not None:
            raise ValueError(
                f"two Strands agents are named {name!r}: each agent of a tree needs its own name (it keys the "
                "agent's stored state and its child turns)"
            )
        if getattr(agent, _GUARDED, None) is not None:
            raise ValueError(
                f"Strands agent {name!r} is already run by another StrandsTree: build the agents afresh in the "
                "factory, on every call (the service rebuilds them for every request and restores their state)"
            )
        if _tool_middleware(agent):
            raise ValueError(
                f"Strands agent {name!r} has tool-execution middleware (ExecuteToolStage), which runs after the "
                "approval and could replace an approved call or its input, outside the action journal: remove it"
            )
        if getattr(agent, "_session_manager", None) is not None:
            raise ValueError(
                f"Strands agent {name!r} has a session manager: under the service an agent's state is stored "
                "with its turn (a session manager would write it outside the turn's commit, so a turn resumed "
                "twice could keep the loser's state); remove session_manager=..."
            )
        if getattr(agent, "_background_tasks", None) is not None:
            raise ValueError(
                f"Strands agent {name!r} runs tools as background tasks, which outlive the run that holds the "
                "turn's lease (an approved action could run unjournaled): remove background_tasks=..."
            )
        self.agents[name] = agent
        if preserving:
            if self.session is None:
                raise ValueError(
                    f"Strands sub-agent {name!r} keeps its context (as_tool(preserve_context=True)) but the tree "
                    "has no session to keep it in: StrandsTree(root, session=context.session)"
                )
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
        return {
            "kind": SNAPSHOT_KIND,
            "schema_version": SNAPSHOT_VERSION,
            "agent": self.name,
            "root": self.root.take_snapshot(preset="session").to_dict(),
            "pending": [i.to_dict() for i in self._pending.values()],
            "asked": dict(self._asked),
        }

    def restore(self, snapshot: dict[str, Any]) -> None:
        if not isinstance(snapshot, dict) or snapshot.get("kind") != SNAPSHOT_KIND:
            raise SnapshotError(
                f"the stored snapshot is not a Strands tree's (kind {_kind(snapshot)!r}): was the agent factory "
                "changed from our runtime to Strands while the turn waited? Deploy the factory it was paused under"
            )
        if snapshot.get("schema_version") != SNAPSHOT_VERSION or snapshot.get("agent") != self.name:
            raise SnapshotError(
                f"the stored Strands snapshot is of schema {snapshot.get('schema_version')!r} for root agent "
                f"{snapshot.get('agent')!r}; this build reads schema {SNAPSHOT_VERSION!r} for {self.name!r}"
            )
        try:
            pending = {i["id"]: Interrupt(i["id"], i["name"], i.get("reason")) for i in snapshot["pending"]}
            asked = dict(snapshot["asked"])
        except (KeyError, TypeError) as error:
            raise SnapshotError(f"the stored Strands snapshot is malformed: {error!r}") from error
        _load(self.root, snapshot["root"])
        self._pending, self._asked = pending, asked

    # What the hooks do.

    def step_boundary(self, frame: _Frame) -> bool:
        """Ask the run's stop signal (renewing the lease): True once the turn is to stop here."""
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

    def needs_approval(self, tool_name: str, invocation: Invocation) -> tuple[bool, bool]:
        """(needs approval, may be edited) for a call of ``tool_name``: the tree's policy, then the default."""
        policies = [p for p in (self.approval_policy, invocation.default_policy) if p is not None]
        required = next((said for p in policies if (said := p.decides(tool_name)) is not None), False)
        return required, any(p.allows_edits(tool_name) for p in policies)


def _kind(snapshot: Any) -> Any:
    return snapshot.get("kind", "resumable") if isinstance(snapshot, dict) else type(snapshot).__name__


class _KeptByUs(logging.Filter):
    """Drops Strands' warning that a paused ``preserve_context=True`` sub-agent cannot be resumed after a
    restart for want of a session manager: under a StrandsTree its state is kept in the run's session."""

    def __init__(self) -> None:
        super().__init__()
        self.tools: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            "cannot be resumed after a restart" in str(record.msg)
            and isinstance(record.args, tuple)
            and bool(record.args)
            and record.args[0] in self.tools
        )


_KEPT_BY_US = _KeptByUs()
logging.getLogger("strands.agent._agent_as_tool").addFilter(_KEPT_BY_US)

_GUARDED = "_resumable_strands_tree"
"""The attribute that marks an agent a StrandsTree guards (one tree per agent)."""


def _tool_middleware(agent: Any) -> bool:
    """Whether ``agent`` has tool-execution middleware besides Strands' own (read from Strands' registry,
    not public in 1.62: an input or output phase, or a wrapper that is not Strands' own delegation)."""
    handlers = getattr(getattr(agent, "_middleware_registry", None), "_handlers", None)
    if not isinstance(handlers, dict):
        return False
    return any(
        getattr(tagged, "phase", None) != "wrap"
        or not str(getattr(tagged.handler, "__module__", "")).startswith("strands.")
        for tagged in handlers.get(ExecuteToolStage, [])
    )


def _answers(prompt: Any) -> bool:
    return (
        isinstance(prompt, Sequence)
        and not isinstance(prompt, str)
        and any(isinstance(b, dict) and "interruptResponse" in b for b in prompt)
    )


def _load(agent: Any, stored: dict[str, Any]) -> None:
    """Load ``stored`` into ``agent``, or change nothing: Strands loads field by field, so a snapshot that
    fails halfway is undone from the state taken before."""
    before = agent.take_snapshot(preset="session")
    try:
        agent.load_snapshot(strands.Snapshot.from_dict(stored))
    except Exception as error:
        agent.load_snapshot(before)
        raise SnapshotError(f"Strands agent {agent.name!r} cannot load its stored state: {error}") from error


def _dismiss_paused_turn(agent: Any) -> None:
    """A context-keeping sub-agent still paused when a new turn starts (its turn was canceled, expired or
    failed while it waited): its paused calls are closed as not run, so they are never asked again."""
    stored = agent.take_snapshot(preset="session").to_dict()
    state = stored["data"].get("interrupt_state") or {}
    if not state.get("activated"):
        return
    messages = stored["data"]["messages"]
    pending = (state.get("pending_tool_execution") or {}).get("assistant_message")
    last = messages[-1] if messages else None
    if last is not None and last.get("role") == "assistant":
        pending = None  # the paused reply is already in the conversation
    elif pending is not None:
        messages.append(copy.deepcopy(pending))
    uses = [b["toolUse"] for b in (messages[-1]["content"] if messages else []) if "toolUse" in b]
    if messages and messages[-1].get("role") == "assistant" and uses:
        # Calls that finished keep their results (an approved action that ran is reported as run).
        finished = {
            r["toolUseId"]: r
            for r in (state.get("pending_tool_execution") or {}).get("completed_tool_results") or []
            if isinstance(r, dict) and "toolUseId" in r
        }
        text = "DISMISSED: the turn this call waited in ended without it (canceled, expired or failed); it did not run."
        unfinished = {"status": "error", "content": [{"text": text}]}
        results = [
            {"toolResult": finished.get(u["toolUseId"]) or {"toolUseId": u["toolUseId"], **unfinished}} for u in uses
        ]
        messages.append({"role": "user", "content": results})
        # Roles alternate (Bedrock refuses two user messages in a row): the next prompt follows a reply.
        messages.append(
            {"role": "assistant", "content": [{"text": "That turn ended before these calls were answered."}]}
        )
    stored["data"]["interrupt_state"] = {"interrupts": {}, "context": {}, "activated": False}
    _load(agent, stored)
    logger.info("agent=<%s> | a paused turn of an earlier turn dismissed: its calls did not run", agent.name)


def _local_id(event: Any, name: str) -> str:
    """The id Strands gives the interrupt ``name`` of this hook event, unprefixed. Not public in Strands
    1.62 (every interruptible event has it; asking ``interrupt`` would record the interrupt), so a test
    pins it to the ids Strands raises."""
    return str(event._interrupt_id(name))


class _Guard(HookProvider):
    """The service's hooks on one agent of the tree (registered after the agent's own)."""

    def __init__(self, tree: StrandsTree, agent: Any) -> None:
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
        # The reply's first tool call starts right after this boundary: it asks no other (a lease renewal
        # each), as our runtime's first call of a step does not.
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
        required, edits = self.tree.needs_approval(use["name"], invocation)
        asked = self.tree.asked(approval_id)
        approved = False
        if required or asked is not None:
            if not self._approve(event, approval_id, edits, asked):
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

    def _approve(self, event: BeforeToolCallEvent, approval_id: str, edits: bool, asked: Any) -> bool:
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


def _reused(agent: Any, tool_use_id: str) -> bool:
    """Whether an earlier reply of ``agent`` than its latest one called a tool with ``tool_use_id``."""
    replies = [m for m in agent.messages if m.get("role") == "assistant"]
    return any(
        "toolUse" in block and block["toolUse"].get("toolUseId") == tool_use_id
        for message in replies[:-1]
        for block in message.get("content", [])
    )


class _Journaled(StrandsTool):
    """An approved tool call, run through the service's action journal: once, whatever happens."""

    def __init__(self, tool: Any, action: ApprovedAction, invocation: Invocation, tree: StrandsTree) -> None:
        super().__init__()
        self.tool = tool
        self.action = action
        self.invocation = invocation
        self.tree = tree

    @property
    def tool_name(self) -> str:
        return str(self.tool.tool_name)

    @property
    def tool_spec(self) -> Any:
        return self.tool.tool_spec

    @property
    def tool_type(self) -> str:
        return str(self.tool.tool_type)

    async def stream(self, tool_use: Any, invocation_state: dict[str, Any], **kwargs: Any) -> AsyncGenerator[Any, None]:
        if tool_use["input"] != self.action.input:
            yield ToolResultEvent(
                {
                    "toolUseId": tool_use["toolUseId"],
                    "status": "error",
                    "content": [
                        {
                            "text": f"Refused: the input of '{self.action.tool}' changed after it was approved; "
                            "it did NOT run."
                        }
                    ],
                }
            )
            return
        paused: list[Any] = []

        async def run_tool(token: FencingToken) -> dict[str, Any]:
            _FENCING_TOKEN.set(token)
            result: dict[str, Any] | None = None
            async for event in self.tool.stream(tool_use, invocation_state, **kwargs):
                if isinstance(event, ToolInterruptEvent):  # the tool asks a question of its own: not run yet
                    paused.append(event)
                    raise InterruptException([Interrupt(i.id, i.name, i.reason) for i in event.interrupts])
                if isinstance(event, ToolResultEvent):
                    if isinstance(event.exception, ResumableError):
                        raise event.exception  # ActionFencedError, ActionOutcomeUnknownError: the journal's to judge
                    result = dict(event.tool_result)
            if result is None:
                return {"toolUseId": tool_use["toolUseId"], "status": "error", "content": [{"text": "no result"}]}
            return result

        def perform(token: FencingToken) -> dict[str, Any]:
            # On the journal's thread, in a loop of its own: an action that started finishes and is recorded
            # even if Strands cancels this call's task (a sibling call failed).
            return asyncio.run(run_tool(token))

        journal = self.invocation.journal
        assert journal is not None
        try:
            result = await asyncio.to_thread(journal.run, self.action, perform)
        except InterruptException:
            yield paused[0]
            return
        except Exception as error:
            self.tree.failed(error)
            raise
        yield ToolResultEvent({**result, "toolUseId": tool_use["toolUseId"]})  # type: ignore[typeddict-item]


class ScriptedStrandsModel(StrandsModel):
    """A Strands model that replays assistant messages (Converse shape), offline: reply ``k`` answers a
    conversation holding ``k`` assistant messages, so a rebuilt agent goes on where its conversation
    stands (like ``resumable.ScriptedModel``)."""

    def __init__(self, replies: Sequence[dict[str, Any]]) -> None:
        self.replies = [dict(r) for r in replies]
        self.config: dict[str, Any] = {}

    @classmethod
    def one_call(cls, tool_name: str, tool_input: dict[str, Any], then: str) -> ScriptedStrandsModel:
        """A model that calls ``tool_name`` with ``tool_input`` once, then answers ``then``."""
        call = {"toolUse": {"toolUseId": f"{tool_name}-1", "name": tool_name, "input": tool_input}}
        return cls([{"role": "assistant", "content": [call]}, {"role": "assistant", "content": [{"text": then}]}])

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, output_model: Any, prompt: Any, system_prompt: str | None = None, **kwargs: Any) -> Any:
        raise NotImplementedError("ScriptedStrandsModel does not produce structured output")

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: str | None = None, **kwargs: Any
    ) -> Any:
        index = sum(1 for m in messages if m.get("role") == "assistant")
        if index >= len(self.replies):
            raise ModelError(
                f"ScriptedStrandsModel has {len(self.replies)} replies, but the conversation already holds {index} "
                "assistant messages: add replies to the script"
            )
        for event in _stream_events(self.replies[index]):
            yield event


def _stream_events(reply: dict[str, Any]) -> Iterable[dict[str, Any]]:
    yield {"messageStart": {"role": "assistant"}}
    uses_tools = False
    for block in reply["content"]:
        if "toolUse" in block:
            uses_tools = True
            use = block["toolUse"]
            yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(use["input"])}}}}
        else:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": block["text"]}}}
        yield {"contentBlockStop": {}}
    yield {"messageStop": {"stopReason": "tool_use" if uses_tools else "end_turn"}}
    yield {"metadata": {"usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}, "metrics": {"latencyMs": 0}}}

"""What one call of an agent carries down to its tools and sub-agents."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from resumable.runtime.approval import ApprovalPolicy
    from resumable.runtime.rules import ApprovalRule


@dataclass(frozen=True)
class FencingToken:
    """What lets an approved action's write to another system refuse a stale attempt (one whose run
    outlived its lease): ``key`` names the approval (the same on every attempt: an idempotency key);
    ``lease`` is the generation of the turn's lease this attempt runs under (every new holder's is
    higher); ``condition``, where the journal keeps its entries in DynamoDB, is a
    ``TransactWriteItems`` ``ConditionCheck`` that holds only while this attempt is the live one (a
    takeover that reports the action's outcome unknown breaks it). Put it in the same transaction as
    the write, and raise ``ActionFencedError`` when it fails: the action then did nothing, and is
    recorded as not run."""

    key: str
    lease: int
    condition: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.lease}:{self.key}"


@dataclass(frozen=True)
class ApprovedAction:
    """One approved call about to run: ``key`` names the approval in the root's tree, the rest says
    what it is (shown to people when its outcome is in doubt)."""

    key: str
    tool_use_id: str
    tool: str
    input: Any
    agent_path: tuple[str, ...]
    grant: str | None = None
    """The standing grant that approved it instead of a person's answer (its id), if one did."""


class StandingGrants(Protocol):
    """The standing grants a run may apply (the service's, from its records): a call that needs approval
    under a rule that allows grants, and that nobody was asked about yet, runs without a question when
    one covers it (see resumable.runtime.approval)."""

    def begun(self, key: str) -> str | None:
        """The grant the call's journal entry (``key``) already began under, where one did and the call
        may have taken effect: it goes to the journal again (which gives back what became of it), never
        to a new question, whatever became of the grant since."""
        ...

    def covering(self, tool: str, tool_input: Any, rule: ApprovalRule) -> str | None:
        """The id of a grant, live as last read, that covers a call of ``tool`` with ``tool_input`` under
        ``rule``; None: none does (the call asks). The journal checks it again, atomically, as the
        action's entry begins."""
        ...


class ActionJournal(Protocol):
    """Records approved actions so that each runs at most once, even across crashes and rebuilds."""

    def run(self, action: ApprovedAction, perform: Callable[[FencingToken], dict[str, Any]]) -> dict[str, Any]:
        """Run ``perform`` (which returns a toolResult) unless ``action.key`` was started before.

        A finished earlier run's result is returned again; a run that started but never recorded its
        result is not repeated: the model is told its outcome is unknown.
        """
        ...


@dataclass(frozen=True)
class SubAgentCall:
    """One call of a sub-agent as a tool, named by its id prefix (unique in the root's tree)."""

    id_prefix: str
    parent_prefix: str
    tool_use_id: str
    agent_path: tuple[str, ...]


class SubAgentObserver(Protocol):
    """Told when a sub-agent call starts (or resumes) and how it stopped."""

    def started(self, call: SubAgentCall) -> None: ...

    def finished(self, call: SubAgentCall, stop_reason: str) -> None:
        """``stop_reason`` is the sub-agent's (``end_turn``, ``interrupt``, ...) or ``failed``."""
        ...


@dataclass(frozen=True)
class Invocation:
    """The cooperative stop signal, where in the agent tree a call runs, and the service's hooks.

    ``id_prefix`` is what the root agent puts before this agent's local interrupt ids (empty for the
    root), and ``agent_path`` names the agents from the root down to this one. ``journal`` and
    ``observer`` are optional: the runtime works without them; the service provides both.
    ``checkpoint`` is asked before every call of a tool that is not a sub-agent (a sub-agent asks
    before its own tool calls): True pauses the turn there, before the call runs, with a
    ``CHECKPOINT_INTERRUPT`` (so the turn can be committed and continued by another process).
    """

    stop: Callable[[], bool] | None = None
    id_prefix: str = ""
    agent_path: tuple[str, ...] = ()
    journal: ActionJournal | None = None
    observer: SubAgentObserver | None = None
    checkpoint: Callable[[], bool] | None = None
    default_policy: ApprovalPolicy | None = None
    """The deployment's approval policy, for tools neither their declaration nor the agent's decides."""
    grants: StandingGrants | None = None
    """The standing grants this run may apply (None: none; every call that needs approval asks)."""

    def should_stop(self) -> bool:
        return self.stop is not None and self.stop()

    def should_checkpoint(self) -> bool:
        return self.checkpoint is not None and self.checkpoint()

    def nested(self, id_prefix: str, agent_name: str) -> Invocation:
        """The invocation of a sub-agent called by this one's tool."""
        return replace(self, id_prefix=self.id_prefix + id_prefix, agent_path=(*self.agent_path, agent_name))

"""Advancing a leased turn tree: rebuild every agent from storage, run to the next stop, commit.

Used by start-turn, submit-approval and recovery alike. The caller holds the root turn's lease; every
step boundary renews it (and reads the cancel request), every approved action goes through the
action journal, every sub-agent call becomes a child turn, and the outcome is one commit guarded by
the lease and the version.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from resumable.exceptions import LeaseLostError, ModelError, SnapshotError, StaleCommitError, StoreError
from resumable.runtime.agent import Agent, AgentResult
from resumable.runtime.agent_as_tool import call_prefix
from resumable.runtime.interrupts import CHECKPOINT_INTERRUPT, CONTINUE, Interrupt
from resumable.runtime.invocation import Invocation, SubAgentCall
from resumable.service.access import load
from resumable.service.agent_factory import AgentContext, build
from resumable.service.continuation import Budget, continue_later
from resumable.service.ids import child_turn_id, request_id
from resumable.service.journal import LeasedActionJournal
from resumable.service.lease import LeaseGuard
from resumable.service.limits import bounded_json, bounded_text
from resumable.service.settlement import CANCELED_ON_REQUEST, settle_tree, superseded
from resumable.service.workflow import tell_workflow
from resumable.store.base import Commit
from resumable.store.records import (
    SETTLED,
    InteractionRecord,
    OutboxEvent,
    TurnRecord,
    TurnStatus,
    TurnTree,
)
from resumable.store.s3_session import S3Session

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)

# What an interaction may hold in DynamoDB; the whole of it is always in the snapshot.
MAX_REASON_BYTES = 16 * 1024
MAX_OUTPUT_BYTES = 64 * 1024
MAX_ERROR_BYTES = 4 * 1024

_CHILD_STATUS: dict[str, TurnStatus] = {
    "end_turn": "completed",
    "interrupt": "waiting",
    "max_steps": "failed",
    "cancelled": "canceled",
    "failed": "failed",
}


@dataclass
class ChildTurns:
    """The sub-agent observer: turns every sub-agent call into a child turn record."""

    root: TurnRecord
    now: float
    records: dict[str, TurnRecord] = field(default_factory=dict)
    touched: set[str] = field(default_factory=set)

    def turn_id(self, prefix: str) -> str:
        return child_turn_id(self.root.turn_id, prefix) if prefix else self.root.turn_id

    def started(self, call: SubAgentCall) -> None:
        turn_id = self.turn_id(call.id_prefix)
        existing = self.records.get(turn_id)
        self.records[turn_id] = (existing or self._new(turn_id, call)).model_copy(
            update={"status": "running", "updated_at": self.now}
        )
        self.touched.add(turn_id)

    def finished(self, call: SubAgentCall, stop_reason: str) -> None:
        turn_id = self.turn_id(call.id_prefix)
        self.records[turn_id] = self.records[turn_id].model_copy(
            update={"status": _CHILD_STATUS[stop_reason], "updated_at": self.now}
        )

    def _new(self, turn_id: str, call: SubAgentCall) -> TurnRecord:
        return TurnRecord(
            session_id=self.root.session_id,
            turn_id=turn_id,
            root_turn_id=self.root.turn_id,
            parent_turn_id=self.turn_id(call.parent_prefix),
            parent_tool_use_id=call.tool_use_id,
            agent=call.agent_path[-1],
            agent_path=list(call.agent_path),
            status="running",
            created_at=self.now,
            updated_at=self.now,
        )

    def show_checkpointed(self, interrupts: list[Interrupt]) -> None:
        """A child that paused only for checkpoints (no question of its own or below it) is running."""
        asking = set()
        for interrupt in interrupts:
            if interrupt.name != CHECKPOINT_INTERRUPT:
                turn_id: str | None = self.turn_id(call_prefix(interrupt.id))
                while turn_id is not None and turn_id in self.records and turn_id not in asking:
                    asking.add(turn_id)
                    turn_id = self.records[turn_id].parent_turn_id
        for turn_id, record in self.records.items():
            if record.status == "waiting" and turn_id in self.touched and turn_id not in asking:
                self.records[turn_id] = record.model_copy(update={"status": "running"})

    def settle_all(self, status: TurnStatus) -> None:
        """Settle every child that is not settled yet (the root is settling)."""
        for turn_id, record in self.records.items():
            if record.status not in SETTLED:
                self.records[turn_id] = record.model_copy(update={"status": status, "updated_at": self.now})
                self.touched.add(turn_id)


@dataclass
class Outcome:
    status: TurnStatus
    output: str | None = None
    error: str | None = None
    interrupts: list[Interrupt] = field(default_factory=list)


def _snapshot_key(root: TurnRecord, version: int) -> str:
    return f"snapshots/{quote(root.session_id, safe='')}/{root.turn_id}/{version:06d}-{uuid.uuid4().hex}.json"


def run_leased(deps: Dependencies, tree: TurnTree, lease_owner: str) -> TurnTree:
    """Advance the leased root of ``tree`` from its last committed state and commit the outcome.

    Returns the tree as committed. A snapshot that cannot be loaded leaves the turn ``waiting`` with
    every recorded answer kept (``recover`` retries once it is repaired).
    """
    store, clock = deps.store, deps.clock
    root = tree.root
    session = S3Session(deps.snapshots, root.session_id, root.agent_snapshots)
    agent = build(deps.factory, AgentContext(root.session_id, root.turn_id, session))
    root = root.model_copy(update={"agent": agent.name, "agent_path": [agent.name]})
    tree = tree.model_copy(update={"root": root})
    resuming = root.snapshot_key is not None
    try:
        key = root.snapshot_key or root.base_snapshot_key
        if key is not None:
            agent.restore(deps.snapshots.get(key))
    except SnapshotError as error:
        return _unloadable(deps, tree, lease_owner, error)

    pending = agent.interrupt_state.pending
    answers: dict[str, Any] = {
        i.interrupt_id: i.response for i in tree.interactions if i.status == "answered" and i.interrupt_id in pending
    }
    # A checkpoint is nobody's question: continuing the turn answers it.
    checkpoints = {i.id for i in pending.values() if i.name == CHECKPOINT_INTERRUPT}
    answers |= dict.fromkeys(checkpoints, CONTINUE)
    if resuming and not answers:
        logger.error("turn_id=<%s> | the stored turn awaits none of the recorded answers; left waiting", root.turn_id)
        store.release_lease(root, lease_owner, "waiting", clock.now())
        return load(deps, root.session_id, root.turn_id)

    children = ChildTurns(root, clock.now(), {c.turn_id: c for c in tree.children})
    budget = Budget(clock, deps.settings.turn_budget_seconds)
    lease = LeaseGuard(deps, root, lease_owner)
    journal = LeasedActionJournal(lease, lambda key: children.turn_id(call_prefix(key)))
    invocation = Invocation(
        stop=lease,
        agent_path=(agent.name,),
        journal=journal,
        observer=children,
        # Only a run that another invocation can continue checkpoints when its budget is spent.
        checkpoint=budget if deps.continuation else None,
    )
    prompt: Any = (
        [{"interruptResponse": {"interruptId": i, "response": r}} for i, r in answers.items()]
        if resuming
        else root.prompt
    )
    try:
        result = agent.invoke(prompt, invocation)
        outcome = _outcome(result)
        if outcome.status == "running" and not budget.asked:
            # Checkpointed again without a single tool call asking the budget: the checkpoints were only
            # raised again (a sub-agent's stored turn cannot be loaded), nothing ran. Continuing again
            # would loop; the turn waits, saying why, for recover once it is repaired.
            outcome = Outcome(
                "waiting",
                error="the turn could not be continued: a sub-agent's stored turn cannot be loaded; once it is "
                "repaired, recover continues the turn",
                interrupts=outcome.interrupts,
            )
    except ModelError as error:
        logger.error("turn_id=<%s> | the model failed: %s", root.turn_id, error)
        outcome = Outcome("failed", error=f"the model failed: {error}")
    except LeaseLostError:
        logger.warning(
            "turn_id=<%s>, lease_owner=<%s> | run stopped: lease lost or cancel requested", root.turn_id, lease_owner
        )
        _retire(deps, session.written)
        return _after_refused_commit(deps, tree, lease_owner)
    try:
        committed = _commit(deps, tree, lease_owner, agent, session, children, outcome)
    except StaleCommitError:
        return _after_refused_commit(deps, tree, lease_owner)
    if journal.in_doubt:
        known = {a.key: a for a in committed.actions} | {a.key: a for a in journal.in_doubt}
        committed = committed.model_copy(update={"actions": list(known.values())})
    if committed.root.status == "running":
        continue_later(deps, committed.root)
    return committed


def _after_refused_commit(deps: Dependencies, tree: TurnTree, lease_owner: str) -> TurnTree:
    """The run could not finish (its commit, or an approved action's start, was refused). If it still
    holds the lease, a cancel arrived between step boundaries: confirm it (``canceled``). Otherwise
    another invocation took over: show the turn as it is."""
    now = load(deps, tree.root.session_id, tree.root.turn_id)
    root = now.root
    if root.status == "running" and root.lease_owner == lease_owner and root.cancel_requested:
        return settle_tree(deps, now, "canceled", "superseded", CANCELED_ON_REQUEST, lease_owner=lease_owner)
    logger.warning(
        "turn_id=<%s>, lease_owner=<%s> | commit refused: the turn moved on without this run", root.turn_id, lease_owner
    )
    return now


def _outcome(result: AgentResult) -> Outcome:
    if result.stop_reason == "interrupt":
        checkpointed = all(i.name == CHECKPOINT_INTERRUPT for i in result.interrupts)
        return Outcome("running" if checkpointed else "waiting", interrupts=result.interrupts)
    if result.stop_reason == "end_turn":
        return Outcome("completed", output=result.text)
    if result.stop_reason == "cancelled":
        return Outcome("canceled")
    return Outcome("failed", error="the agent reached its step limit without an answer")


def _commit(
    deps: Dependencies,
    tree: TurnTree,
    lease_owner: str,
    agent: Agent,
    session: S3Session,
    children: ChildTurns,
    outcome: Outcome,
) -> TurnTree:
    """One commit for the run's outcome: the root's new state, the interactions it now waits on (or
    the supersession of those it no longer will), every child turn it touched, one outbox event."""
    store, now = deps.store, deps.clock.now()
    root = tree.root
    version = root.version + 1
    settled = outcome.status in SETTLED
    snapshot_key = None
    if outcome.status in ("waiting", "running", "completed"):
        snapshot_key = _snapshot_key(root, version)
        deps.snapshots.put(snapshot_key, agent.snapshot())
    no_longer_awaited = tree.interactions
    if settled:
        children.settle_all("canceled" if outcome.status == "canceled" else "failed")
        new_interactions: list[InteractionRecord] = []
        open_interactions = 0
    else:
        new_interactions, open_interactions, unapplied = _waiting_on(deps, tree, children, outcome.interrupts, now)
        children.show_checkpointed(outcome.interrupts)
        # A requested interaction the run no longer waits on (written by an earlier attempt whose
        # commit did not finish) can never be answered usefully: it is superseded.
        waited = {i.id for i in outcome.interrupts}
        no_longer_awaited = [i for i in tree.interactions if i.interrupt_id not in waited]
        if unapplied:
            outcome.error = (
                f"answered interaction(s) {unapplied} could not be applied: the sub-agent's stored turn cannot be "
                "loaded. The answers are kept; once the stored turn is repaired, recover (or the same answer "
                "again) applies them"
            )
    completed = outcome.status == "completed"
    commit = Commit(
        root=root.model_copy(
            update={
                "status": outcome.status,
                "version": version,
                "snapshot_key": snapshot_key or root.snapshot_key,
                "agent_snapshots": session.snapshot_keys,
                "output": bounded_text(outcome.output, MAX_OUTPUT_BYTES),
                "error": bounded_text(outcome.error, MAX_ERROR_BYTES),
                "open_interactions": open_interactions,
                "lease_owner": None,
                "lease_expires_at": None,
                "updated_at": now,
            }
        ),
        expected_version=root.version,
        expected_status="running",
        expected_lease_owner=lease_owner,
        refuse_if_canceling=not settled,
        settle_session=settled,
        session_snapshot_key=snapshot_key if completed else None,
        agent_snapshots=session.snapshot_keys if completed else None,
        new_interactions=new_interactions,
        interaction_changes=superseded(no_longer_awaited, now),
        children=[children.records[t] for t in sorted(children.touched)],
        events=[
            OutboxEvent(
                type=f"turn.{outcome.status}",
                turn_id=root.turn_id,
                detail={"requestIds": [i.request_id for i in new_interactions]} if new_interactions else {},
                created_at=now,
            )
        ],
    )
    try:
        store.commit(commit)
    except StaleCommitError:
        _retire(deps, [k for k in [snapshot_key, *session.written] if k])  # nothing points at them
        raise
    _retire(deps, _no_longer_pointed_at(root, snapshot_key, session))
    logger.info(
        "session_id=<%s>, turn_id=<%s>, status=<%s>, version=<%d> | turn committed",
        root.session_id,
        root.turn_id,
        outcome.status,
        version,
    )
    committed = commit.applied_to(tree)
    if settled or new_interactions:
        tell_workflow(deps, committed)
    return committed


def _no_longer_pointed_at(root: TurnRecord, snapshot_key: str | None, session: S3Session) -> list[str]:
    """The snapshots the commit of a run replaced: the turn's previous state, the agents' earlier
    saves of this run, and the agents' snapshots of the turn's previous commit (not the session's,
    which the session still points at)."""
    replaced = [root.snapshot_key] if snapshot_key and root.snapshot_key and root.snapshot_key != snapshot_key else []
    current = set(session.snapshot_keys.values())
    replaced += [key for key in session.written if key not in current]
    if root.base_agent_snapshots is not None:  # else which of them the session points at is unknown: keep all
        sessions = set(root.base_agent_snapshots.values())
        replaced += [key for key in root.agent_snapshots.values() if key not in current and key not in sessions]
    return replaced


def _retire(deps: Dependencies, keys: list[str]) -> None:
    """Retire ``keys`` (tag them for the bucket's lifecycle). Best effort: an untagged snapshot is only
    kept longer."""
    if not keys:
        return
    try:
        deps.snapshots.retire(keys)
    except StoreError as error:
        logger.warning("snapshots %s were not retired (they are kept): %s", keys, error)


def _waiting_on(
    deps: Dependencies, tree: TurnTree, children: ChildTurns, interrupts: list[Interrupt], now: float
) -> tuple[list[InteractionRecord], int, list[str]]:
    """The interactions to create for the interrupts the turn now waits on, how many of its
    interactions are then open, and the answered ones that are pending again (their answer could not
    be applied). An interrupt seen before keeps its interaction (same request id)."""
    root = tree.root
    existing = {i.interrupt_id: i for i in tree.interactions}
    new: list[InteractionRecord] = []
    unapplied: list[str] = []
    open_interactions = 0
    for interrupt in interrupts:
        if interrupt.name == CHECKPOINT_INTERRUPT:
            continue  # nobody's question: no interaction
        known = existing.get(interrupt.id)
        if known is None:
            prefix = call_prefix(interrupt.id)
            owner_turn = children.turn_id(prefix)
            new.append(
                InteractionRecord(
                    session_id=root.session_id,
                    root_turn_id=root.turn_id,
                    turn_id=owner_turn,
                    request_id=request_id(root.turn_id, interrupt.id),
                    interrupt_id=interrupt.id,
                    name=interrupt.name,
                    reason=bounded_json(interrupt.reason, MAX_REASON_BYTES),
                    agent_path=children.records[owner_turn].agent_path if prefix else [root.agent],
                    principal=root.principal,
                    status="requested",
                    expires_at=now + deps.settings.approval_expiry_seconds,
                    created_at=now,
                    updated_at=now,
                )
            )
            open_interactions += 1
        elif known.status == "requested":
            open_interactions += 1
        else:
            unapplied.append(known.request_id)
            logger.error(
                "session_id=<%s>, turn_id=<%s>, request_id=<%s> | answered interaction is pending again (its "
                "stored turn could not be loaded): the answer is kept and applied by recover once the turn loads",
                root.session_id,
                root.turn_id,
                known.request_id,
            )
    return new, open_interactions, unapplied


def _unloadable(deps: Dependencies, tree: TurnTree, lease_owner: str, error: SnapshotError) -> TurnTree:
    """The turn's state cannot be loaded: a resume leaves it waiting (answers kept) for recovery; a
    new turn whose session conversation cannot be loaded fails, saying why."""
    root = tree.root
    logger.error("session_id=<%s>, turn_id=<%s> | snapshot cannot be loaded: %s", root.session_id, root.turn_id, error)
    if root.snapshot_key is not None:
        deps.store.release_lease(
            root, lease_owner, "waiting", deps.clock.now(), error=f"the turn's snapshot cannot be loaded: {error}"
        )
        return load(deps, root.session_id, root.turn_id)
    return settle_tree(
        deps,
        tree,
        "failed",
        "superseded",
        f"the session's conversation cannot be loaded: {error}",
        lease_owner=lease_owner,
    )

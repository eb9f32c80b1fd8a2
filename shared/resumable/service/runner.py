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

from resumable.exceptions import LeaseLostError, ModelError, SnapshotError, StaleCommitError
from resumable.runtime.agent import Agent, AgentResult
from resumable.runtime.agent_as_tool import call_prefix
from resumable.runtime.invocation import Invocation, SubAgentCall
from resumable.service.agent_factory import AgentContext, build
from resumable.service.ids import child_turn_id, request_id
from resumable.service.settlement import settle_tree
from resumable.store.base import Commit
from resumable.store.journal import StoreActionJournal
from resumable.store.records import (
    SETTLED,
    InteractionRecord,
    InteractionStatus,
    OutboxEvent,
    TurnRecord,
    TurnStatus,
    TurnTree,
)
from resumable.store.s3_session import S3Session

if TYPE_CHECKING:
    from resumable.service.service import Service

logger = logging.getLogger(__name__)

_CHILD_STATUS: dict[str, TurnStatus] = {
    "end_turn": "completed",
    "interrupt": "waiting",
    "max_steps": "failed",
    "cancelled": "canceled",
    "failed": "failed",
}


class LeaseGuard:
    """The stop signal of a leased run: renews the lease at every step boundary and reports a cancel
    request. Raises ``LeaseLostError`` (which ends the run without a commit) if the lease was lost.

    The first boundary comes right after the lease was taken, by a write that already required no
    cancel request, so it costs no call.
    """

    def __init__(self, service: Service, root: TurnRecord, owner: str) -> None:
        self.service = service
        self.root = root
        self.owner = owner
        self.fresh = True

    def __call__(self) -> bool:
        if self.fresh:
            self.fresh = False
            return False
        now = self.service.clock.now()
        self.root = self.service.store.renew_lease(
            self.root, self.owner, now, now + self.service.settings.lease_seconds
        )
        return self.root.cancel_requested


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
    result: AgentResult | None = None


def _snapshot_key(root: TurnRecord, version: int) -> str:
    return f"snapshots/{quote(root.session_id, safe='')}/{root.turn_id}/{version:06d}-{uuid.uuid4().hex}.json"


def run_leased(service: Service, tree: TurnTree, owner: str) -> TurnTree:
    """Advance the leased root of ``tree`` from its last committed state and commit the outcome.

    Returns the tree as committed. A snapshot that cannot be loaded leaves the turn ``waiting`` with
    every recorded answer kept (``recover`` retries once it is repaired).
    """
    store, clock = service.store, service.clock
    root = tree.root
    session = S3Session(store, root.session_id, root.agent_heads)
    agent = build(service.factory, AgentContext(root.session_id, root.turn_id, session))
    root = root.model_copy(update={"agent": agent.name, "agent_path": [agent.name]})
    tree = tree.model_copy(update={"root": root})
    resuming = root.snapshot_key is not None
    try:
        key = root.snapshot_key or root.base_snapshot_key
        if key is not None:
            agent.restore(store.get_snapshot(key))
    except SnapshotError as error:
        return _unloadable(service, tree, owner, error)

    answers = {
        i.interrupt_id: i.response
        for i in tree.interactions
        if i.status == "answered" and i.interrupt_id in agent.interrupt_state.pending
    }
    if resuming and not answers:
        logger.error("turn_id=<%s> | the stored turn awaits none of the recorded answers; left waiting", root.turn_id)
        store.release_lease(root, owner, "waiting", clock.now())
        return service.load(root.session_id, root.turn_id)

    children = ChildTurns(root, clock.now(), {c.turn_id: c for c in tree.children})
    invocation = Invocation(
        stop=LeaseGuard(service, root, owner),
        agent_path=(agent.name,),
        journal=StoreActionJournal(store, root.session_id, root.turn_id, clock),
        observer=children,
    )
    prompt: Any = (
        [{"interruptResponse": {"interruptId": i, "response": r}} for i, r in answers.items()]
        if resuming
        else root.prompt
    )
    try:
        result = agent.invoke(prompt, invocation)
        outcome = _outcome(result)
    except ModelError as error:
        logger.error("turn_id=<%s> | the model failed: %s", root.turn_id, error)
        outcome = Outcome("failed", error=f"the model failed: {error}")
    except LeaseLostError:
        logger.warning("turn_id=<%s>, owner=<%s> | lease lost mid-run; nothing committed", root.turn_id, owner)
        return service.load(root.session_id, root.turn_id)
    try:
        return _commit(service, tree, owner, agent, session, children, outcome)
    except StaleCommitError:
        return _after_refused_commit(service, tree, owner)


def _after_refused_commit(service: Service, tree: TurnTree, owner: str) -> TurnTree:
    """The commit was refused. If this run still holds the lease, a cancel arrived after its last step
    boundary: confirm it (``canceled``). Otherwise another invocation took over: show the turn as is."""
    now = service.load(tree.root.session_id, tree.root.turn_id)
    root = now.root
    if root.status == "running" and root.lease_owner == owner and root.cancel_requested:
        return settle_tree(service, now, "canceled", "superseded", "canceled on request")
    logger.warning("turn_id=<%s>, owner=<%s> | commit refused: the turn moved on without this run", root.turn_id, owner)
    return now


def _outcome(result: AgentResult) -> Outcome:
    if result.stop_reason == "interrupt":
        return Outcome("waiting", result=result)
    if result.stop_reason == "end_turn":
        return Outcome("completed", output=result.text, result=result)
    if result.stop_reason == "cancelled":
        return Outcome("canceled", result=result)
    return Outcome("failed", error="the agent reached its step limit without an answer", result=result)


def _commit(
    service: Service,
    tree: TurnTree,
    owner: str,
    agent: Agent,
    session: S3Session,
    children: ChildTurns,
    outcome: Outcome,
) -> TurnTree:
    store, now = service.store, service.clock.now()
    root = tree.root
    version = root.version + 1
    snapshot_key = None
    if outcome.status in ("waiting", "completed"):
        snapshot_key = _snapshot_key(root, version)
        store.put_snapshot(snapshot_key, agent.snapshot())
    new_interactions: list[InteractionRecord] = []
    changes: list[tuple[InteractionRecord, InteractionStatus]] = []
    open_interactions = 0
    if outcome.status == "waiting":
        assert outcome.result is not None
        existing = {i.interrupt_id: i for i in tree.interactions}
        for interrupt in outcome.result.interrupts:
            known = existing.get(interrupt.id)
            if known is None:
                owner_prefix = call_prefix(interrupt.id)
                owner_id = children.turn_id(owner_prefix)
                path = children.records[owner_id].agent_path if owner_prefix else [root.agent]
                new_interactions.append(
                    InteractionRecord(
                        session_id=root.session_id,
                        root_turn_id=root.turn_id,
                        turn_id=owner_id,
                        request_id=request_id(root.turn_id, interrupt.id),
                        interrupt_id=interrupt.id,
                        name=interrupt.name,
                        reason=interrupt.reason,
                        agent_path=path,
                        status="requested",
                        expires_at=now + service.settings.approval_expiry_seconds,
                        created_at=now,
                        updated_at=now,
                    )
                )
                open_interactions += 1
            elif known.status == "requested":
                open_interactions += 1
            elif known.status == "answered":
                logger.error(
                    "turn_id=<%s>, request_id=<%s> | answered interaction is pending again (its stored turn could "
                    "not be loaded): the answer is kept and applied by recover once the turn loads",
                    root.turn_id,
                    known.request_id,
                )
    else:
        children.settle_all("canceled" if outcome.status == "canceled" else "interrupted")
        changes = [
            (i.model_copy(update={"status": "superseded", "updated_at": now}), "requested")
            for i in tree.interactions
            if i.status == "requested"
        ]
    settled = outcome.status != "waiting"
    new_root = root.model_copy(
        update={
            "status": outcome.status,
            "version": version,
            "snapshot_key": snapshot_key or root.snapshot_key,
            "agent_heads": session.heads,
            "output": outcome.output,
            "error": outcome.error,
            "open_interactions": open_interactions,
            "lease_owner": None,
            "lease_expires_at": None,
            "updated_at": now,
        }
    )
    completed = outcome.status == "completed"
    commit = Commit(
        root=new_root,
        expected_version=root.version,
        expected_status="running",
        expected_lease_owner=owner,
        refuse_if_canceling=not settled,
        settle_session=settled,
        session_snapshot_key=snapshot_key if completed else None,
        agent_heads=session.heads if completed else None,
        new_interactions=new_interactions,
        interaction_changes=changes,
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
    store.commit(commit)
    logger.info(
        "session_id=<%s>, turn_id=<%s>, status=<%s>, version=<%d> | turn committed",
        root.session_id,
        root.turn_id,
        outcome.status,
        version,
    )
    return commit.applied_to(tree)


def _unloadable(service: Service, tree: TurnTree, owner: str, error: SnapshotError) -> TurnTree:
    """The turn's state cannot be loaded: a resume leaves it waiting (answers kept) for recovery; a
    new turn whose session conversation cannot be loaded fails, saying why."""
    root = tree.root
    logger.error("session_id=<%s>, turn_id=<%s> | snapshot cannot be loaded: %s", root.session_id, root.turn_id, error)
    if root.snapshot_key is not None:
        service.store.release_lease(root, owner, "waiting", service.clock.now())
        return service.load(root.session_id, root.turn_id)
    now = service.clock.now()
    commit = Commit(
        root=root.model_copy(
            update={
                "status": "failed",
                "version": root.version + 1,
                "error": f"the session's conversation could not be loaded: {error}",
                "lease_owner": None,
                "lease_expires_at": None,
                "updated_at": now,
            }
        ),
        expected_version=root.version,
        expected_status="running",
        expected_lease_owner=owner,
        settle_session=True,
        events=[OutboxEvent(type="turn.failed", turn_id=root.turn_id, created_at=now)],
    )
    service.store.commit(commit)
    return commit.applied_to(tree)

"""The commit of a run's outcome: the root's new state, the interactions it now waits on (or the
supersession of those it no longer will), every child turn it touched and the outbox events that say so, in one
commit guarded by the run's lease and the root's version; then the snapshots it replaced retired."""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from resumable.exceptions import StaleCommitError
from resumable.metrics import count_commit
from resumable.runtime.agent_as_tool import call_prefix
from resumable.runtime.interrupts import APPROVAL_INTERRUPT, CHECKPOINT_INTERRUPT, Interrupt
from resumable.runtime.rules import ApprovalRule, riskier
from resumable.runtime.seam import AgentRuntime
from resumable.service.advancing.child_turns import ChildTurns
from resumable.service.advancing.settlement import superseded
from resumable.service.advancing.workflow import tell_workflow
from resumable.service.ids import request_id
from resumable.service.limits import bounded_reason, bounded_text
from resumable.service.retention import purge_time, retire
from resumable.store.base import Commit
from resumable.store.outbox import interaction_closed, interaction_requested, turn_settled
from resumable.store.records import SETTLED, ActionRecord, InteractionRecord, TurnRecord, TurnStatus, TurnTree
from resumable.store.s3_session import S3Session

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)

# What an interaction may hold in DynamoDB; the whole of it is always in the snapshot.
MAX_REASON_BYTES = 16 * 1024
MAX_OUTPUT_BYTES = 64 * 1024
MAX_ERROR_BYTES = 4 * 1024
MAX_SCHEMA_BYTES = 16 * 1024
MAX_ROOT_PROMPT_BYTES = 2 * 1024

NO_LONGER_AWAITED = (
    "the turn no longer waits on it: an earlier attempt of the run asked it, and that attempt's commit did not finish"
)


@dataclass
class Outcome:
    """Where a run stopped: the root's new status, its output or error, and what it waits on."""

    status: TurnStatus
    output: str | None = None
    error: str | None = None
    interrupts: list[Interrupt] = field(default_factory=list)


@dataclass
class Waiting:
    """The interactions a commit writes: the new ones, how many are then open, and the requested
    ones the run no longer waits on (superseded)."""

    new: list[InteractionRecord] = field(default_factory=list)
    open: int = 0
    no_longer_awaited: list[InteractionRecord] = field(default_factory=list)
    unannounced: list[InteractionRecord] = field(default_factory=list)
    """Requested ones an earlier attempt of this commit wrote, whose events never landed."""


def commit_run(
    deps: Dependencies,
    tree: TurnTree,
    lease_owner: str,
    agent: AgentRuntime,
    session: S3Session,
    children: ChildTurns,
    outcome: Outcome,
    actions: list[ActionRecord],
) -> TurnTree:
    """Commit the run's ``outcome`` (see the module); return the tree as committed. ``actions``: the
    action journal's entries the run wrote (they expire with the tree). Raises ``StaleCommitError``
    (having retired the snapshots it wrote) if the run no longer holds the turn."""
    root, now = tree.root, deps.clock.now()
    snapshot_key = _write_snapshot(deps, root, agent, outcome)
    waiting = _waiting(deps, tree, children, outcome, now)
    purge_at = purge_time(deps, now) if outcome.status in SETTLED else None
    commit = _commit_of(tree, lease_owner, session, children, outcome, waiting, snapshot_key, now, purge_at)
    if commit.expiring is not None:
        commit.expiring = tree.model_copy(update={"actions": [*tree.actions, *actions]})
    try:
        deps.store.commit(commit)
    except StaleCommitError:
        retire(deps, [k for k in [snapshot_key, *session.written] if k])  # nothing points at them
        raise
    count_commit(commit)
    retire(deps, _no_longer_pointed_at(root, snapshot_key, session))
    logger.info(
        "session_id=<%s>, turn_id=<%s>, status=<%s>, version=<%d> | turn committed",
        root.session_id,
        root.turn_id,
        outcome.status,
        commit.root.version,
    )
    committed = commit.applied_to(tree)
    if outcome.status in SETTLED or waiting.new:
        tell_workflow(deps, committed)
    return committed


def _write_snapshot(deps: Dependencies, root: TurnRecord, agent: AgentRuntime, outcome: Outcome) -> str | None:
    """The agents' state under a new key, for a turn that will go on (or has become the session's
    conversation); None for one that ends otherwise."""
    if outcome.status not in ("waiting", "running", "completed"):
        return None
    key = f"snapshots/{quote(root.session_id, safe='')}/{root.turn_id}/{root.version + 1:06d}-{uuid.uuid4().hex}.json"
    return deps.snapshots.put(key, agent.snapshot())


def _waiting(deps: Dependencies, tree: TurnTree, children: ChildTurns, outcome: Outcome, now: float) -> Waiting:
    """What the commit does to interactions. A settling run supersedes every requested one and
    settles the children it leaves unsettled."""
    if outcome.status in SETTLED:
        children.settle_all("canceled" if outcome.status == "canceled" else "failed")
        return Waiting(no_longer_awaited=tree.interactions)
    new, unannounced, open_interactions, unapplied = _waiting_on(deps, tree, children, outcome.interrupts, now)
    children.show_checkpointed(outcome.interrupts)
    if unapplied:
        outcome.error = (
            f"answered interaction(s) {unapplied} could not be applied: the sub-agent's stored turn cannot be "
            "loaded. The answers are kept; once the stored turn is repaired, recover (or the same answer "
            "again) applies them"
        )
    # A requested interaction the run no longer waits on (written by an earlier attempt whose commit
    # did not finish) can never be answered usefully: it is superseded.
    waited = {i.id for i in outcome.interrupts}
    no_longer = [i for i in tree.interactions if i.interrupt_id not in waited]
    return Waiting(new, open_interactions, no_longer, unannounced)


def _commit_of(
    tree: TurnTree,
    lease_owner: str,
    session: S3Session,
    children: ChildTurns,
    outcome: Outcome,
    waiting: Waiting,
    snapshot_key: str | None,
    now: float,
    purge_at: float | None,
) -> Commit:
    root = tree.root
    settled, completed = outcome.status in SETTLED, outcome.status == "completed"
    new_root = root.model_copy(
        update={
            "status": outcome.status,
            "version": root.version + 1,
            "snapshot_key": snapshot_key or root.snapshot_key,
            "agent_snapshots": session.snapshot_keys,
            "output": bounded_text(outcome.output, MAX_OUTPUT_BYTES),
            "error": bounded_text(outcome.error, MAX_ERROR_BYTES),
            "open_interactions": waiting.open,
            "lease_owner": None,
            "lease_expires_at": None,
            "purge_at": purge_at,
            "updated_at": now,
        }
    )
    changes = superseded(waiting.no_longer_awaited, now)
    why = f"its turn settled {outcome.status}" if settled else NO_LONGER_AWAITED
    return Commit(
        root=new_root,
        expected_version=root.version,
        expected_status="running",
        expected_lease_owner=lease_owner,
        refuse_if_canceling=not settled,
        settle_session=settled,
        session_snapshot_key=snapshot_key if completed else None,
        agent_snapshots=session.snapshot_keys if completed else None,
        new_interactions=waiting.new,
        interaction_changes=changes,
        children=[children.records[t] for t in sorted(children.touched)],
        events=[
            *(interaction_requested(i) for i in [*waiting.unannounced, *waiting.new]),
            *(interaction_closed(i, why) for i, _ in changes),
            *([turn_settled(new_root)] if settled else []),
        ],
        expiring=tree if settled else None,
    )


def _judged(reason: Any, rule: dict[str, Any] | None) -> dict[str, Any]:
    """How risky an approval is (the higher of its tool's and its rule's declaration) and whether
    approving it needs a confirmation (its rule says so, or it is destructive)."""
    if not isinstance(reason, dict):
        return {}
    risk = riskier(reason.get("risk"), (rule or {}).get("risk"))
    return {"risk": risk, "confirm": risk == "destructive" or (rule or {}).get("confirm") is True}


def _edit_terms(interrupt: Interrupt) -> tuple[Any, bool, dict[str, Any] | None, dict[str, Any] | None]:
    """The reason shown to people, whether (and against which schema) an answer may edit the input,
    and the approval rule its answers must meet (None: one answer by whoever may answer the session).
    An editable approval carries its tool's input schema, and a ruled one its rule: both are kept apart
    from the reason. A rule that does not read as one lets nobody answer (never anyone at all)."""
    reason = interrupt.reason
    if interrupt.name != APPROVAL_INTERRUPT or not isinstance(reason, dict):
        return reason, False, None, None
    rule = reason.get("rule")
    shown = {k: v for k, v in reason.items() if k not in ("inputSchema", "rule")}
    if rule is not None:
        try:
            rule = ApprovalRule.model_validate(rule).stored()
        except ValueError:
            logger.error("tool %r asked under a rule that is not one (%.200r): nobody may answer it",
                         reason.get("tool"), rule)  # fmt: skip
            rule = {"tools": [str(reason.get("tool"))], "name": "unreadable rule", "approvers": []}
    if reason.get("editable") is True:
        schema = reason.get("inputSchema")
        if isinstance(schema, dict) and len(json.dumps(schema).encode()) <= MAX_SCHEMA_BYTES:
            return shown, True, schema, rule
        logger.warning("tool %r's input schema is missing or over %d bytes: its approval is not editable",
                       reason.get("tool"), MAX_SCHEMA_BYTES)  # fmt: skip
        return {**shown, "editable": False}, False, None, rule
    return shown, False, None, rule


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


def _waiting_on(
    deps: Dependencies, tree: TurnTree, children: ChildTurns, interrupts: list[Interrupt], now: float
) -> tuple[list[InteractionRecord], list[InteractionRecord], int, list[str]]:
    """The interactions to create for the interrupts the turn now waits on, the requested ones an
    earlier attempt of this commit wrote (to announce now), how many of its interactions are then
    open, and the answered ones that are pending again (their answer could not be applied). An
    interrupt seen before keeps its interaction (same request id)."""
    root = tree.root
    existing = {i.interrupt_id: i for i in tree.interactions}
    new: list[InteractionRecord] = []
    unannounced: list[InteractionRecord] = []
    unapplied: list[str] = []
    open_interactions = 0
    for interrupt in interrupts:
        if interrupt.name == CHECKPOINT_INTERRUPT:
            continue  # nobody's question: no interaction
        known = existing.get(interrupt.id)
        if known is None:
            prefix = call_prefix(interrupt.id)
            owner_turn = children.turn_id(prefix)
            reason, editable, input_schema, rule = _edit_terms(interrupt)
            new.append(
                InteractionRecord(
                    session_id=root.session_id,
                    root_turn_id=root.turn_id,
                    turn_id=owner_turn,
                    request_id=request_id(root.turn_id, interrupt.id),
                    interrupt_id=interrupt.id,
                    name=interrupt.name,
                    reason=bounded_reason(reason, MAX_REASON_BYTES),
                    editable=editable,
                    input_schema=input_schema,
                    rule=rule,
                    asked_in_version=root.version + 1,
                    agent_path=children.records[owner_turn].agent_path if prefix else [root.agent],
                    principal=root.principal,
                    started_by=root.started_by if root.started_by is not None else root.principal,
                    started_by_name=root.started_by_name,
                    root_prompt=bounded_text(root.prompt, MAX_ROOT_PROMPT_BYTES),
                    **_judged(reason, rule),
                    status="requested",
                    expires_at=now + deps.settings.approval_expiry_seconds,
                    created_at=now,
                    updated_at=now,
                )
            )
            open_interactions += 1
        elif known.status == "requested":
            open_interactions += 1
            if known.asked_in_version == root.version + 1:
                unannounced.append(known)  # an earlier attempt of this commit wrote it; its event never landed
        else:
            unapplied.append(known.request_id)
            logger.error(
                "session_id=<%s>, turn_id=<%s>, request_id=<%s> | answered interaction is pending again (its "
                "stored turn could not be loaded): the answer is kept and applied by recover once the turn loads",
                root.session_id,
                root.turn_id,
                known.request_id,
            )
    return new, unannounced, open_interactions, unapplied

"""Advancing a turn tree: rebuild every agent from storage, run to the next stop, commit.

Start-turn, submit-approval, recover and continuations alike. ``advance`` moves a stalled tree on
(see ``service.advancing.stall``); ``run_leased`` runs a tree whose root lease the caller holds:
every step boundary looks at it (renewing it once a quarter has passed) and reads the cancel request,
every approved action goes through the action journal, every sub-agent call becomes a child turn, and
the outcome is one commit guarded by the lease and the version.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from resumable.exceptions import AgentFactoryError, LeaseLostError, ModelError, SnapshotError, StaleCommitError
from resumable.runtime.agent_as_tool import call_prefix
from resumable.runtime.interrupts import CHECKPOINT_INTERRUPT, CONTINUE
from resumable.runtime.invocation import Invocation
from resumable.runtime.seam import AgentResult, AgentRuntime
from resumable.service.access import load, rule_of
from resumable.service.advancing.child_turns import ChildTurns
from resumable.service.advancing.commit import Outcome, commit_run
from resumable.service.advancing.continuation import Budget, continue_later
from resumable.service.advancing.journal import LeasedActionJournal
from resumable.service.advancing.lease import LeaseGuard
from resumable.service.advancing.settlement import CANCELED_ON_REQUEST, settle_stalled, settle_tree
from resumable.service.advancing.stall import SETTLES, stall
from resumable.service.agent_factory import AgentContext, build
from resumable.service.grants.applying import LiveGrants
from resumable.service.retention import retire
from resumable.store.records import TurnTree
from resumable.store.s3_session import S3Session

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)

# How many times ``advance`` decides again when the tree changed under it.
_DECISIONS = 3


def advance(deps: Dependencies, tree: TurnTree) -> TurnTree:
    """Move ``tree`` on as far as nobody else is doing it; return it as it then is. Settles what
    settling moves on, resumes a waiting tree with every answer recorded, takes over a tree whose
    runner is gone, continues a checkpointed one. The normal path of every last answer, and of
    ``recover``: a client retrying its answer drives a stalled turn. Where ``deps`` run no agents (the
    DecisionLinks function), a tree that needs moving is handed to the continuation as it is."""
    for _ in range(_DECISIONS):
        try:
            moved = _advance_once(deps, tree)
        except StaleCommitError:
            moved = None
        if moved is not None:
            return moved
        logger.info("turn_id=<%s> | the turn changed while advancing it; deciding again", tree.root.turn_id)
        tree = load(deps, tree.root.session_id, tree.root.turn_id)
    return tree


def _advance_once(deps: Dependencies, tree: TurnTree) -> TurnTree | None:
    """Act on ``tree`` as it was read; None when it changed meanwhile (a lease went to someone else)."""
    root, now = tree.root, deps.clock.now()
    why = stall(tree, now)
    if why is None:
        return tree
    if not deps.runs_agents:  # (this function holds no model's or workflow's grants: the continuing one moves it)
        continue_later(deps, root)
        return tree
    if why in SETTLES:
        moved = settle_stalled(deps, tree, why)
        if moved.root.settled or stall(moved, now) != "answered_unresumed":
            return moved
        tree, why = moved, "answered_unresumed"  # its expired questions were denied (their rule says so)
        root = tree.root
    lease_owner = uuid.uuid4().hex
    until = now + deps.settings.lease_seconds
    takeover = why != "answered_unresumed"
    leased = deps.store.acquire_lease(root.session_id, root.turn_id, lease_owner, now, until, takeover=takeover)
    if leased is None:
        return None
    if why == "checkpointed":
        logger.info("turn_id=<%s> | continuing the checkpointed turn", root.turn_id)
    elif why == "runner_gone":
        logger.warning("turn_id=<%s> | lease expired mid-run: taken over", root.turn_id)
    if why == "runner_gone":  # (the runner taken over may have begun an action since the tree was read)
        tree = deps.store.load_tree(root.session_id, root.turn_id) or tree
    return run_leased(deps, tree.model_copy(update={"root": leased}), lease_owner)


def run_leased(deps: Dependencies, tree: TurnTree, lease_owner: str) -> TurnTree:
    """Advance the leased root of ``tree`` from its last committed state and commit the outcome.

    Returns the tree as committed. A snapshot that cannot be loaded leaves the turn ``waiting`` with
    every recorded answer kept (``recover`` retries once it is repaired).
    """
    root = tree.root
    session = S3Session(deps.snapshots, root.session_id, root.agent_snapshots)
    try:
        with build(deps.factory, AgentContext(root.session_id, root.turn_id, session)) as agent:
            return _run_built(deps, tree, lease_owner, agent, session)
    except AgentFactoryError as error:
        return _unbuildable(deps, tree, lease_owner, error)


def _run_built(
    deps: Dependencies, tree: TurnTree, lease_owner: str, agent: AgentRuntime, session: S3Session
) -> TurnTree:
    """``run_leased`` with the agents built (what their factory entered closes when this returns)."""
    root = tree.root
    tree = tree.model_copy(update={"root": root.model_copy(update={"agent": agent.name, "agent_path": [agent.name]})})
    try:
        key = root.snapshot_key or root.base_snapshot_key
        if key is not None:
            agent.restore(deps.snapshots.get(key))
    except SnapshotError as error:
        return _unloadable(deps, tree, lease_owner, error)
    prompt = _prompt(agent, tree)
    if prompt is None:
        logger.error("turn_id=<%s> | the stored turn awaits none of the recorded answers; left waiting", root.turn_id)
        deps.store.release_lease(tree.root, lease_owner, "waiting", deps.clock.now())
        return load(deps, root.session_id, root.turn_id)

    children = ChildTurns(tree.root, deps.clock.now(), {c.turn_id: c for c in tree.children})
    budget = Budget(deps.clock, deps.settings.turn_budget_seconds)
    lease = LeaseGuard(deps, tree.root, lease_owner)
    ruled = {i.request_id: rule.title for i in tree.interactions if (rule := rule_of(i)) is not None}
    grants = LiveGrants(deps, root.session_id, root.principal, tree.actions)
    journal = LeasedActionJournal(lease, lambda key: children.turn_id(call_prefix(key)), ruled, grants)
    invocation = Invocation(
        stop=lease,
        agent_path=(agent.name,),
        journal=journal,
        observer=children,
        # Only a run that another invocation can continue checkpoints when its budget is spent.
        checkpoint=budget if deps.continuation else None,
        default_policy=deps.settings.default_approval_policy,
        grants=grants,
    )
    try:
        outcome = _run(agent, prompt, invocation, budget)
    except LeaseLostError:
        logger.warning(
            "turn_id=<%s>, lease_owner=<%s> | run stopped: lease lost or cancel requested", root.turn_id, lease_owner
        )
        retire(deps, session.written)
        return _after_refused_commit(deps, tree, lease_owner)
    try:
        committed = commit_run(deps, tree, lease_owner, agent, session, children, outcome, list(journal.known.values()))
    except StaleCommitError:
        return _after_refused_commit(deps, tree, lease_owner)
    if journal.known:
        actions = {a.key: a for a in committed.actions} | journal.known
        committed = committed.model_copy(update={"actions": list(actions.values())})
    if committed.root.status == "running":
        continue_later(deps, committed.root)
    return committed


def _prompt(agent: AgentRuntime, tree: TurnTree) -> Any:
    """What the run gives the agent: a new turn's prompt, or, resuming, every recorded answer the
    stored turn awaits (and its checkpoints' continue). None when it awaits none of them."""
    if tree.root.snapshot_key is None:
        return tree.root.prompt
    pending = agent.pending_interrupts()
    answers: dict[str, Any] = {
        i.interrupt_id: i.response for i in tree.interactions if i.status == "answered" and i.interrupt_id in pending
    }
    # A checkpoint is nobody's question: continuing the turn answers it.
    answers |= dict.fromkeys((i.id for i in pending.values() if i.name == CHECKPOINT_INTERRUPT), CONTINUE)
    if not answers:
        return None
    return [{"interruptResponse": {"interruptId": i, "response": r}} for i, r in answers.items()]


def _run(agent: AgentRuntime, prompt: Any, invocation: Invocation, budget: Budget) -> Outcome:
    """Run the agent to its next stop. A model failure fails the turn; a lost lease propagates."""
    try:
        outcome = _outcome(agent.invoke(prompt, invocation))
    except ModelError as error:
        logger.error("agent=<%s> | the model failed: %s", agent.name, error)
        return Outcome("failed", error=f"the model failed: {error}")
    if outcome.status == "running" and not budget.asked:
        # Checkpointed again without a single tool call asking the budget: the checkpoints were only
        # raised again (a sub-agent's stored turn cannot be loaded), nothing ran. Continuing again
        # would loop; the turn waits, saying why, for recover once it is repaired.
        return Outcome(
            "waiting",
            error="the turn could not be continued: a sub-agent's stored turn cannot be loaded; once it is "
            "repaired, recover continues the turn",
            interrupts=outcome.interrupts,
        )
    return outcome


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
    if result.stop_reason == "canceled":
        return Outcome("canceled")
    return Outcome("failed", error="the agent reached its step limit without an answer")


def _unbuildable(deps: Dependencies, tree: TurnTree, lease_owner: str, error: AgentFactoryError) -> TurnTree:
    """The agents could not be built: a new turn fails, saying why; a resumed one is left waiting with
    its answers kept, for the sweeper (or ``recover``) to try again."""
    root = tree.root
    logger.error("session_id=<%s>, turn_id=<%s> | %s", root.session_id, root.turn_id, error)
    if root.snapshot_key is not None:
        deps.store.release_lease(root, lease_owner, "waiting", deps.clock.now(), error=str(error))
        return load(deps, root.session_id, root.turn_id)
    return settle_tree(deps, tree, "failed", "superseded", str(error), lease_owner=lease_owner)


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

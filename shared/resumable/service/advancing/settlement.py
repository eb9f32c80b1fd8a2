"""Settling a turn tree that no invocation is running: cancel, expiry, and a runner that vanished."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resumable.metrics import count_commit
from resumable.service.access import rule_of
from resumable.service.advancing.stall import SETTLES, Stall, stall
from resumable.service.advancing.workflow import tell_workflow
from resumable.service.audit.entries import decision_entry
from resumable.service.retention import purge_time
from resumable.store.answers import AnswerCondition
from resumable.store.base import Commit
from resumable.store.outbox import interaction_closed, turn_settled
from resumable.store.records import SETTLED, InteractionRecord, InteractionStatus, TurnStatus, TurnTree

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)


CANCELED_ON_REQUEST = "canceled on request"
NEVER_CONFIRMED = "canceled, and its runner never confirmed before its lease expired"
EXPIRED = "an interaction expired before it was answered"


def superseded(
    interactions: list[InteractionRecord], now: float, become: InteractionStatus = "superseded"
) -> list[tuple[InteractionRecord, InteractionStatus]]:
    """Every requested interaction among ``interactions`` moved to ``become`` (expected ``requested``)."""
    return [
        (i.model_copy(update={"status": become, "updated_at": now}), "requested")
        for i in interactions
        if i.status == "requested"
    ]


def settle_tree(
    deps: Dependencies,
    tree: TurnTree,
    status: TurnStatus,
    interactions_become: InteractionStatus,
    reason: str,
    *,
    lease_owner: str | None = None,
) -> TurnTree:
    """In one commit: the root and every unsettled child become ``status``, every requested interaction
    becomes ``interactions_become``, and the session is freed (its conversation is left as it was
    before the turn). The root must be unleased and waiting, running under ``lease_owner`` (the run
    settling its own turn), or running under a lease that has expired.

    Raises ``StaleCommitError`` if the tree changed meanwhile (the caller reloads and decides again).
    """
    now = deps.clock.now()
    root = tree.root
    new_root = root.model_copy(
        update={
            "status": status,
            "version": root.version + 1,
            "error": reason if status in ("interrupted", "expired", "failed") else None,
            "open_interactions": 0,
            "lease_owner": None,
            "lease_expires_at": None,
            "purge_at": purge_time(deps, now),
            "updated_at": now,
        }
    )
    changes = superseded(tree.interactions, now, interactions_become)
    commit = Commit(
        root=new_root,
        expected_version=root.version,
        expected_status=root.status,
        expected_lease_owner=root.lease_owner,
        expected_lease_expired_by=now if root.status == "running" and root.lease_owner != lease_owner else None,
        settle_session=True,
        interaction_changes=changes,
        children=[
            c.model_copy(update={"status": status, "updated_at": now}) for c in tree.children if c.status not in SETTLED
        ],
        events=[*(interaction_closed(i, reason) for i, _ in changes), turn_settled(new_root, reason)],
        expiring=tree,
    )
    deps.store.commit(commit)
    count_commit(commit)
    logger.info(
        "session_id=<%s>, turn_id=<%s>, status=<%s> | turn settled: %s", root.session_id, root.turn_id, status, reason
    )
    settled = commit.applied_to(tree)
    tell_workflow(deps, settled)
    return settled


def settle_stalled(deps: Dependencies, tree: TurnTree, why: Stall) -> TurnTree:
    """Settle a stalled tree that settling moves on (``SETTLES``): ``expired`` if it waits on an
    interaction past its expiry; ``canceled`` (or ``interrupted``) if a cancel was requested but did
    not get to settle it."""
    if why == "question_expired":
        denied = deny_at_expiry(deps, tree)
        return denied if denied is not None else settle_tree(deps, tree, "expired", "expired", EXPIRED)
    if tree.root.status == "waiting":
        return settle_tree(deps, tree, "canceled", "superseded", CANCELED_ON_REQUEST)
    return settle_canceled_run(deps, tree)


EXPIRY = "expiry"
"""Who denies a question at its expiry, where its approval rule says ``on_expiry: deny``."""


def deny_at_expiry(deps: Dependencies, tree: TurnTree) -> TurnTree | None:
    """Where every question of ``tree`` past its expiry is under a rule that says ``on_expiry: deny``:
    deny each (the agent is told nobody settled it in time) and return the tree as it then is, its
    turn to resume once nothing else is open; None (deny nothing) otherwise: the turn settles expired."""
    now = deps.clock.now()
    overdue = [i for i in tree.interactions if i.status == "requested" and i.expires_at <= now]
    rules = [rule_of(i) for i in overdue]
    if tree.root.cancel_requested or not overdue or any(rule is None or rule.on_expiry != "deny" for rule in rules):
        return None  # (a cancel that died before it settled the tree: it settles, as without a rule)
    for interaction, rule in zip(overdue, rules, strict=True):
        assert rule is not None
        message = f"nobody settled it before it expired, and the approval rule {rule.title!r} then denies it"
        denial = {"decision": "deny", "message": message}
        outcome = deps.store.answer_interaction(
            interaction.session_id,
            interaction.root_turn_id,
            interaction.request_id,
            denial,
            EXPIRY,
            now,
            AnswerCondition.expired(),
            audit=decision_entry(
                deps, interaction, denial, EXPIRY, {"method": "expiry"}, now, rule=rule.title, votes=interaction.votes
            ),
        )
        logger.info("request_id=<%s>, outcome=<%s> | denied at its expiry (rule %r)", interaction.request_id,
                    outcome.outcome, rule.title)  # fmt: skip
    return deps.store.load_tree(tree.root.session_id, tree.root.turn_id) or tree


def settle_if_stalled(deps: Dependencies, tree: TurnTree) -> TurnTree:
    """``tree`` settled if it is stalled in a way settling moves on; otherwise ``tree`` itself."""
    why = stall(tree, deps.clock.now())
    return settle_stalled(deps, tree, why) if why in SETTLES else tree


def settle_canceled_run(deps: Dependencies, tree: TurnTree) -> TurnTree:
    """Settle a canceling tree that is ``running`` but that no invocation advances: ``canceled`` if it
    is between invocations (checkpointed, unleased), ``interrupted`` if its runner's lease expired
    without confirming the cancel."""
    if tree.root.lease_owner is None:
        return settle_tree(deps, tree, "canceled", "superseded", CANCELED_ON_REQUEST)
    return settle_tree(deps, tree, "interrupted", "superseded", NEVER_CONFIRMED)

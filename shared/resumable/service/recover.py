"""recover: move a turn that a failure left behind to where it should be."""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from resumable.exceptions import StaleCommitError
from resumable.service.access import load
from resumable.service.runner import run_leased
from resumable.service.settlement import settle_canceled_run, settle_overdue
from resumable.service.views import TurnView
from resumable.service.workflow import tell_workflow
from resumable.store.records import TurnTree

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)

_DECISIONS = 3


def recover(deps: Dependencies, session_id: str, turn_id: str) -> TurnView:
    """Safe to call at any time, any number of times:

    - a waiting turn past an interaction's expiry is settled ``expired``, and one whose cancel died
      before it settled the tree is settled ``canceled``;
    - a waiting turn with every interaction answered (the invocation that should have resumed it
      failed, or its snapshot could not be loaded) is resumed with the recorded answers;
    - a running turn whose lease expired is taken over and re-run from its last committed snapshot
      with the recorded answers (or, if canceling, settled ``interrupted``); a checkpointed one
      (running, unleased) is continued (or, if canceling, settled ``canceled``);
    - a settled turn that a workflow waits on is told to it again (the workflow may not have heard);
    - anything else is left alone.

    Approved actions go through the action journal, so none runs twice.
    """
    tree = load(deps, session_id, turn_id)
    if tree.root.settled:
        tell_workflow(deps, tree)  # in case the invocation that settled it could not
        return TurnView.of(tree, turn_id)
    return TurnView.of(advance(deps, tree), turn_id)


def advance(deps: Dependencies, tree: TurnTree) -> TurnTree:
    """Move ``tree`` on as far as nobody else is doing it (the rules of ``recover``); return it as it
    then is. Submit-approval uses it too, so a client retrying its answer drives a stalled turn."""
    for _ in range(_DECISIONS):
        try:
            moved = _recover_once(deps, tree)
        except StaleCommitError:
            moved = None
        if moved is not None:
            return moved
        logger.info("turn_id=<%s> | the turn changed while recovering; deciding again", tree.root.turn_id)
        tree = load(deps, tree.root.session_id, tree.root.turn_id)
    return tree


def _recover_once(deps: Dependencies, tree: TurnTree) -> TurnTree | None:
    """Act on ``tree`` as it was read; None when it changed meanwhile (a lease went to someone else)."""
    root = tree.root
    now = deps.clock.now()
    lease_owner = uuid.uuid4().hex
    until = now + deps.settings.lease_seconds
    settled = settle_overdue(deps, tree)
    if settled is not tree:
        return settled
    if root.status == "waiting" and root.open_interactions == 0:
        leased = deps.store.acquire_lease(root.session_id, root.turn_id, lease_owner, now, until, takeover=False)
        return None if leased is None else run_leased(deps, tree.model_copy(update={"root": leased}), lease_owner)
    if root.status == "running" and (root.lease_expires_at or 0) < now:
        if root.cancel_requested:
            return settle_canceled_run(deps, tree)
        leased = deps.store.acquire_lease(root.session_id, root.turn_id, lease_owner, now, until, takeover=True)
        if leased is None:
            return None
        if root.lease_owner is None:
            logger.info("turn_id=<%s> | continuing the checkpointed turn", root.turn_id)
        else:
            logger.warning("turn_id=<%s> | lease expired mid-run: taken over", root.turn_id)
        return run_leased(deps, tree.model_copy(update={"root": leased}), lease_owner)
    return tree

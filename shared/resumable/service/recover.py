"""recover: move a turn that a failure left behind to where it should be."""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from resumable.exceptions import StaleCommitError
from resumable.service.runner import run_leased
from resumable.service.settlement import expired_interactions, settle_tree
from resumable.service.views import TurnView

if TYPE_CHECKING:
    from resumable.service.service import Service

logger = logging.getLogger(__name__)


def recover(service: Service, session_id: str, turn_id: str) -> TurnView:
    """Safe to call at any time, any number of times:

    - a waiting turn past an interaction's expiry is settled ``expired``;
    - a waiting turn with every interaction answered (the invocation that should have resumed it
      failed, or its snapshot could not be loaded) is resumed with the recorded answers;
    - a running turn whose lease expired is taken over and re-run from its last committed snapshot
      with the recorded answers (or, if canceling, settled ``interrupted``);
    - anything else is left alone.

    Approved actions go through the action journal, so none runs twice.
    """
    tree = service.load(session_id, turn_id)
    root = tree.root
    now = service.clock.now()
    owner = uuid.uuid4().hex
    until = now + service.settings.lease_seconds
    try:
        if expired_interactions(service, tree):
            tree = settle_tree(service, tree, "expired", "expired", "an interaction expired before it was answered")
        elif root.status == "waiting" and root.open_interactions == 0 and not root.cancel_requested:
            leased = service.store.acquire_lease(session_id, root.turn_id, owner, now, until, takeover=False)
            tree = run_leased(service, tree.model_copy(update={"root": leased}), owner) if leased else tree
        elif root.status == "running" and (root.lease_expires_at or 0) < now:
            if root.cancel_requested:
                tree = settle_tree(
                    service,
                    tree,
                    "interrupted",
                    "superseded",
                    "canceled, and its runner never confirmed before its lease expired",
                )
            else:
                leased = service.store.acquire_lease(session_id, root.turn_id, owner, now, until, takeover=True)
                if leased is not None:
                    logger.warning("turn_id=<%s> | lease expired mid-run: taken over", root.turn_id)
                    tree = run_leased(service, tree.model_copy(update={"root": leased}), owner)
    except StaleCommitError:
        logger.info("turn_id=<%s> | the turn changed while recovering; left as it is now", root.turn_id)
        tree = service.load(session_id, turn_id)
    return TurnView.of(tree, turn_id)

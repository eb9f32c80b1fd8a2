"""cancel: stop a turn and every child turn under it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resumable.exceptions import NotFoundError, StaleCommitError
from resumable.service.access import load
from resumable.service.advancing.settlement import CANCELED_ON_REQUEST, settle_canceled_run, settle_tree
from resumable.service.caller import Caller
from resumable.service.ids import root_of, valid_session_id, valid_turn_id
from resumable.service.views import TurnView

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)

_ATTEMPTS = 5


def cancel(deps: Dependencies, session_id: str, turn_id: str, caller: Caller | None) -> TurnView:
    """Mark the tree canceling; settle it now if nobody is running it. A turn being run is told through
    its record and stops at its next step boundary (confirming ``canceled``); one whose runner's lease
    expired without confirming is settled ``interrupted``. Canceling again returns the same result.
    A child turn id cancels its whole tree."""
    if not valid_session_id(session_id) or not valid_turn_id(turn_id):
        raise NotFoundError(f"there is no turn {turn_id!r} in session {session_id!r}; nothing was canceled")
    root_id = root_of(turn_id)
    tree = load(deps, session_id, turn_id, caller)
    if tree.root.settled:
        return TurnView.of(tree, turn_id)  # canceling a settled turn changes nothing: no write needed
    marked = deps.store.request_cancel(session_id, root_id, deps.clock.now())
    if marked is None:
        raise NotFoundError(f"there is no turn {turn_id!r} in session {session_id!r}; nothing was canceled")
    # The tree read before the cancel was marked is current only if the root did not move meanwhile
    # (a run may have committed new interactions or children in between).
    tree = (
        tree.model_copy(update={"root": marked})
        if marked.version == tree.root.version
        else load(deps, session_id, turn_id)
    )
    for _ in range(_ATTEMPTS):
        root = tree.root
        try:
            if root.status == "waiting":
                tree = settle_tree(deps, tree, "canceled", "superseded", CANCELED_ON_REQUEST)
            elif root.status == "running" and (root.lease_expires_at or 0) < deps.clock.now():
                tree = settle_canceled_run(deps, tree)
        except StaleCommitError:
            logger.info("turn_id=<%s> | the tree changed while canceling; deciding again", root_id)
            tree = load(deps, session_id, turn_id)
            continue
        return TurnView.of(tree, turn_id)
    return TurnView.of(load(deps, session_id, turn_id), turn_id)

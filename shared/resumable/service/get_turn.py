"""get-turn: a turn's status, output, interactions with their detail, and child turns."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resumable.exceptions import StaleCommitError
from resumable.service.access import load
from resumable.service.continuation import continue_later
from resumable.service.settlement import settle_overdue, stalled
from resumable.service.views import TurnView

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)


def get_turn(deps: Dependencies, session_id: str, turn_id: str, principal: str | None) -> TurnView:
    """Read the turn. A turn that is overdue (an interaction past its expiry, or a cancel that died
    before it settled the tree) is settled first, so nobody is shown a question that can no longer be
    answered; a turn that stalled (its continuation or resume was lost, its runner died) gets a
    continuation requested, so polling it is enough to move it on."""
    tree = load(deps, session_id, turn_id, principal)
    try:
        tree = settle_overdue(deps, tree)
    except StaleCommitError:
        logger.info("turn_id=<%s> | settling raced another change", tree.root.turn_id)
        tree = load(deps, session_id, turn_id)
    if stalled(deps, tree):
        continue_later(deps, tree.root)
    return TurnView.of(tree, turn_id)

"""get-turn: a turn's status, output, interactions with their detail, and child turns."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resumable.exceptions import StaleCommitError
from resumable.service.settlement import expired_interactions, settle_tree
from resumable.service.views import TurnView

if TYPE_CHECKING:
    from resumable.service.service import Service

logger = logging.getLogger(__name__)


def get_turn(service: Service, session_id: str, turn_id: str) -> TurnView:
    """Read the turn. A waiting turn with an interaction past its expiry is settled ``expired`` first,
    so nobody is shown a question that can no longer be answered."""
    tree = service.load(session_id, turn_id)
    if expired_interactions(service, tree):
        try:
            tree = settle_tree(service, tree, "expired", "expired", "an interaction expired before it was answered")
        except StaleCommitError:
            logger.info("turn_id=<%s> | expiry raced another change", tree.root.turn_id)
            tree = service.load(session_id, turn_id)
    return TurnView.of(tree, turn_id)

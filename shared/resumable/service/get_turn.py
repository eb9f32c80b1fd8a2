"""get-turn: a turn's status, output, interactions with their detail, and child turns."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resumable.exceptions import StaleCommitError
from resumable.service.settlement import settle_overdue
from resumable.service.views import TurnView

if TYPE_CHECKING:
    from resumable.service.service import Service

logger = logging.getLogger(__name__)


def get_turn(service: Service, session_id: str, turn_id: str, principal: str | None) -> TurnView:
    """Read the turn. A waiting turn that is overdue (an interaction past its expiry, or a cancel
    that died before it settled the tree) is settled first, so nobody is shown a question that can no
    longer be answered."""
    tree = service.load(session_id, turn_id, principal)
    try:
        tree = settle_overdue(service, tree)
    except StaleCommitError:
        logger.info("turn_id=<%s> | settling raced another change", tree.root.turn_id)
        tree = service.load(session_id, turn_id)
    return TurnView.of(tree, turn_id)

"""get-turn: a turn's status, output, interactions with their detail, and child turns."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resumable.exceptions import StaleCommitError
from resumable.service.access import load
from resumable.service.advancing.continuation import continue_later
from resumable.service.advancing.settlement import settle_if_stalled
from resumable.service.advancing.stall import idle, stall
from resumable.service.caller import Caller
from resumable.service.views import TurnView
from resumable.store.records import TurnTree

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)


def get_turn(deps: Dependencies, session_id: str, turn_id: str, caller: Caller | None) -> TurnView:
    """Read the turn. A stalled turn that settling moves on (an interaction past its expiry, a cancel
    that died before it settled the tree) is settled first, so nobody is shown a question that can no
    longer be answered; one that needs a run (its continuation or resume was lost, its runner died)
    gets a continuation requested, so polling it is enough to move it on. A question its approval
    rule denies at its expiry is denied here, and the turn's continuation requested at once."""
    tree = load(deps, session_id, turn_id, caller)
    read = tree
    try:
        tree = settle_if_stalled(deps, tree)
    except StaleCommitError:
        logger.info("turn_id=<%s> | settling raced another change", tree.root.turn_id)
        tree = read = load(deps, session_id, turn_id)  # (as another change left it: nothing settled here)
    denied_at_expiry = tree is not read and not tree.root.settled and stall(tree, deps.clock.now()) is not None
    if denied_at_expiry or _needs_continuation(tree, deps.clock.now(), deps.settings.stall_seconds):
        continue_later(deps, tree.root)
    return TurnView.of(tree, turn_id)


def _needs_continuation(tree: TurnTree, now: float, stall_seconds: float) -> bool:
    """A runner that is gone needs one now; a checkpointed or fully answered turn once nobody took it
    up for ``stall_seconds`` (so polling a turn that is about to move does not duplicate it), unless
    it waits because something is wrong (its ``error`` says what: a continuation would loop)."""
    why = stall(tree, now)
    if why == "runner_gone":
        return True
    if why == "checkpointed":
        return idle(tree, now, stall_seconds)
    return why == "answered_unresumed" and tree.root.error is None and idle(tree, now, stall_seconds)

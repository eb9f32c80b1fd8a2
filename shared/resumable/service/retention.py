"""Retention: how long records are kept, and the snapshots that go with them.

A root turn that settles gives itself and every item of its tree (child turns, interactions, the
action journal's entries) a ``purge_at``: ``RETENTION_DAYS`` after it settled. The session it frees
gets one too (its retention counts from its last turn's settling); a turn that begins takes it away
again. DynamoDB's TTL deletes each item once its ``purge_at`` has passed (within a few days of it);
every reader treats a record past it as gone at once (404; not listed), and its session id may start
a new session. Nothing unsettled ever expires: an unsettled turn's items, its journal entries and a
session with an active turn carry no ``purge_at``.

The settling commit gives the tree's other items their ``purge_at`` when they fit in its last
transaction (the one that settles the root: never a turn that did not settle). At the root's
``purge_at`` the sweeper finds it in its index, claims it (``retiring``: from then nothing brings it
back), gives the tree's items the root's ``purge_at`` where they lack it, and retires (tags for the
bucket's lifecycle, or gives an expiry) each snapshot it pointed at that no record still within its
retention points at.
A deleted session's records expire ``RETENTION_DAYS`` after the deletion (see service.sessions.deletion), so
a restore finds every snapshot still there.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resumable.exceptions import AwsError
from resumable.metrics import count

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)


def retire(deps: Dependencies, keys: list[str]) -> None:
    """Retire ``keys`` (tag them for the bucket's lifecycle; give those kept as items of the table an
    expiry). Best effort: a snapshot left unretired is only kept longer."""
    if not keys:
        return
    try:
        deps.snapshots.retire(keys, deps.clock.now())
    except AwsError as error:
        logger.warning("snapshots %s were not retired (they are kept): %s", keys, error)


def purge_time(deps: Dependencies, now: float) -> float:
    """When the retention of a record that settles (or is deleted) at ``now`` ends."""
    return now + deps.settings.retention_seconds


def expire(deps: Dependencies, now: float, limit: int) -> int:
    """Retire the snapshots of up to ``limit`` records whose retention ended by ``now`` (those no
    record within its retention points at), and take them out of the sweeper's index; how many."""
    done = 0
    for expiring in deps.store.due_expiries(now, limit):
        if not deps.store.claim_expiry(expiring, now):
            continue  # brought back (a turn began, a restore) since it was read: not due any more
        deps.store.expire_tree(expiring)
        orphaned = sorted(expiring.snapshots - deps.store.live_snapshots(expiring.session_id, now))
        retire(deps, orphaned)
        if deps.store.forget_expiry(expiring):
            done += 1
            count("RecordsExpired", Record="turn" if expiring.turn_id else "session")
            logger.info(
                "session_id=<%s>, turn_id=<%s>, retired=<%d> | retention ended: snapshots retired",
                expiring.session_id,
                expiring.turn_id,
                len(orphaned),
            )
    return done

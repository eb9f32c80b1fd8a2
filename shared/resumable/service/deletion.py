"""delete-session and restore-session: a conversation deleted as its owner expects, and brought back.

Delete cancels the session's active work (the tree-wide cancel), then marks every record of the
session (the session, every turn and child turn, every interaction, the action journal's entries,
and so the snapshots they point at) with one deletion generation, in one commit. From then nothing of
it shows: its turns and interactions 404, it is in nobody's inbox, and no event of it is published
after the ``Session Deleted`` event the deletion itself writes. Until its retention ends
(``RETENTION_DAYS`` after the deletion) restore brings the exact tree back; then retention purges it.

Deleting twice, restoring twice, or deleting while an answer arrives each end in one state: a second
delete (or restore) finds it done and returns the same; an answer either lands before the cancel (its
resume is canceled with the turn) or is refused after it (410, then 404).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resumable.exceptions import NotFoundError, TurnBusyError
from resumable.service.access import may_act_for
from resumable.service.cancel import cancel
from resumable.service.ids import valid_session_id
from resumable.service.retention import purge_time
from resumable.service.views import SessionView
from resumable.store.outbox import session_deleted, session_restored
from resumable.store.records import SessionRecord

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)

_ATTEMPTS = 5


def delete_session(deps: Dependencies, session_id: str, principal: str | None) -> SessionView:
    """Cancel the session's active turn (if any), then mark the whole session deleted (see the module)."""
    for _ in range(_ATTEMPTS):
        session = _session(deps, session_id, principal, "deleted")
        if session.deleted:
            return SessionView.of(session)  # deleting again changes nothing
        if session.active_turn_id is not None:
            canceled = cancel(deps, session_id, session.active_turn_id, principal)
            if canceled.status in ("running", "waiting"):
                raise TurnBusyError(
                    f"session {session_id!r}'s turn {canceled.turn_id} is being canceled: its runner stops at its next "
                    "step boundary. Nothing was deleted yet: ask again in a few seconds"
                )
            continue  # the turn settled: read the session again
        now = deps.clock.now()
        generation, by = session.deletions + 1, principal or "application"
        purge_at = purge_time(deps, now)
        event = session_deleted(generation, by, now, purge_at)
        if deps.store.mark_deleted(session, generation, now, purge_at, by, event):
            logger.info("session_id=<%s>, generation=<%d> | session deleted by %s", session_id, generation, by)
            return SessionView.of(
                session.model_copy(
                    update={
                        "deletions": generation,
                        "deleted_generation": generation,
                        "deleted_at": now,
                        "deleted_by": by,
                        "purge_at": purge_at,
                    }
                )
            )
    raise TurnBusyError(
        f"session {session_id!r} kept changing while it was being deleted (turns beginning?): nothing was deleted; "
        "ask again"
    )


def restore_session(deps: Dependencies, session_id: str, principal: str | None) -> SessionView:
    """Bring a deleted session back, exactly as it was, while its retention lasts."""
    for _ in range(_ATTEMPTS):
        session = _session(deps, session_id, principal, "restored")
        if not session.deleted:
            return SessionView.of(session)  # restoring again changes nothing
        now = deps.clock.now()
        generation, by = session.deleted_generation or 0, principal or "application"
        purge_at = purge_time(deps, now)
        if deps.store.mark_deleted(session, None, now, purge_at, by, session_restored(generation, by, now)):
            logger.info("session_id=<%s>, generation=<%d> | session restored by %s", session_id, generation, by)
            return SessionView.of(
                session.model_copy(
                    update={"deleted_generation": None, "deleted_at": None, "deleted_by": None, "purge_at": purge_at}
                )
            )
    raise TurnBusyError(
        f"session {session_id!r} kept changing while it was being restored: nothing was restored; ask again"
    )


def _session(deps: Dependencies, session_id: str, principal: str | None, what: str) -> SessionRecord:
    """The session, or 404: unknown, another principal's, or past its retention (gone)."""
    session = deps.store.get_session(session_id) if valid_session_id(session_id) else None
    if (
        session is None
        or session.expired(deps.clock.now())
        or not may_act_for(deps.settings, session.principal, principal)
    ):
        raise NotFoundError(f"there is no session {session_id!r}; nothing was {what}")
    return session

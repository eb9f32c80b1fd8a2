"""delete-session and restore-session: a conversation deleted as its owner expects, and brought back.

Delete cancels the session's active work (the tree-wide cancel), then marks every record of the
session (the session, every turn and child turn, every interaction, the action journal's entries,
and so the snapshots they point at) with one deletion generation, in one commit (store.deletion: the
session first, so that no turn can begin, its items, then the session done). From then nothing of
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
from resumable.service.access import is_approver, may_act_for
from resumable.service.advancing.cancel import cancel
from resumable.service.caller import Caller, identity_of
from resumable.service.ids import valid_session_id
from resumable.service.retention import purge_time
from resumable.service.views import SessionView
from resumable.store.outbox import session_deleted, session_restored
from resumable.store.records import SessionRecord

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)

_ATTEMPTS = 5


def delete_session(deps: Dependencies, session_id: str, caller: Caller | None) -> SessionView:
    """Cancel the session's active turn (if any), then mark the whole session deleted (see the module).
    A deletion cut short (an AWS failure between its steps) is finished by asking again."""
    for _ in range(_ATTEMPTS):
        session = _session(deps, session_id, caller, "deleted")
        if session.deleted and not session.deleting:
            return SessionView.of(session)  # deleting again changes nothing
        if not session.deleted and session.active_turn_id is not None:
            try:
                canceled = cancel(deps, session_id, session.active_turn_id, caller)
            except NotFoundError:
                continue  # another deletion took the turn since the session was read: read it again
            if canceled.status in ("running", "waiting"):
                raise TurnBusyError(
                    f"session {session_id!r}'s turn {canceled.turn_id} is being run: it was told to cancel, and "
                    "stops at its next step boundary (that cancel stands). Nothing was deleted yet: ask again in a "
                    "few seconds"
                )
            continue  # the turn settled: read the session again
        by = identity_of(caller)
        if not session.deleted:
            generation, now = session.deletions + 1, deps.clock.now()
            if not deps.store.begin_deletion(session, generation, now, by):
                continue  # it changed since it was read: decide again
            session = session.model_copy(
                update={
                    "deletions": generation,
                    "deleted_generation": generation,
                    "deleted_at": now,
                    "deleted_by": by,
                    "deleting": True,
                }
            )
        generation = session.deleted_generation or 0
        purge_at = purge_time(deps, session.deleted_at or deps.clock.now())
        if not deps.store.mark_items(session_id, generation, True, purge_at, deps.clock.now()):
            continue
        event = session_deleted(generation, session.deleted_by or by, session.deleted_at or 0.0, purge_at)
        if deps.store.end_deletion(session, generation, purge_at, event):
            logger.info("session_id=<%s>, generation=<%d> | session deleted by %s", session_id, generation, by)
            return SessionView.of(session.model_copy(update={"deleting": False, "purge_at": purge_at}))
    raise TurnBusyError(
        f"session {session_id!r} kept changing while it was being deleted (turns beginning, or a restore?): it "
        "may be deleted in part (its turns unreadable); ask again to finish the deletion, or restore it"
    )


def restore_session(deps: Dependencies, session_id: str, caller: Caller | None) -> SessionView:
    """Bring a deleted session back, exactly as it was, while its retention lasts (a deletion cut short
    too: what it marked is unmarked)."""
    for _ in range(_ATTEMPTS):
        session = _session(deps, session_id, caller, "restored")
        if not session.deleted:
            return SessionView.of(session)  # restoring again changes nothing
        now = deps.clock.now()
        generation, by = session.deleted_generation or 0, identity_of(caller)
        purge_at = purge_time(deps, now)
        if not deps.store.mark_items(session_id, generation, False, purge_at, now):
            continue
        if deps.store.end_restore(session, generation, now, purge_at, session_restored(generation, by, now)):
            logger.info("session_id=<%s>, generation=<%d> | session restored by %s", session_id, generation, by)
            return SessionView.of(
                session.model_copy(
                    update={
                        "deleted_generation": None,
                        "deleted_at": None,
                        "deleted_by": None,
                        "deleting": False,
                        "purge_at": purge_at,
                    }
                )
            )
    raise TurnBusyError(
        f"session {session_id!r} kept changing while it was being restored: it may be restored in part; ask again"
    )


def _session(deps: Dependencies, session_id: str, caller: Caller | None, what: str) -> SessionRecord:
    """The session, or 404: unknown, another principal's, or past its retention (gone)."""
    session = deps.store.get_session(session_id) if valid_session_id(session_id) else None
    if (
        session is None
        or session.expired(deps.clock.now())
        or not may_act_for(deps.settings, session.principal, caller)
        # A session the application started (a workflow's) is anyone's to read and answer, not to delete.
        or (session.principal is None and caller is not None and not is_approver(deps.settings, caller))
    ):
        raise NotFoundError(f"there is no session {session_id!r}; nothing was {what}")
    return session

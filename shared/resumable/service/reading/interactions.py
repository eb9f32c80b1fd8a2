"""list-interactions: a session's interactions, oldest first, optionally by status."""

from __future__ import annotations

from resumable.exceptions import NotFoundError
from resumable.service.access import may_act_for
from resumable.service.caller import Caller
from resumable.service.dependencies import Dependencies
from resumable.service.ids import valid_session_id
from resumable.service.views import InteractionView
from resumable.store.records import InteractionStatus, expired


def list_interactions(
    deps: Dependencies, session_id: str, status: InteractionStatus | None, caller: Caller | None
) -> list[InteractionView]:
    """With ``status``, only those in it (an interaction past its expiry counts as ``expired`` even
    before its turn is settled). An unknown session and another principal's answer 404 alike."""
    missing = NotFoundError(f"there is no session {session_id!r}; nothing was done")
    if not valid_session_id(session_id):
        raise missing
    now = deps.clock.now()
    found = deps.store.list_interactions(session_id, status)
    if status == "expired":
        found += deps.store.list_interactions(session_id, "requested")
    found = [i for i in found if not expired(i.purge_at, now) and i.deleted_generation is None]  # gone
    if not all(may_act_for(deps.settings, i.principal, caller) for i in found):
        raise missing
    if not found:
        # Nothing listed says whose session it is: read it, so that an unknown session and another
        # principal's look the same (404), and only its principal (or an approver) sees it empty.
        session = deps.store.get_session(session_id)
        if (
            session is None
            or session.expired(now)
            or session.deleted
            or not may_act_for(deps.settings, session.principal, caller)
        ):
            raise missing
    views = [InteractionView.of(i, now) for i in found]
    return [v for v in views if status is None or v.status == status]

"""list-interactions: a session's interactions, oldest first, optionally by status; and one question by
its request id alone."""

from __future__ import annotations

from resumable.exceptions import NotFoundError
from resumable.service.access import may_act_for
from resumable.service.caller import Caller
from resumable.service.dependencies import Dependencies
from resumable.service.ids import valid_request_id, valid_session_id
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


def show_interaction(deps: Dependencies, request_id: str, caller: Caller | None) -> InteractionView:
    """The question ``request_id`` names, whatever its session and status, as ``caller`` sees it (with
    ``startedByYou``, ``approvedByYou`` and ``dismissedByYou``): to its session's principal, an approver,
    and the principal who started its turn. Unknown, not theirs, deleted or past its retention: 404
    alike (the index lists a question a moment after it is asked, so one just asked may 404 once)."""
    missing = NotFoundError(  # (the id is not repeated: a made-up one may be long, and says nothing back)
        "there is no question with that request id that you may see (one asked a moment ago may not be listed "
        "yet: ask again); nothing was done"
    )
    if not valid_request_id(request_id):
        raise missing
    found = deps.store.find_interaction(request_id)
    now = deps.clock.now()
    if found is None or expired(found.purge_at, now) or found.deleted_generation is not None:
        raise missing
    if not may_act_for(deps.settings, found.principal, caller):  # (who started a turn may act for its session)
        raise missing
    who = caller.identity if caller is not None else None
    return InteractionView.of(found, now).model_copy(
        update={
            "started_by_you": who is not None and found.started_by == who,
            "approved_by_you": who is not None and who in found.votes,
            "dismissed_by_you": who is not None and who in found.dismissed_by,
        }
    )

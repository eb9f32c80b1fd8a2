"""inbox: the open questions a principal may answer, across sessions, most urgent first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from resumable.exceptions import ValidationFailedError
from resumable.service import cursor
from resumable.service.access import is_approver
from resumable.service.views import InteractionView, View

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

DEFAULT_PAGE = 50
MAX_PAGE = 200


class InboxPage(View):
    interactions: list[InteractionView]
    cursor: str | None = Field(description="Send it back for the next page; null on the last page.")


def inbox(deps: Dependencies, principal: str | None, status: str, limit: int, after: str | None) -> InboxPage:
    """One page of the requested interactions, not yet expired, that ``principal`` may answer: every
    session's for an approver (and the application itself), their own sessions' for anyone else.
    One Query of an index, whatever the number of sessions."""
    if status != "requested":
        raise ValidationFailedError(
            f"query parameter 'status' is {status!r}: the inbox lists requested interactions only (a session's "
            "others are at GET /sessions/{sessionId}/interactions?status=...); nothing was listed"
        )
    if not 1 <= limit <= MAX_PAGE:
        raise ValidationFailedError(
            f"query parameter 'limit' is {limit}: it must be 1 to {MAX_PAGE} (default {DEFAULT_PAGE}); "
            "nothing was listed"
        )
    whose = None if principal is None or is_approver(deps.settings, principal) else principal
    index, partition = deps.store.inbox_partition(whose)
    secret = deps.settings.cursor_secret
    start = cursor.read(after, partition, index, secret) if after is not None else None
    now = deps.clock.now()
    found, last = deps.store.list_inbox(whose, now, limit, start)
    return InboxPage(
        interactions=[InteractionView.of(i, now) for i in found],
        cursor=cursor.issue(last, partition, secret) if last else None,
    )

"""inbox: the open questions a principal may answer, across sessions, most urgent first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from resumable.exceptions import ValidationFailedError
from resumable.service import cursor
from resumable.service.access import is_approver, may_answer, rule_of
from resumable.service.caller import Caller, identity_of
from resumable.service.views import InteractionView, View
from resumable.store.records import InteractionRecord

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

DEFAULT_PAGE = 50
MAX_PAGE = 200
MAX_READS = 3
"""The most index reads one page makes when the reader may not answer what they find (a shorter page,
with a cursor, then says there is more)."""


class InboxPage(View):
    interactions: list[InteractionView]
    cursor: str | None = Field(description="Send it back for the next page; null on the last page.")


def inbox(
    deps: Dependencies,
    caller: Caller | None,
    status: str,
    limit: int,
    after: str | None,
    dismissed: bool = False,
    started: bool = False,
) -> InboxPage:
    """One page of the requested interactions, not yet expired, that ``caller`` may answer: every
    session's for an approver (and the application itself), their own sessions' for anyone else;
    those they dismissed only with ``dismissed``. One Query of an index, whatever the number of
    sessions. ``started``: instead, the questions of the turns ``caller`` started (``started_by_you``),
    read from the same index: those waiting for others, which they may deny (withdraw) or whose turn
    they may cancel, whether or not they may approve them, and whether or not they dismissed them
    (``dismissed`` changes nothing there)."""
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
    whose = None if caller is None or is_approver(deps.settings, caller) else caller.identity
    index, partition = deps.store.inbox_partition(whose)
    listing = partition + ("\nstarted" if started else "")  # (a cursor of one listing is refused by the other)
    secret = deps.keys.cursor()
    last = (
        _place(cursor.read(after, listing, secret, shapes=_cursor_shapes(index), listing="this inbox"), index)
        if after is not None
        else None
    )
    now = deps.clock.now()
    shown: list[InteractionView] = []
    for _ in range(MAX_READS):  # questions the reader may not answer are left out: read on to fill the page
        found, last = deps.store.list_inbox(whose, now, limit - len(shown), last)
        for interaction in found:
            view = (
                _started_by(interaction, caller, now) if started else _for_reader(interaction, caller, now, dismissed)
            )
            if view is not None:
                shown.append(view)
        if last is None or len(shown) == limit:
            break
    return InboxPage(interactions=shown, cursor=cursor.issue({"after": {"S": last}}, listing, secret) if last else None)


def _cursor_shapes(index: str) -> list[frozenset[str]]:
    """A cursor holds the place in the inbox's order after which its page starts; one issued before the
    inbox was sharded holds the key DynamoDB's Query ended at, the place among it."""
    return [frozenset({"after"}), frozenset({"pk", "sk", f"{index}pk", f"{index}sk"})]


def _place(held: dict[str, Any], index: str) -> str:
    return str(held["after"]["S"] if "after" in held else held[f"{index}sk"]["S"])


def _started_by(interaction: InteractionRecord, caller: Caller | None, now: float) -> InteractionView | None:
    """The question if ``caller`` started its turn (with ``started_by_you``, and ``approved_by_you`` where
    a rule lets them approve their own and they did), else None."""
    if caller is None or interaction.started_by != caller.identity:
        return None
    view = InteractionView.of(interaction, now)
    return view.model_copy(update={"started_by_you": True, "approved_by_you": caller.identity in interaction.votes})


def _for_reader(
    interaction: InteractionRecord, caller: Caller | None, now: float, dismissed: bool
) -> InteractionView | None:
    """The question as ``caller`` sees it in its inbox, or None when it is not theirs to answer: its
    approval rule does not let them approve it (they are not among its approvers, or they started the
    turn and may not approve their own), or they dismissed it (unless ``dismissed`` asks for those
    too). One they approved already stays, showing who else must."""
    view = InteractionView.of(interaction, now)
    if identity_of(caller) in interaction.dismissed_by:
        if not dismissed:
            return None
        view = view.model_copy(update={"dismissed_by_you": True})
    rule = rule_of(interaction)
    if rule is None or caller is None:
        return view
    if caller.identity in interaction.votes:
        return view.model_copy(update={"approved_by_you": True})
    return view if may_answer(rule, interaction, caller) is None else None

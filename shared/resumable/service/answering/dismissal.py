"""dismiss: an approver who will not answer a question hides it from their own inbox; it stays open for
everyone else (and comes back for them with ``dismissed: false``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from resumable.exceptions import ConflictError, GoneError, NotFoundError, ValidationFailedError
from resumable.service.access import visible
from resumable.service.caller import Caller, identity_of
from resumable.service.ids import root_of, valid_request_id, valid_session_id, valid_turn_id
from resumable.service.views import InteractionView

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

MAX_DISMISSALS = 100
"""The most people one question keeps as having dismissed it (each is stored on it)."""
_ATTEMPTS = 5


def dismiss(
    deps: Dependencies,
    session_id: str,
    turn_id: str,
    request_id: str,
    caller: Caller | None,
    dismissed: bool = True,
) -> InteractionView:
    """Hide the requested interaction from ``caller``'s inbox (``dismissed``), or show it again. It
    answers nothing: the question waits for others as before, and its expiry still settles it."""
    missing = NotFoundError(
        f"there is no interaction {request_id!r} in turn {turn_id!r} of session {session_id!r} you may see; "
        "nothing was dismissed"
    )
    if not (valid_session_id(session_id) and valid_turn_id(turn_id) and valid_request_id(request_id)):
        raise missing
    who = identity_of(caller)
    root_id = root_of(turn_id)
    for _ in range(_ATTEMPTS):  # each refusal is someone else dismissing it at the same moment
        interaction = deps.store.get_interaction(session_id, root_id, request_id)
        now = deps.clock.now()
        if interaction is None or not visible(deps, interaction, turn_id, caller):
            raise missing
        if interaction.status != "requested" or interaction.expires_at <= now:
            state = "expired" if interaction.status == "requested" else interaction.status
            raise GoneError(
                f"interaction {request_id} is no longer waiting ({state}): there is nothing to dismiss; "
                "nothing was changed"
            )
        listed = [p for p in interaction.dismissed_by if p != who]
        wanted = [*listed, who] if dismissed else listed
        if wanted == interaction.dismissed_by:
            break  # (as asked already: nothing to write)
        if len(wanted) > MAX_DISMISSALS:
            raise ValidationFailedError(
                f"interaction {request_id} was dismissed by {MAX_DISMISSALS} people already, the most it keeps: it "
                "stays in your inbox; answer it, or leave it to expire"
            )
        if deps.store.set_dismissed(interaction, wanted, now):
            interaction = interaction.model_copy(update={"dismissed_by": wanted, "updated_at": now})
            break
    else:
        raise ConflictError(
            f"interaction {request_id} kept changing while it was dismissed (others dismissing it too): nothing was "
            "changed; retry"
        )
    view = InteractionView.of(interaction, now)
    return view.model_copy(update={"dismissed_by_you": who in interaction.dismissed_by})

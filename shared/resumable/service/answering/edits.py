"""An approval that edits the tool's input: checked against the tool's input schema before the answer
is recorded, so that nothing is written for an edit the tool could not take."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from resumable.exceptions import NotFoundError, ValidationFailedError
from resumable.runtime.interrupts import APPROVAL_INTERRUPT
from resumable.runtime.schema import schema_problem
from resumable.service.access import may_act_for
from resumable.service.caller import Caller
from resumable.store.records import InteractionRecord

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies


def check_edit(
    deps: Dependencies,
    interaction: InteractionRecord,
    turn_id: str,
    decision: str,
    edited: dict[str, Any],
    caller: Caller | None,
    missing: NotFoundError,
) -> None:
    """Refuse (422) an edited input for an approval whose tool does not allow edits, one that denies,
    or one that does not match the tool's input schema; 404 as for any answer if the interaction is
    not the caller's. An interaction that is not a requested approval is left to the answer's own
    checks (another interrupt takes any JSON; a settled one is refused as 409 or 410)."""
    request_id = interaction.request_id
    if turn_id not in (interaction.root_turn_id, interaction.turn_id) or not may_act_for(
        deps.settings, interaction.principal, caller
    ):
        raise missing
    if interaction.name != APPROVAL_INTERRUPT or interaction.status != "requested":
        return  # another interrupt's answer is any JSON; a settled interaction's answer is refused as always
    tool = interaction.reason.get("tool") if isinstance(interaction.reason, dict) else None
    if decision != "approve":
        raise ValidationFailedError(
            f"an edited input approves the call: send 'decision': 'approve' with 'input' (or deny without it); "
            f"interaction {request_id} was not answered"
        )
    if not interaction.editable or interaction.input_schema is None:
        raise ValidationFailedError(
            f"interaction {request_id} asks to approve {tool or interaction.name!r} as it is: its input may not be "
            "edited. Approve or deny it without 'input'; nothing was answered"
        )
    problem = schema_problem(edited, interaction.input_schema)
    if problem is not None:
        raise ValidationFailedError(
            f"the edited input does not fit the input of {tool!r}: {problem}; nothing was answered"
        )

"""An approval that edits the tool's input: checked against the tool's input schema before the answer
is recorded, so that nothing is written for an edit the tool could not take."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from resumable.exceptions import NotFoundError, ValidationFailedError
from resumable.service.access import may_act_for

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies


def check_edit(
    deps: Dependencies,
    session_id: str,
    root_id: str,
    turn_id: str,
    request_id: str,
    edited: dict[str, Any],
    principal: str | None,
    missing: NotFoundError,
) -> None:
    """Refuse (422) an edited input for an interaction whose tool does not allow edits, or that does
    not match the tool's input schema; 404 as for any answer if the interaction is not the caller's."""
    interaction = deps.store.get_interaction(session_id, root_id, request_id)
    if (
        interaction is None
        or turn_id not in (root_id, interaction.turn_id)
        or not may_act_for(deps.settings, interaction.principal, principal)
    ):
        raise missing
    tool = interaction.reason.get("tool") if isinstance(interaction.reason, dict) else None
    if not interaction.editable:
        raise ValidationFailedError(
            f"interaction {request_id} asks to approve {tool or interaction.name!r} as it is: its input may not be "
            "edited. Approve or deny it without 'input'; nothing was answered"
        )
    import jsonschema  # type: ignore[import-untyped]  # only an edit pays for its import (no stubs pinned)

    try:
        jsonschema.validate(edited, interaction.input_schema or {})
    except jsonschema.ValidationError as error:
        where = "/".join(str(p) for p in error.absolute_path) or "the input"
        raise ValidationFailedError(
            f"the edited input does not fit the input of {tool!r}: at {where}: {error.message}; nothing was answered"
        ) from error
    except jsonschema.SchemaError as error:
        raise ValidationFailedError(
            f"the edited input cannot be checked: the input schema {tool!r} declared is not valid ({error.message}); "
            "nothing was answered"
        ) from error

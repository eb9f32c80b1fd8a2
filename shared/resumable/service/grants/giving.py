"""The grant an approval carries (``{"response": {"decision": "approve"}, "grant": {...}}``), checked
against the rule its question was asked under, as the record written with the approval."""

from __future__ import annotations

import fnmatch
import hashlib
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from resumable.clock import iso
from resumable.exceptions import GrantRefusedError, ValidationFailedError
from resumable.runtime.rules import ApprovalRule, GrantScope, riskier, seconds_of
from resumable.store.grants import KEPT_AFTER_END
from resumable.store.records import GrantRecord, InteractionRecord

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

MAX_INPUT_PATTERNS = 20
"""The most input fields a grant may name."""
Field_ = Annotated[str, Field(min_length=1, max_length=64)]
Pattern = Annotated[str, Field(min_length=1, max_length=256)]


class GrantRequest(BaseModel):
    """What an approver asks to grant with an approval: the ``scope`` (``session``: this session;
    ``principal``: every session of this session's principal), how long (``for``: seconds, or ``'30m'``,
    ``'8h'``, ``'2d'``) and, optionally, only ``inputs`` whose named fields match ``fnmatch`` patterns
    (``{"table": "orders", "id": "A-*"}``; a field not named may hold anything)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False)

    scope: GrantScope = "session"
    seconds: float = Field(alias="for", gt=0)
    inputs: dict[Field_, Pattern] | None = Field(default=None, min_length=1, max_length=MAX_INPUT_PATTERNS)

    @field_validator("seconds", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return seconds_of(value)


def grant_request(body: Any) -> GrantRequest:
    """``body``'s grant, or a 422 saying what is wrong with it (nothing was answered)."""
    try:
        return GrantRequest.model_validate(body)
    except (ValidationError, ValueError) as error:
        problems = (
            "; ".join(
                f"{'.'.join(str(p) for p in e['loc'] if p != '[key]') or 'grant'}: "
                + str(e["msg"]).removeprefix("Value error, ")
                for e in error.errors()
            )
            if isinstance(error, ValidationError)
            else str(error)
        )
        raise ValidationFailedError(
            f'the grant is not one ({problems}): give {{"scope": "session" (or "principal"), "for": "1h", '
            '"inputs": {"field": "pattern"}} (inputs optional); nothing was answered'
        ) from None


def lasting(seconds: float) -> str:
    """``seconds`` as people say a grant's length: ``2 d``, ``8 h``, ``30 min``, ``90 s``."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g} {unit}"
    return f"{seconds:g} s"


def grant_id(request_id: str) -> str:
    """The grant an approval of ``request_id`` gives: one id, however often the approval is sent."""
    return "g" + hashlib.sha256(f"grant\n{request_id}".encode()).hexdigest()[:24]


def given(
    deps: Dependencies,
    interaction: InteractionRecord,
    rule: ApprovalRule | None,
    response: dict[str, Any],
    wanted: GrantRequest,
    by: str,
    now: float,
) -> GrantRecord:
    """The grant ``by``'s approval of ``interaction`` gives, or a 403 naming what its rule does not allow."""
    where = f"interaction {interaction.request_id}"
    nothing = "; nothing was answered"
    if response.get("decision") != "approve":
        raise ValidationFailedError(f"a grant goes with an approval, not a deny{nothing}")
    if rule is None or rule.grants is None:
        named = f"its approval rule {rule.title!r} does not allow grants" if rule else "it has no approval rule"
        raise GrantRefusedError(f"{where} cannot carry a grant: {named} (a rule's 'grants' field allows them){nothing}")
    allowed = rule.grants
    if rule.required >= 2:  # (a rule refuses this; a question asked under an older one could still say it)
        raise GrantRefusedError(
            f"{where} needs {rule.required} approvals under {rule.title!r}: one approver's grant cannot stand for "
            f"later calls that take several{nothing}"
        )
    if wanted.scope not in allowed.scopes:
        raise GrantRefusedError(
            f"the rule {rule.title!r} allows grants for {' or '.join(allowed.scopes)}, not {wanted.scope!r}{nothing}"
        )
    if wanted.seconds > allowed.max:
        raise GrantRefusedError(
            f"the rule {rule.title!r} allows grants of at most {allowed.max:g} s, not {wanted.seconds:g} s{nothing}"
        )
    reason = interaction.reason if isinstance(interaction.reason, dict) else {}
    if riskier(reason.get("risk"), rule.risk) == "destructive" and not allowed.destructive:
        raise GrantRefusedError(
            f"{where} is a destructive call, and the rule {rule.title!r} does not allow grants of destructive "
            f"calls{nothing}"
        )
    if wanted.scope == "principal" and interaction.principal is None:
        raise GrantRefusedError(
            f"{where} is in a session no principal started (the application's): grant it for the session{nothing}"
        )
    return GrantRecord(
        grant_id=grant_id(interaction.request_id),
        scope=wanted.scope,
        session_id=interaction.session_id,
        principal=interaction.principal,
        tool=str(reason.get("tool") or ""),
        rule=rule.title,
        inputs=wanted.inputs,
        granted_by=by,
        granted_at=now,
        expires_at=now + wanted.seconds,
        root_turn_id=interaction.root_turn_id,
        request_id=interaction.request_id,
        purge_at=now + wanted.seconds + KEPT_AFTER_END,
    )


def covers(grant: GrantRecord, tool: str, tool_input: Any, rule: ApprovalRule, now: float) -> bool:
    """Whether ``grant`` covers a call of ``tool`` with ``tool_input`` under ``rule`` at ``now``: live, the
    same tool, the same rule (as titled) as it allows grants now (the scope among its ``scopes``, given
    no longer ago than its ``max``: narrowing the rule narrows the grants given under it), and every
    named input field's value (text, or a number or boolean as its JSON) matching its pattern."""
    allowed = rule.grants
    if not grant.live(now) or grant.tool != tool or grant.rule != rule.title or allowed is None:
        return False
    if grant.scope not in allowed.scopes or grant.granted_at + allowed.max <= now:
        return False
    if not grant.inputs:
        return True
    if not isinstance(tool_input, dict):
        return False
    for name, pattern in grant.inputs.items():
        held = tool_input.get(name)
        if isinstance(held, bool):
            held = "true" if held else "false"
        elif isinstance(held, (int, float)):
            held = str(held)
        if not isinstance(held, str) or not fnmatch.fnmatchcase(held, pattern):
            return False
    return True


def audited(grant: GrantRecord) -> dict[str, Any]:
    """The grant as the audit trail names it beside an approval or a call."""
    return {
        "id": grant.grant_id,
        "scope": grant.scope,
        "by": grant.granted_by,
        "at": iso(grant.granted_at),
        "rule": grant.rule,
        "expiresAt": iso(grant.expires_at),
        **({"inputs": grant.inputs} if grant.inputs else {}),
    }

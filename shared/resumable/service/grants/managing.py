"""Listing and revoking standing grants (``GET /grants``, ``DELETE /grants/{grantId}``, ``resumable
grants``). An approver sees every grant; anyone else, the grants of their own sessions and the ones they
gave. A grant is revoked by its grantor or an approver, at once: every call whose journal entry begins
after the revoke commits asks a person again (docs/approval-rules.md#standing-grants)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from resumable.clock import iso
from resumable.exceptions import ForbiddenError, NotFoundError
from resumable.service.access import is_approver
from resumable.service.audit.entries import authentication_of, revoke_entry
from resumable.service.caller import Caller, identity_of
from resumable.service.views import View
from resumable.store.records import GrantRecord

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

GrantStatus = Literal["live", "revoked", "expired"]
VALID_GRANT_ID = re.compile(r"^g[0-9a-f]{24}$")


class GrantView(View):
    """A standing grant: which tool's calls it lets run without a question, where, until when, and who gave it."""

    grant_id: str
    status: GrantStatus = Field(description="live, revoked, or expired (kept a week after it ended).")
    tool: str
    rule: str = Field(description="The approval rule it was given under: it covers calls under that rule only.")
    scope: Literal["session", "principal"] = Field(
        description="session: the session it was given in; principal: every session of that session's principal."
    )
    session_id: str
    principal: str | None = Field(description="Whose session it was given in (null: the application's).")
    inputs: dict[str, str] | None = Field(description="Only calls whose named input fields match these patterns.")
    granted_by: str
    granted_at: str
    expires_at: str
    request_id: str = Field(description="The question whose approval gave it.")
    revoked_by: str | None = None
    revoked_at: str | None = None
    yours: bool = Field(description="Whether you gave it.")
    may_revoke: bool = Field(description="Whether you may revoke it (its grantor, or an approver).")

    @classmethod
    def of(cls, grant: GrantRecord, now: float, caller: Caller | None, approver: bool) -> GrantView:
        status: GrantStatus = "revoked" if grant.revoked_at is not None else "live" if grant.live(now) else "expired"
        yours = grant.granted_by == identity_of(caller)
        return cls(
            grant_id=grant.grant_id,
            status=status,
            tool=grant.tool,
            rule=grant.rule,
            scope=grant.scope,
            session_id=grant.session_id,
            principal=grant.principal,
            inputs=grant.inputs,
            granted_by=grant.granted_by,
            granted_at=iso(grant.granted_at) or "",
            expires_at=iso(grant.expires_at) or "",
            request_id=grant.request_id,
            revoked_by=grant.revoked_by,
            revoked_at=iso(grant.revoked_at),
            yours=yours,
            may_revoke=status == "live" and (yours or approver),
        )


class GrantList(View):
    grants: list[GrantView]


def _visible(grant: GrantRecord, caller: Caller | None, approver: bool) -> bool:
    return approver or caller is None or caller.identity in (grant.principal, grant.granted_by)


def list_grants(deps: Dependencies, caller: Caller | None, status: Literal["live", "all"] = "live") -> GrantList:
    """The grants ``caller`` may see, oldest first: live ones, or (``all``) those revoked or expired too."""
    now = deps.clock.now()
    approver = caller is None or is_approver(deps.settings, caller)
    views = [GrantView.of(g, now, caller, approver) for g in deps.store.all_grants() if _visible(g, caller, approver)]
    return GrantList(grants=[v for v in views if status == "all" or v.status == "live"])


def revoke_grant(deps: Dependencies, grant_id: str, caller: Caller | None) -> GrantView:
    """Revoke the grant now (its grantor or an approver; 403 for anyone else who may see it, 404 for
    the rest); a grant revoked already is shown as it is."""
    approver = caller is None or is_approver(deps.settings, caller)
    found = (
        None
        if not VALID_GRANT_ID.match(grant_id)
        else next((g for g in deps.store.all_grants() if g.grant_id == grant_id), None)
    )
    if found is None or not _visible(found, caller, approver):
        raise NotFoundError(
            "there is no such grant that you may see (resumable grants lists them); nothing was revoked"
        )
    who = identity_of(caller)
    if not approver and found.granted_by != who:
        raise ForbiddenError(
            f"grant {grant_id} was given by {found.granted_by}: only they or an approver may revoke it; nothing was "
            "revoked"
        )
    now = deps.clock.now()
    if found.revoked_at is None:
        found = deps.store.revoke_grant(found, who, now, revoke_entry(deps, found, who, authentication_of(caller), now))
    return GrantView.of(found, deps.clock.now(), caller, approver)

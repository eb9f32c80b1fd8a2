"""Who a Slack user is here: the principal a configured mapping names, by the user's Slack id or by
the e-mail address Slack holds for them (asked with ``users.info``, only when the mapping has
addresses, and believed only as ``trusted_email`` allows). Only users of the configured workspaces
(teams) answer. A user the mapping does not name answers nothing, and is told so."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from resumable.service.caller import Caller


class LookupFailedError(Exception):
    """Slack could not say who the user is (``users.info`` failed): nothing is answered; press again."""


class People:
    def __init__(
        self,
        mapping: Mapping[str, str],
        teams: Collection[str],
        email_of: Callable[[str], str | None] | None = None,
    ) -> None:
        """``mapping``: Slack user id (``U...``) or e-mail address -> principal; ``teams``: the
        workspaces (team ids) whose users may answer; ``email_of``: the e-mail address Slack holds for
        a user id, or None (``trusted_email`` of its ``users.info``), raising ``LookupFailedError``
        when Slack could not say."""
        if not teams:
            raise ValueError("name the Slack workspaces (team ids) whose users may answer: none would let anyone's")
        self.by_id = {k: v for k, v in mapping.items() if "@" not in k}
        self.by_email = {k.lower(): v for k, v in mapping.items() if "@" in k}
        self.teams = frozenset(teams)
        self.email_of = email_of

    def caller(self, user_id: str, team_id: str | None, name: str | None = None) -> Caller | None:
        """The principal ``user_id`` of ``team_id`` answers as (its authentication says it was Slack),
        or None: another workspace's user, or one the mapping does not name."""
        if team_id not in self.teams:
            return None
        identity = self.by_id.get(user_id)
        if identity is None and self.by_email and self.email_of is not None:
            email = self.email_of(user_id)
            identity = self.by_email.get(email.lower()) if email else None
        if not identity:  # (a mapping to nobody, "", maps nobody)
            return None
        return Caller(identity, frozenset(), {"method": "slack", "user": user_id, "team": team_id}, name, via="slack")


def trusted_email(users_info: Mapping[str, Any], teams: Collection[str]) -> str | None:
    """The e-mail address a ``users.info`` reply holds, if it can stand for the person: a member of one
    of ``teams`` (not a guest from another organisation), neither deleted nor a bot, with the address
    confirmed. Otherwise None."""
    user = users_info.get("user") if users_info.get("ok") else None
    if not isinstance(user, Mapping) or user.get("team_id") not in teams:
        return None
    if user.get("deleted") or user.get("is_bot") or user.get("is_stranger") or not user.get("is_email_confirmed"):
        return None
    email = (user.get("profile") or {}).get("email")
    return email if isinstance(email, str) and "@" in email else None

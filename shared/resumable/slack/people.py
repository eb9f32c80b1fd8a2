"""Who a Slack user is here: the principal a configured mapping names, by the user's Slack id or by
the e-mail address Slack holds for them (asked with ``users.info``, only when the mapping has
addresses). A user the mapping does not name answers nothing, and is told so."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from resumable.service.access import Principal


class People:
    def __init__(self, mapping: Mapping[str, str], email_of: Callable[[str], str | None] | None = None) -> None:
        """``mapping``: Slack user id (``U...``) or e-mail address -> principal; ``email_of``: the
        e-mail address Slack holds for a user id (``users.info``), or None."""
        self.by_id = {k: v for k, v in mapping.items() if "@" not in k}
        self.by_email = {k.lower(): v for k, v in mapping.items() if "@" in k}
        self.email_of = email_of

    def principal(self, user_id: str, team_id: str | None, name: str | None = None) -> Principal | None:
        """The principal ``user_id`` answers as (its authentication says it was Slack), or None."""
        identity = self.by_id.get(user_id)
        if identity is None and self.by_email and self.email_of is not None:
            email = self.email_of(user_id)
            identity = self.by_email.get(email.lower()) if email else None
        if identity is None:
            return None
        authentication = {"method": "slack", "user": user_id, **({"team": team_id} if team_id else {})}
        return Principal(identity, (), authentication, name, via="slack")

"""Who calls a use case: a frozen ``Caller``, made once where the request comes in (the HTTP API's
authorizer, a press Slack signed, a decision link) and passed down typed. ``None`` in its place is the
application itself: a Step Functions task, recovery, a direct call."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

APPLICATION = "application"
"""Who answers when the application itself does (no caller): a Step Functions task, a direct call."""

MAX_NAME_CHARS = 200

VIAS = {
    "cli": "from the CLI",
    "page": "on the inbox page",
    "slack": "from Slack",
    "email": "from e-mail",
    "api": "through the API",
}
"""Where an answer came from, and how a message says so: ``slack`` and ``email`` as the service knows
them (a press Slack signed, a decision link), ``cli`` and ``page`` as the caller says
(``SAID_VIAS``, the ``X-Resumable-Via`` header), ``api`` otherwise."""
SAID_VIAS = ("cli", "page")


@dataclass(frozen=True, eq=False)
class Caller:
    """A caller: its ``identity`` (the principal: an IAM ARN, a sign-in token's subject, what sessions
    store, compare and log), the ``groups`` its token named (none for IAM: they only decide whether it
    approves), how it proved who it is (``authentication``: ``{"method": "iam", "arn": ...}``,
    ``{"method": "jwt", "subject": ..., "issuer": ...}``; what the audit trail records of each answer),
    the ``name`` its sign-in gave (shown, never trusted) and the channel it came ``via`` (``VIAS``)."""

    identity: str
    groups: frozenset[str] = frozenset()
    authentication: Mapping[str, str] = field(default_factory=dict, hash=False)
    name: str | None = None
    via: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.identity, str) or not self.identity:
            raise ValueError(f"a caller's identity is a non-empty string, not {self.identity!r}")
        groups: Iterable[str] = self.groups
        object.__setattr__(self, "groups", frozenset(groups))
        object.__setattr__(self, "authentication", dict(self.authentication))  # (its own copy)

    @classmethod
    def of(cls, caller: Caller | str | None) -> Caller | None:
        """``caller`` as a Caller: a bare principal (a script's, a test's) is one of its identity alone."""
        return cls(caller) if isinstance(caller, str) else caller

    @property
    def channel(self) -> str:
        """Where its request came from: ``cli``, ``page``, ``slack``, ``email``, or ``api``."""
        return self.via if self.via in VIAS else "api"

    @property
    def shown_name(self) -> str | None:
        """The name sign-in gave it, on one line and cut short, for approvers to read beside its
        identity; None for IAM and for a token that names nobody."""
        shown = " ".join(self.name.split())[:MAX_NAME_CHARS] if isinstance(self.name, str) else ""
        return shown or None

    def __str__(self) -> str:
        return self.identity

    def __eq__(self, other: object) -> bool:
        """Two callers are equal where every part is; a caller equals a bare principal (a string) that
        is its identity, as the records that keep only the identity compare it."""
        if isinstance(other, str):
            return self.identity == other
        if not isinstance(other, Caller):
            return NotImplemented
        parts = ("identity", "groups", "authentication", "name", "via")
        return all(getattr(self, part) == getattr(other, part) for part in parts)

    def __hash__(self) -> int:
        return hash(self.identity)  # (equal to its identity's: a caller and its principal find each other)


def identity_of(caller: Caller | None) -> str:
    """Who ``caller`` is, as records keep it: its identity, or ``application`` for the application."""
    return caller.identity if caller is not None else APPLICATION


def channel_of(caller: Caller | None) -> str:
    """Where ``caller``'s request came from (``Caller.channel``); the application's: ``api``."""
    return caller.channel if caller is not None else "api"


def principal_of(caller: Caller | None) -> str | None:
    """The principal a record keeps for ``caller``: its identity, or None for the application."""
    return caller.identity if caller is not None else None

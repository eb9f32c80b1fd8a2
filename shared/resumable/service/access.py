"""Who may see and act on a session: its principal, or an approver. Unknown and not-yours look the
same (404), so no principal learns whether another's session exists."""

from __future__ import annotations

import fnmatch

from resumable.config import Settings
from resumable.exceptions import NotFoundError
from resumable.service.dependencies import Dependencies
from resumable.service.ids import root_of, valid_session_id, valid_turn_id
from resumable.store.records import InteractionRecord, TurnTree, expired


class Principal(str):
    """A caller's identity, as the sessions it starts store it (an IAM ARN, or a sign-in token's
    subject), with the groups its token named (none for IAM) and how it proved it was so
    (``authentication``: ``{"method": "iam", "arn": ...}`` or ``{"method": "jwt", "subject": ...,
    "issuer": ...}``, what the audit trail records of each answer). It is a ``str``: stored, compared and
    logged as the identity alone; the groups only decide whether it is an approver, and ``name`` (a
    sign-in token's ``name`` or ``email``) is only shown, as is ``via`` (where the request came from:
    ``cli``, ``page``; what a later refusal tells the same person of their own answer)."""

    groups: frozenset[str]
    authentication: dict[str, str]
    name: str | None
    via: str | None

    def __new__(
        cls,
        identity: str,
        groups: frozenset[str] | tuple[str, ...] = (),
        authentication: dict[str, str] | None = None,
        name: str | None = None,
        via: str | None = None,
    ) -> Principal:
        made = super().__new__(cls, identity)
        made.groups = frozenset(groups)
        made.authentication = dict(authentication or {})
        made.name = name
        made.via = via
        return made


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


def via_of(principal: str | None) -> str:
    """Where ``principal``'s request came from: ``cli``, ``page``, ... or ``api``."""
    via = getattr(principal, "via", None)
    return via if via in VIAS else "api"


def name_of(principal: str | None) -> str | None:
    """The name sign-in gave ``principal`` (its token's ``name`` or ``email``), shown beside it to
    approvers; None for IAM and for a token that names nobody."""
    name = getattr(principal, "name", None)
    shown = " ".join(name.split())[:MAX_NAME_CHARS] if isinstance(name, str) else ""
    return shown or None  # (one line: a name with line breaks never reads as two rows of a listing)


def visible(deps: Dependencies, interaction: InteractionRecord, turn_id: str, principal: str | None) -> bool:
    """Whether ``principal`` may see the interaction, as asked through ``turn_id`` (its root turn, or
    the child turn that asked it): its session is theirs (or they approve), live and not deleted."""
    return (
        turn_id in (interaction.root_turn_id, interaction.turn_id)
        and may_act_for(deps.settings, interaction.principal, principal)
        and not expired(interaction.purge_at, deps.clock.now())
        and interaction.deleted_generation is None
    )


def is_approver(settings: Settings, principal: str) -> bool:
    """Whether ``principal`` matches one of the configured approver principals (``*`` wildcards), or
    its token names one of the approver groups."""
    groups: frozenset[str] = getattr(principal, "groups", frozenset())
    return any(fnmatch.fnmatchcase(principal, pattern) for pattern in settings.approver_principals) or bool(
        groups & set(settings.approver_groups)
    )


def may_act_for(settings: Settings, session_principal: str | None, principal: str | None) -> bool:
    """Whether ``principal`` may see and act on a session that belongs to ``session_principal``: that
    principal, or an approver. ``None`` is the application itself (recovery, Step Functions), trusted;
    a session the application started (no principal) is anyone's."""
    return (
        principal is None
        or session_principal is None
        or session_principal == principal
        or is_approver(settings, principal)
    )


def load(deps: Dependencies, session_id: str, turn_id: str, principal: str | None = None) -> TurnTree:
    """The tree of ``turn_id`` (a root or child turn id) in ``session_id``, or 404 (also when the
    session is another principal's: its existence is not revealed; and when it was deleted or its
    retention ended)."""
    missing = f"there is no turn {turn_id!r} in session {session_id!r}; nothing was done"
    if not valid_session_id(session_id) or not valid_turn_id(turn_id):
        raise NotFoundError(missing)
    tree = deps.store.load_tree(session_id, root_of(turn_id))
    if tree is None or (turn_id != tree.root.turn_id and all(c.turn_id != turn_id for c in tree.children)):
        raise NotFoundError(missing)
    # Deleted, or past its retention: gone (though DynamoDB's TTL may not have deleted it yet).
    if tree.root.expired(deps.clock.now()) or tree.root.deleted_generation is not None:
        raise NotFoundError(missing)
    if not may_act_for(deps.settings, tree.root.principal, principal):
        raise NotFoundError(missing)
    return tree

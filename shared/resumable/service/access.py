"""Who may see and act on a session: its principal, or an approver (unknown and not-yours look the
same, 404, so no principal learns whether another's session exists); and who may answer a question
asked under an approval rule."""

from __future__ import annotations

import fnmatch
import logging
import math
from typing import Any

from resumable.config import Settings
from resumable.exceptions import ForbiddenError, NotFoundError
from resumable.runtime.rules import ApprovalRule
from resumable.service.caller import Caller, identity_of
from resumable.service.dependencies import Dependencies
from resumable.service.ids import root_of, valid_session_id, valid_turn_id
from resumable.store.records import InteractionRecord, TurnTree, expired

logger = logging.getLogger(__name__)


def visible(deps: Dependencies, interaction: InteractionRecord, turn_id: str, caller: Caller | None) -> bool:
    """Whether ``caller`` may see the interaction, as asked through ``turn_id`` (its root turn, or the
    child turn that asked it): its session is theirs (or they approve), live and not deleted."""
    return (
        turn_id in (interaction.root_turn_id, interaction.turn_id)
        and may_act_for(deps.settings, interaction.principal, caller)
        and not expired(interaction.purge_at, deps.clock.now())
        and interaction.deleted_generation is None
    )


def is_approver(settings: Settings, caller: Caller | str) -> bool:
    """Whether ``caller``'s identity matches one of the configured approver principals (``*``
    wildcards), or its token names one of the approver groups (a bare principal names none)."""
    caller = Caller(caller) if isinstance(caller, str) else caller
    patterns = settings.approver_principals
    return any(fnmatch.fnmatchcase(caller.identity, pattern) for pattern in patterns) or bool(
        caller.groups & set(settings.approver_groups)
    )


def may_act_for(settings: Settings, session_principal: str | None, caller: Caller | None) -> bool:
    """Whether ``caller`` may see and act on a session that belongs to ``session_principal``: that
    principal, or an approver. ``None`` is the application itself (recovery, Step Functions), trusted;
    a session the application started (no principal) is anyone's."""
    return (
        caller is None
        or session_principal is None
        or session_principal == caller.identity
        or is_approver(settings, caller)
    )


def load(deps: Dependencies, session_id: str, turn_id: str, caller: Caller | None = None) -> TurnTree:
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
    if not may_act_for(deps.settings, tree.root.principal, caller):
        raise NotFoundError(missing)
    return tree


def rule_of(interaction: InteractionRecord) -> ApprovalRule | None:
    """The rule the interaction was asked under; one that does not read as a rule lets nobody answer."""
    if interaction.rule is None:
        return None
    stored = interaction.rule
    after = stored.get("escalate_after")
    if isinstance(after, float) and not math.isfinite(after):
        # (asked before such a rule was refused: an escalation after infinity is none, not an unreadable rule)
        stored = {k: v for k, v in stored.items() if k not in ("escalate_after", "escalate_to")}
    try:
        return ApprovalRule.model_validate(stored)
    except ValueError:
        logger.error("interaction %s holds a rule that is not one: nobody may answer it", interaction.request_id)
        return ApprovalRule.model_construct(tools=("*",), name="unreadable rule", approvers=(), required=1)


def may_answer(
    rule: ApprovalRule, interaction: InteractionRecord, caller: Caller | None, *, approving: bool = True
) -> str | None:
    """Why ``caller`` may not approve (or, not ``approving``, deny) ``interaction`` under ``rule``
    (None: it may). The principal who started the turn may always deny its own call (withdraw it: a
    deny only stops the call), as it may cancel the turn, whether or not ``approvers`` names it."""
    who = identity_of(caller)
    if not approving and caller is not None and interaction.started_by is not None and who == interaction.started_by:
        return None
    escalated = interaction.escalated_at is not None
    if not rule.admits(who, caller.groups if caller is not None else frozenset(), escalated=escalated):
        return f"{who} is not one of the approvers of the approval rule {rule.title!r} ({_approvers(rule, escalated)})"
    if approving and not rule.allows_self_approval and caller is not None and who == interaction.started_by:
        return (
            f"{who} started this turn, and the approval rule {rule.title!r} does not let the principal who "
            f"started a turn approve its own calls (it needs {rule.required} other approver(s))"
        )
    return None


def check_may_answer(interaction: InteractionRecord, response: dict[str, Any], caller: Caller | None) -> None:
    """403 (naming the rule) unless ``caller`` may give ``response`` under the interaction's rule."""
    rule = rule_of(interaction)
    if rule is None:
        return
    refused_because = may_answer(rule, interaction, caller, approving=response["decision"] == "approve")
    if refused_because is not None:
        raise ForbiddenError(f"{refused_because}: interaction {interaction.request_id} was not answered")


def _approvers(rule: ApprovalRule, escalated: bool) -> str:
    if rule.approvers is None:
        return "whoever may answer the session"
    named = [*rule.approvers, *(rule.escalate_to or () if escalated else ())]
    return "approvers: " + ", ".join(named)

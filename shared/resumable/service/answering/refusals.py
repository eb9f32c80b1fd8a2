"""Refused answers on the audit trail: an approval or a deny the service refused, though its caller may
see the question (one who may not gets 404 and learns nothing, so nothing is recorded of it either).
What separation of duties needs to be proven from the trail alone: who tried, as whom, why it did not
count, under which rule, in whose turn.

Each is recorded once a UTC day per question, principal and refusal (``Store.record_refused``): a flood
of the same refused press grows the trail by one record a day, whatever its rate. A record that could
not be written (an AWS failure) is logged, and the caller is refused all the same: a refusal never
becomes a 500."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from resumable.exceptions import AwsError, ConflictError, ForbiddenError, ServiceError
from resumable.service.access import rule_of
from resumable.service.audit.entries import refused_entry
from resumable.service.caller import Caller, identity_of
from resumable.store.records import AnswerRefusal, InteractionRecord

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)


def refusal_of(
    error: ServiceError, interaction: InteractionRecord, response: dict[str, Any], caller: Caller | None, now: float
) -> AnswerRefusal:
    """Why ``response`` to ``interaction`` (as it is now) was refused with ``error``."""
    who = identity_of(caller)
    if isinstance(error, ForbiddenError):
        rule = rule_of(interaction)
        own = rule is not None and not rule.allows_self_approval and who == interaction.started_by
        return "self_approval" if own and response.get("decision") == "approve" else "not_an_approver"
    if interaction.status != "requested" or interaction.expires_at <= now:
        return "after_settlement"
    if isinstance(error, ConflictError) and who in interaction.votes:
        return "duplicate_vote"
    return "other_input"


def record_refusal(
    deps: Dependencies, asked: InteractionRecord, response: dict[str, Any], caller: Caller | None, error: ServiceError
) -> None:
    """Put the refused answer on the trail (the question read again: as it was when it was refused)."""
    now = deps.clock.now()
    try:
        interaction = deps.store.get_interaction(asked.session_id, asked.root_turn_id, asked.request_id) or asked
        refusal = refusal_of(error, interaction, response, caller, now)
        entry = refused_entry(deps, interaction, response, caller, refusal, str(error), now)
        written = deps.store.record_refused(entry)
    except AwsError as failed:
        logger.error(
            "request_id=<%s> | a refused answer by %s is not on the audit trail: %s",
            asked.request_id,
            identity_of(caller),
            failed,
        )
        return
    logger.info(
        "request_id=<%s> | answer by %s refused (%s)%s",
        asked.request_id,
        identity_of(caller),
        refusal,
        "" if written else ": on the trail today already",
    )

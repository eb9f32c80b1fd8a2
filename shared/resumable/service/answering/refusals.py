"""Refused answers on the audit trail: an approval or a deny the service refused, though its caller may
see the question (one who may not gets 404 and learns nothing, so nothing is recorded of it either).
What separation of duties needs to be proven from the trail alone: who tried, as whom, why it did not
count, under which rule, in whose turn. Only approvals are on the trail: an answer to a question of
another kind is not recorded, refused or not.

Not a refusal, so never recorded: the same answer again (a 200), and a voter's own vote sent again
(a 409 saying it stands, to a client retrying after a lost reply, or after the vote settled it: what
they sent counted).

**The bound.** A refusal is recorded once a UTC day per question, principal and refusal, and at most
``MAX_REFUSED_A_DAY`` a day per question whoever tries (a principal is cheap to mint under an assumed
role's session name): ``Store.record_refused``. What is recorded of the refusal is its code and a
fixed sentence for it, never the caller-facing message (which quotes answers and inputs: the trail
keeps inputs only as ``AUDIT_INPUTS`` says). A record that could not be written (an AWS failure) is
logged, and the caller is refused all the same: a refusal never becomes a 500."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from resumable.exceptions import AwsError, ForbiddenError, GoneError, ServiceError
from resumable.runtime.interrupts import APPROVAL_INTERRUPT
from resumable.service.access import rule_of
from resumable.service.audit.entries import refused_entry
from resumable.service.caller import Caller, identity_of
from resumable.store.records import AnswerRefusal, InteractionRecord

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)

MAX_REFUSED_A_DAY = 20
"""Refused records a question gets a UTC day at most, all principals together."""

SAID: dict[AnswerRefusal, str] = {
    "not_an_approver": "its approval rule's approvers do not name them",
    "self_approval": "they started the turn, and its approval rule does not let them approve their own call",
    "duplicate_vote": "they approved it already, and another approval by them does not count",
    "other_input": "the approvals so far approved another input",
    "after_settlement": "it was settled, expired, withdrawn or superseded already, and takes no other answer",
    "turn_canceled": "its turn was being canceled",
}


def refusal_of(
    error: ServiceError, interaction: InteractionRecord, response: dict[str, Any], caller: Caller | None, now: float
) -> AnswerRefusal:
    """Why ``response`` to ``interaction`` (as it is now) was refused with ``error``."""
    who = identity_of(caller)
    if isinstance(error, ForbiddenError):
        rule = rule_of(interaction)
        groups = caller.groups if caller is not None else frozenset()
        named = rule is None or rule.admits(who, groups, escalated=interaction.escalated_at is not None)
        return "self_approval" if named and response.get("decision") == "approve" else "not_an_approver"
    if interaction.status != "requested" or interaction.expires_at <= now:
        return "after_settlement"
    if isinstance(error, GoneError):  # (still requested: its turn is being canceled, the cancel settles it)
        return "turn_canceled"
    return "duplicate_vote" if who in interaction.votes else "other_input"


def _own_vote_again(interaction: InteractionRecord, response: dict[str, Any], who: str) -> bool:
    """Whether ``response`` is ``who``'s vote on ``interaction`` sent again (it counted: not refused)."""
    vote = interaction.votes.get(who)
    if vote is None or response.get("decision") != "approve":
        return False
    asked = interaction.reason.get("input") if isinstance(interaction.reason, dict) else None
    edited = response.get("input")
    return bool((None if edited == asked else edited) == vote.input)


def record_refusal(
    deps: Dependencies, asked: InteractionRecord, response: dict[str, Any], caller: Caller | None, error: ServiceError
) -> None:
    """Put the refused answer on the trail (the question read again: as it was when it was refused)."""
    if asked.name != APPROVAL_INTERRUPT:
        return
    now = deps.clock.now()
    try:
        interaction = deps.store.get_interaction(asked.session_id, asked.root_turn_id, asked.request_id) or asked
        if _own_vote_again(interaction, response, identity_of(caller)):
            return
        refusal = refusal_of(error, interaction, response, caller, now)
        entry = refused_entry(deps, interaction, response, caller, refusal, SAID[refusal], now)
        written = deps.store.record_refused(entry, MAX_REFUSED_A_DAY)
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
        "" if written else ": on the trail today already, or the question's refusals for the day are all kept",
    )

"""Answers under an approval rule: who may give them, and the votes that settle a question once.

A question asked under a rule (``ApprovalRule``, stored on the interaction as it was asked) takes
answers only from the principals its ``approvers`` name (403 for anyone else, naming the rule), and,
unless the rule allows self-approval, an approval from anyone but the principal who started the turn
(who may always deny it, withdrawing their own call, as they may cancel it). A deny settles the question
denied at once. Each approval is a vote: a conditional write that holds only if the question still has the votes it was
read with, so two votes at once cannot both count the same state; the one that brings the votes to
``required`` settles the question in the same transaction that records it. Every approving vote
approves the same input: a vote for a different one (another edit, or none after an edit) is refused
(409), naming the input approved so far, rather than resetting the count, so that what runs is what
every approver saw. A second approval by the same principal is refused (409): it already counts.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from resumable.clock import iso
from resumable.exceptions import ConflictError, TurnBusyError
from resumable.runtime.rules import ApprovalRule
from resumable.service.access import check_may_answer, is_approver, rule_of
from resumable.service.audit.entries import authentication_of, decision_entry, vote_entry
from resumable.service.caller import Caller, channel_of, identity_of
from resumable.service.grants.giving import GrantRequest, audited, given
from resumable.store.answers import AnswerCondition, AnswerOutcome, Votes
from resumable.store.outbox import interaction_voted
from resumable.store.records import InteractionRecord, Vote

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)


def answer_under_rule(
    deps: Dependencies,
    interaction: InteractionRecord,
    response: dict[str, Any],
    caller: Caller | None,
    *,
    child_turn_id: str | None,
    grant: GrantRequest | None = None,
) -> AnswerOutcome:
    """Record ``response`` (approval-shaped) for a question asked under a rule: a deny settles it; an
    approval is a vote, which settles it when it is the ``required``-th. ``refused`` (with the
    interaction as it is now) when it is no longer open to votes. ``grant``: the standing grant the
    approval also gives, where the rule allows it (else 422), written with the approval."""
    rule = rule_of(interaction)
    assert rule is not None
    check_may_answer(interaction, response, caller)
    who = identity_of(caller)
    now = deps.clock.now()
    granted = given(deps, interaction, rule, response, grant, who, now) if grant is not None else None
    # Whose question it must be: the asking child turn's, in the caller's session unless they approve.
    whose: dict[str, Any] = {
        "asker": child_turn_id,
        "principal": None if caller is None or is_approver(deps.settings, caller) else caller.identity,
    }
    ids = interaction.session_id, interaction.root_turn_id, interaction.request_id
    signed, via = authentication_of(caller), channel_of(caller)
    for _ in range(rule.required + 3):  # each refusal is another vote landing first: at most required
        if interaction.status != "requested" or interaction.expires_at <= now:
            return AnswerOutcome("refused", interaction=interaction)
        if response["decision"] == "deny":  # settles it at once, whatever was approved before
            # (it too holds only while the votes are those read: its record lists every one it overrode)
            held = Votes(counted=interaction.vote_count, votes=interaction.votes)
            entry = decision_entry(deps, interaction, response, who, signed, now, rule=rule.title, votes=held.votes)
            settling = AnswerCondition.settling(held, **whose)
            outcome = deps.store.answer_interaction(*ids, response, who, now, settling, audit=entry, via=via)
            what = f"denied by {who} under rule {rule.title!r}"
        else:
            votes = _with_vote(rule, interaction, response, who, now, signed)
            if len(votes.votes) >= rule.required:
                named = audited(granted) if granted is not None else None
                entry = decision_entry(
                    deps, interaction, response, who, signed, now, rule=rule.title, votes=votes.votes, grant=named
                )
                settling = AnswerCondition.settling(votes, **whose)
                outcome = deps.store.answer_interaction(
                    *ids, response, who, now, settling, audit=entry, via=via, grant=granted
                )
            else:
                entry = vote_entry(deps, interaction, who, votes.votes[who], rule.title)
                told = interaction_voted(interaction, who, len(votes.votes), rule.required, now)
                condition = AnswerCondition.vote(votes, **whose)
                outcome = deps.store.vote_interaction(*ids, condition, now, audit=entry, event=told)
            what = f"approved by {who} under rule {rule.title!r} ({len(votes.votes)} of {rule.required} approvals)"
        if outcome.outcome != "refused":
            _logged(outcome, interaction, what)
            return outcome
        assert outcome.interaction is not None
        interaction = outcome.interaction
    raise TurnBusyError(
        f"interaction {interaction.request_id} is taking many votes at once: retry shortly; this vote was not recorded"
    )


def _logged(outcome: AnswerOutcome, interaction: InteractionRecord, what: str) -> None:
    if outcome.outcome in ("answered", "voted"):
        logger.info("session_id=<%s>, request_id=<%s> | %s", interaction.session_id, interaction.request_id, what)


def _with_vote(
    rule: ApprovalRule,
    interaction: InteractionRecord,
    response: dict[str, Any],
    who: str,
    now: float,
    authentication: dict[str, str],
) -> Votes:
    """The interaction's votes with ``who``'s approval; 409 if it already approved, or approved another
    input (an edit that leaves the input as asked is no edit)."""
    held = len(interaction.votes)
    if who in interaction.votes:
        raise ConflictError(
            f"you ({who}) already approved interaction {interaction.request_id} ({held} of {rule.required} approvals "
            f"under the approval rule {rule.title!r}; it waits for another approver): that approval stands and "
            "nothing more was recorded",
            winning=None,
            answered={"by": who, "at": iso(interaction.votes[who].at), "decision": "approved", "yours": True},
        )
    asked = interaction.reason.get("input") if isinstance(interaction.reason, dict) else None
    edited = response.get("input")
    edited = None if edited == asked else edited
    first = next(iter(interaction.votes.values()), None)
    if first is not None and any(v.input != edited for v in interaction.votes.values()):
        shown = "the input asked" if first.input is None else json.dumps(first.input, ensure_ascii=False)
        raise ConflictError(
            f"interaction {interaction.request_id} was approved so far with {shown}: every approval under the approval "
            f"rule {rule.title!r} must approve the same input; approve that one, or deny; this vote was not recorded",
            winning={"decision": "approve", **({"input": first.input} if first.input is not None else {})},
        )
    vote = Vote(at=now, input=edited, message=response.get("message"), authentication=authentication)
    return Votes(counted=interaction.vote_count, votes={**interaction.votes, who: vote})

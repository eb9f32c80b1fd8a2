"""Answers under an approval rule: who may give them, and the votes that settle a question once.

A question asked under a rule (``ApprovalRule``, stored on the interaction as it was asked) takes
answers only from the principals its ``approvers`` name (403 for anyone else, naming the rule), and,
unless the rule allows self-approval, an approval from anyone but the principal who started the turn
(who may still deny it, as they may cancel it). A deny settles the question denied at once. Each
approval is a vote: a conditional write that holds only if the question still has the votes it was
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

from resumable.exceptions import ConflictError, ForbiddenError, TurnBusyError
from resumable.runtime.approval import ApprovalRule
from resumable.service.access import is_approver
from resumable.store.base import AnswerOutcome, Votes
from resumable.store.records import InteractionRecord, Vote

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)

APPLICATION = "application"
"""Who answers when the application itself does (no principal): a Step Functions task, a direct call."""


def rule_of(interaction: InteractionRecord) -> ApprovalRule | None:
    return None if interaction.rule is None else ApprovalRule.model_validate(interaction.rule)


def may_answer(rule: ApprovalRule, interaction: InteractionRecord, principal: str | None) -> str | None:
    """Why ``principal`` may not approve ``interaction`` under ``rule`` (None: it may)."""
    who = principal or APPLICATION
    if not rule.admits(who, getattr(principal, "groups", frozenset())):
        return f"{who} is not one of the approvers of the approval rule {rule.title!r} ({_approvers(rule)})"
    if not rule.allows_self_approval and principal is not None and principal == interaction.principal:
        return (
            f"{who} started this turn, and the approval rule {rule.title!r} does not let the principal who "
            f"started a turn approve its own calls (it needs {rule.required} other approver(s))"
        )
    return None


def answer_under_rule(
    deps: Dependencies,
    interaction: InteractionRecord,
    response: dict[str, Any],
    principal: str | None,
    *,
    child_turn_id: str | None,
) -> AnswerOutcome:
    """Record ``response`` (approval-shaped) for a question asked under a rule: a deny settles it; an
    approval is a vote, which settles it when it is the ``required``-th. ``refused`` (with the
    interaction as it is now) when it is no longer open to votes."""
    rule = rule_of(interaction)
    assert rule is not None
    who = principal or APPLICATION
    refused_because = may_answer(rule, interaction, principal)
    deny = response["decision"] == "deny"
    if refused_because is not None and not (deny and rule.admits(who, getattr(principal, "groups", frozenset()))):
        raise ForbiddenError(f"{refused_because}: interaction {interaction.request_id} was not answered")
    now = deps.clock.now()
    common: dict[str, Any] = {  # the conditions of an answer (see store.base.Store.answer_interaction)
        "child_turn_id": child_turn_id,
        "principal": None if principal is None or is_approver(deps.settings, principal) else principal,
    }
    for _ in range(rule.required + 3):  # each refusal is another vote landing first: at most required
        if interaction.status != "requested" or interaction.expires_at <= now:
            return AnswerOutcome("refused", interaction=interaction)
        votes = _with_vote(rule, interaction, response, who, now)
        if deny or len(votes.votes) >= rule.required:
            outcome = deps.store.answer_interaction(
                interaction.session_id,
                interaction.root_turn_id,
                interaction.request_id,
                response,
                who,
                now,
                approval_shaped=True,
                ruled=True,
                votes=None if deny else votes,
                **common,
            )
        else:
            outcome = deps.store.vote_interaction(
                interaction.session_id, interaction.root_turn_id, interaction.request_id, votes, now, **common
            )
        if outcome.outcome != "refused":
            if outcome.outcome in ("answered", "voted"):
                logger.info(
                    "session_id=<%s>, request_id=<%s> | %s by %s under rule %r (%d of %d approvals)",
                    interaction.session_id,
                    interaction.request_id,
                    "denied" if deny else "approved",
                    who,
                    rule.title,
                    len(votes.votes),
                    rule.required,
                )
            return outcome
        assert outcome.interaction is not None
        interaction = outcome.interaction
    raise TurnBusyError(
        f"interaction {interaction.request_id} is taking many votes at once: retry shortly; this vote was not recorded"
    )


def _with_vote(
    rule: ApprovalRule, interaction: InteractionRecord, response: dict[str, Any], who: str, now: float
) -> Votes:
    """The interaction's votes with ``who``'s approval; 409 if it already approved, or approved another input."""
    held = len(interaction.votes)
    if who in interaction.votes:
        raise ConflictError(
            f"{who} already approved interaction {interaction.request_id} ({held} of {rule.required} approvals under "
            f"the approval rule {rule.title!r}; it waits for another approver): nothing more was recorded",
            winning=None,
        )
    edited = response.get("input")
    approved = {json.dumps(v.input, sort_keys=True) for v in interaction.votes.values()}
    if response["decision"] == "approve" and approved and approved != {json.dumps(edited, sort_keys=True)}:
        first = next(iter(interaction.votes.values())).input
        shown = "the input asked" if first is None else json.dumps(first, ensure_ascii=False)
        raise ConflictError(
            f"interaction {interaction.request_id} was approved so far with {shown}: every approval under the approval "
            f"rule {rule.title!r} must approve the same input; approve that one, or deny; this vote was not recorded",
            winning={"decision": "approve", **({"input": first} if first is not None else {})},
        )
    vote = Vote(at=now, input=edited, message=response.get("message"))
    return Votes(counted=interaction.vote_count, votes={**interaction.votes, who: vote})


def _approvers(rule: ApprovalRule) -> str:
    return "whoever may answer the session" if rule.approvers is None else "approvers: " + ", ".join(rule.approvers)

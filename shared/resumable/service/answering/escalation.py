"""Escalation: a question under an approval rule with ``escalate_after`` that nobody settled in that
time is opened to the rule's ``escalate_to`` too, once, by the sweeper (whose index has the turn due
a look then), and the ``Interaction Escalated`` event says so in the same transaction. Two sweepers
at once escalate it once: the write holds only while it is not escalated yet."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resumable.service.access import rule_of
from resumable.store.outbox import interaction_escalated
from resumable.store.records import TurnTree

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)


def escalate(deps: Dependencies, tree: TurnTree, now: float) -> int:
    """Escalate every question of ``tree`` whose time to escalate came (and that has not expired);
    how many this call escalated."""
    escalated = 0
    for interaction in tree.interactions:
        due = interaction.escalates_at
        rule = rule_of(interaction)
        if due is None or due > now or interaction.expires_at <= now or rule is None or not rule.escalate_to:
            continue
        to = list(rule.escalate_to)
        if deps.store.escalate_interaction(interaction, now, interaction_escalated(interaction, rule.title, to, now)):
            escalated += 1
            logger.warning(
                "session_id=<%s>, request_id=<%s> | nobody settled it in %.0f s: escalated to %s (rule %r)",
                interaction.session_id,
                interaction.request_id,
                rule.escalate_after or 0,
                ", ".join(to),
                rule.title,
            )
    return escalated

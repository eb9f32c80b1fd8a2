"""Continuing a turn that needs longer than one invocation's time budget.

An HTTP request must be answered well within API Gateway's 30 seconds. When a run has used up
``turn_budget_seconds``, it checkpoints before its next tool call (of a tool, not a sub-agent: a
sub-agent checkpoints before its own tool calls, so a resume is never mistaken for progress): the
tool call becomes a checkpoint
interrupt, the turn is committed ``running`` with no lease (its snapshot holds every agent's state),
and ``Service.continuation`` asks for another invocation to continue it (an asynchronous invocation
of ``CONTINUE_FUNCTION``, the SubmitApproval function). The reply says ``running``; the client polls.
The continuing invocation takes the turn over like ``recover`` does and answers the checkpoint, so
the tool call runs then. If the
continuation cannot be requested (or is lost), the next get-turn that sees the turn stalled
requests it again, so a client polling the turn (or a workflow reading it) is enough to move it on.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resumable.clock import Clock
from resumable.exceptions import AwsError
from resumable.metrics import count

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies
    from resumable.store.records import TurnRecord

logger = logging.getLogger(__name__)


class Budget:
    """A run's checkpoint signal: never for the invocation's first tool call (so every invocation runs
    at least one tool call: the turn always moves on), then once the run has taken ``seconds``."""

    def __init__(self, clock: Clock, seconds: float) -> None:
        self.clock = clock
        self.deadline = clock.now() + seconds
        self.asked = False

    def __call__(self) -> bool:
        if not self.asked:
            self.asked = True
            return False
        return self.clock.now() >= self.deadline


def continue_later(deps: Dependencies, root: TurnRecord) -> None:
    """Ask for another invocation to continue ``root`` (checkpointed, or stalled: see get_turn)."""
    if deps.continuation is None:
        return
    count("ContinuationsRequested")
    try:
        deps.continuation(root.session_id, root.turn_id)
    except AwsError as error:
        count("ContinuationsFailed")
        logger.error(
            "session_id=<%s>, turn_id=<%s> | a continuation of the turn could not be requested: %s. Reading the "
            "turn (get-turn) requests it again",
            root.session_id,
            root.turn_id,
            error,
        )
        return
    logger.info(
        "session_id=<%s>, turn_id=<%s> | turn checkpointed; continuation requested", root.session_id, root.turn_id
    )

"""Telling the Step Functions workflow that waits on a turn how the turn settled (and a Lambda durable
function: service.advancing.callback).

A workflow started the turn (``workflow``) and waits on a task token it stored on the root turn
itself. Whatever settles the turn (a resume, cancel, expiry, recovery) tells it: ``SendTaskSuccess``
with the Turn when it completed, ``SendTaskFailure`` with one of ``WORKFLOW_ERRORS`` (and the Turn as
the cause) otherwise; a run that pauses on new questions sends ``SendTaskSuccess`` with the waiting
Turn. The state machine takes any of these as a wake-up and reads the turn itself, so what it
decides on is never what a caller of SendTask* claims.

The token is read after the commit: a workflow writes its token only while the turn is unsettled,
so a token written before a settling commit is seen, and one written after it is refused (the
workflow then reads the settled turn itself). A failure to tell is logged, not raised: the turn is
settled either way, the workflow's wait times out and reads it, and ``recover`` tells it again.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resumable.exceptions import AwsError
from resumable.service.advancing.callback import owed, tell_callback
from resumable.service.advancing.outcome import MAX_CAUSE_BYTES, MAX_OUTPUT_BYTES, WORKFLOW_ERRORS, fitted
from resumable.service.views import TurnView
from resumable.store.records import SETTLED, TurnTree

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)


def tell_workflow(deps: Dependencies, tree: TurnTree) -> None:
    """If a workflow waits on ``tree``, send it the outcome (see the module). Called when the turn
    settled, and when it paused on new questions (so the workflow re-reads it and waits until the
    new questions' expiry): the workflow takes what it is sent as a wake-up and reads the turn."""
    root = tree.root
    if owed(tree):  # (a durable function waits on it: service.advancing.callback)
        try:
            tell_callback(deps, tree)
        except AwsError as error:
            logger.error(
                "turn_id=<%s> | the durable function was not told that the turn settled %s: %s. The sweeper tells it",
                root.turn_id,
                root.status,
                error,
            )
    if not root.workflow or root.status not in (*SETTLED, "waiting") or deps.workflow is None:
        return
    try:
        token = deps.store.get_task_token(root.session_id, root.turn_id)
        if token is None:
            logger.info("turn_id=<%s> | no task token stored yet: the workflow reads the settled turn", root.turn_id)
            return
        view = TurnView.of(tree)
        if root.status in ("completed", "waiting"):
            delivery = deps.workflow.succeed(token, fitted(view, MAX_OUTPUT_BYTES))
        else:
            delivery = deps.workflow.fail(token, WORKFLOW_ERRORS[root.status], fitted(view, MAX_CAUSE_BYTES))
    except AwsError as error:
        logger.error(
            "turn_id=<%s> | the workflow was not told that the turn settled %s: %s. Its wait times out and reads "
            "the turn; recover tells it again",
            root.turn_id,
            root.status,
            error,
        )
        return
    logger.info("turn_id=<%s>, status=<%s>, delivery=<%s> | workflow told", root.turn_id, root.status, delivery)

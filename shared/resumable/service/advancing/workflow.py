"""Telling the Step Functions workflow that waits on a turn how the turn settled.

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

import json
import logging
from typing import TYPE_CHECKING

from resumable.exceptions import AwsError
from resumable.service.views import TurnView
from resumable.store.records import SETTLED, TurnTree

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)

WORKFLOW_ERRORS = {
    "canceled": "Turn.Canceled",
    "failed": "Turn.Failed",
    "expired": "Turn.Expired",
    "interrupted": "Turn.Interrupted",
}
# Step Functions' limits: a task's output (SendTaskSuccess, a Lambda task's result) 256 KiB of UTF-8,
# SendTaskFailure's cause 32,768 characters (kept in bytes here too, which is stricter).
MAX_OUTPUT_BYTES = 256 * 1024
MAX_CAUSE_BYTES = 32_768


def tell_workflow(deps: Dependencies, tree: TurnTree) -> None:
    """If a workflow waits on ``tree``, send it the outcome (see the module). Called when the turn
    settled, and when it paused on new questions (so the workflow re-reads it and waits until the
    new questions' expiry): the workflow takes what it is sent as a wake-up and reads the turn."""
    root = tree.root
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


def fitted(view: TurnView, limit: int) -> str:
    """The Turn as JSON; if more than ``limit`` bytes, the Turn without its interactions and children
    and with its text cut (``"truncated": true``): the whole turn is one get-turn away."""
    text = view.model_dump_json()
    if len(text.encode()) <= limit:
        return text
    budget = limit // 16  # characters: at most 4 bytes each, two fields
    brief = view.model_dump(mode="json", include={"session_id", "turn_id", "status", "created_at", "updated_at"})
    for field in ("output", "error"):
        value = getattr(view, field)
        brief[field] = value[:budget] if isinstance(value, str) else value
    return json.dumps({**brief, "interactions": [], "children": [], "truncated": True}, ensure_ascii=False)

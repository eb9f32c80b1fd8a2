"""Telling the Step Functions workflow that waits on a turn how the turn settled.

A workflow started the turn (``workflow``) and waits on a task token it stored on the root turn
itself. Whatever settles the turn (a resume, cancel, expiry, recovery) tells it: ``SendTaskSuccess``
with the Turn when it completed, ``SendTaskFailure`` with one of ``WORKFLOW_ERRORS`` (and the Turn as
the cause) otherwise. The token is read after the settling commit: a workflow writes its token only
while the turn is unsettled, so a token written before the commit is seen, and one written after it
is refused (the workflow then reads the settled turn itself). A failure to tell is logged, not
raised: the turn is settled either way, the workflow's wait times out and reads it, and ``recover``
tells it again.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from resumable.exceptions import StoreError
from resumable.service.views import TurnView
from resumable.store.records import TurnTree

if TYPE_CHECKING:
    from resumable.service.service import Service

logger = logging.getLogger(__name__)

WORKFLOW_ERRORS = {
    "canceled": "Turn.Canceled",
    "failed": "Turn.Failed",
    "expired": "Turn.Expired",
    "interrupted": "Turn.Interrupted",
}
# Step Functions' limits: SendTaskSuccess output 256 KiB, SendTaskFailure cause 32,768 characters.
MAX_OUTPUT_CHARS = 256 * 1024
MAX_CAUSE_CHARS = 32_768


def tell_workflow(service: Service, tree: TurnTree) -> None:
    """If ``tree`` is settled and a workflow waits on it, send it the outcome (see the module)."""
    root = tree.root
    if not (root.settled and root.workflow) or service.task_tokens is None:
        return
    try:
        token = service.store.get_task_token(root.session_id, root.turn_id)
        if token is None:
            logger.info("turn_id=<%s> | no task token stored yet: the workflow reads the settled turn", root.turn_id)
            return
        view = TurnView.of(tree)
        if root.status == "completed":
            delivery = service.task_tokens.succeed(token, _fitted(view, MAX_OUTPUT_CHARS))
        else:
            delivery = service.task_tokens.fail(token, WORKFLOW_ERRORS[root.status], _fitted(view, MAX_CAUSE_CHARS))
    except StoreError as error:
        logger.error(
            "turn_id=<%s> | the workflow was not told that the turn settled %s: %s. Its wait times out and reads "
            "the turn; recover tells it again",
            root.turn_id,
            root.status,
            error,
        )
        return
    logger.info("turn_id=<%s>, status=<%s>, delivery=<%s> | workflow told", root.turn_id, root.status, delivery)


def _fitted(view: TurnView, limit: int) -> str:
    """The Turn as JSON; if longer than ``limit``, the Turn without its interactions and children and
    with its text cut (``"truncated": true``): the workflow can read the whole turn with get-turn."""
    text = view.model_dump_json()
    if len(text) <= limit:
        return text
    budget = limit // 4
    brief = view.model_dump(mode="json", include={"session_id", "turn_id", "status", "created_at", "updated_at"})
    for field in ("output", "error"):
        value = getattr(view, field)
        brief[field] = value[:budget] if isinstance(value, str) else value
    return json.dumps({**brief, "interactions": [], "children": [], "truncated": True})

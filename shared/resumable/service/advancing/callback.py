"""Telling a Lambda durable function that waits on a turn how the turn settled, once.

The function started the turn with its callback's id (``resumable.integrations.durable``), which the
root turn keeps. When the turn settles, the settling invocation completes the callback right after its
commit: ``SendDurableExecutionCallbackSuccess`` with the Turn when it completed, otherwise
``SendDurableExecutionCallbackFailure`` with one of ``WORKFLOW_ERRORS`` as the error type and the Turn
as its data (the same shapes a Step Functions workflow is sent), then records on the turn that it was
told (``callback_told``). Nothing is sent while the turn only pauses: the callback completes once.

Never lost: the settling commit itself leaves the turn due in the sweeper's index until that record is
written, so if the invocation dies (or Lambda fails) between the commit and the record, the sweeper
tells the function, and ``recover`` does too. Never twice to a workflow: Lambda completes a callback
once; a second send (an invocation that died after sending, before recording) is refused with
``CallbackTimeoutException`` and changes nothing for the workflow.

A callback Lambda will no longer complete (its execution stopped or timed out, the wait's own timeout
passed, the id is not valid) is recorded ``closed``, logged, and counted (``UndeliveredCallbacks``,
which an alarm watches); it is never sent again.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resumable.aws.callbacks import CallbackClosedError
from resumable.metrics import count
from resumable.service.advancing.outcome import WORKFLOW_ERRORS, fitted
from resumable.service.views import TurnView
from resumable.store.records import TurnTree

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)

# A callback's result, and a failure's data: 256 KiB in all (a failure's message and type beside its data).
MAX_RESULT_BYTES = 256 * 1024 - 4096


CALLBACK_ATTEMPTS = 10
"""How many times the sweeper tries to tell a durable function that AWS keeps failing for (a minute
apart, then twice as long each time: about 17 hours in all) before it gives up on it."""


def give_up(deps: Dependencies, tree: TurnTree, why: str) -> None:
    """Record that the durable function waiting on ``tree`` can no longer be told; counted and logged
    where this call recorded it (not where it was recorded already, or the turn has moved on since)."""
    root = tree.root
    if not deps.store.callback_told(root, "closed"):
        logger.info("turn_id=<%s> | the durable function's callback was recorded already (%s)", root.turn_id, why)
        return
    count("UndeliveredCallbacks", 1)
    logger.error(
        "session_id=<%s>, turn_id=<%s>, status=<%s> | the durable function waiting on this turn can no longer be "
        "told (%s). Recorded, not sent again",
        root.session_id,
        root.turn_id,
        root.status,
        why,
    )


def owed(tree: TurnTree) -> bool:
    """Whether a durable function waits to be told how ``tree`` settled."""
    root = tree.root
    return root.settled and root.callback_id is not None and root.callback_told is None


def tell_callback(deps: Dependencies, tree: TurnTree) -> bool:
    """If a durable function waits on settled ``tree``, complete its callback and record that; whether
    this call did. An AWS failure is raised (the caller logs it: the sweeper tells it again)."""
    root = tree.root
    if not owed(tree) or deps.callbacks is None or root.callback_id is None:
        return False
    said = fitted(TurnView.of(tree), MAX_RESULT_BYTES)
    try:
        if root.status == "completed":
            deps.callbacks.succeed(root.callback_id, said)
        else:
            message = f"turn {root.turn_id} of session {root.session_id} ended {root.status}"
            deps.callbacks.fail(root.callback_id, WORKFLOW_ERRORS[root.status], message, said)
    except CallbackClosedError as closed:
        give_up(deps, tree, f"{closed.code}: its execution stopped or timed out, or its wait's own timeout passed")
        return False
    recorded = deps.store.callback_told(root, "delivered")
    logger.info("turn_id=<%s>, status=<%s> | durable function told", root.turn_id, root.status)
    return recorded


def keep_alive(deps: Dependencies, tree: TurnTree) -> bool:
    """If a durable function waits on unsettled ``tree`` with a heartbeat timeout, send it a heartbeat;
    whether one was sent. One Lambda no longer takes is recorded ``closed`` and counted, as at settling:
    nothing is sent to it again. An AWS failure is raised (the next look sends the next)."""
    root = tree.root
    if root.settled or root.callback_id is None or root.callback_heartbeat is None or root.callback_told is not None:
        return False
    if deps.callbacks is None:
        return False
    try:
        deps.callbacks.heartbeat(root.callback_id)
    except CallbackClosedError as closed:
        give_up(deps, tree, f"a heartbeat refused, {closed.code}: its execution stopped or timed out")
        return False
    return True

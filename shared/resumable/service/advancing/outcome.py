"""What a workflow waiting on a turn is sent when it settles, whichever kind waits (a Step Functions
state machine: service.advancing.workflow; a Lambda durable function: service.advancing.callback): the
Turn, cut to fit, and the error each way of not completing is named by."""

from __future__ import annotations

import json

from resumable.service.views import TurnView

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

"""Sweeper: on its schedule, move on the turns nobody is moving (an expired lease, a lost
continuation or resume, an expired question, a cancel that died before it settled the tree).

Thin: resumable.service.operating.sweep does the work; its continuations run on SubmitApproval.
"""

from typing import Any

from resumable.api import lambda_init

with lambda_init.quiet():  # no garbage collection during the init: see resumable.api.lambda_init
    from resumable.api.app import check_settings, handle
    from resumable.api.observability import tracer

    check_settings()  # a bad setting stops the function's start, named


@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event, context, direct="sweep")

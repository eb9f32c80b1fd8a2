"""Cancel: POST /sessions/{sessionId}/turns/{turnId}/cancel: cancel a turn and its whole tree.

Thin: the shared routes parse the request, call the service and shape the reply.
"""

from typing import Any

from resumable.api import lambda_init

with lambda_init.quiet():  # no garbage collection during the init: see resumable.api.lambda_init
    from resumable.api.app import check_settings, handle
    from resumable.api.observability import tracer

    check_settings()  # a bad setting stops the function's start, named


@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event, context)

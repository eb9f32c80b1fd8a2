"""DecisionLinks: GET and POST /decide/{token}, the one-click decision links' page (DecisionLinksAnswerAs).

Thin: the links' routes only (no other route, no direct invocation). It records a link's decision and
hands the run of the agents to SubmitApproval (an asynchronous invocation), so the function that
unauthenticated requests reach holds no model's, application's or workflow's grants.
"""

from typing import Any

from resumable.api import lambda_init

with lambda_init.quiet():  # no garbage collection during the init: see resumable.api.lambda_init
    from resumable.api.app import check_settings, handle
    from resumable.api.observability import tracer

    check_settings()  # a bad setting stops the function's start, named


@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event, context, links=True)

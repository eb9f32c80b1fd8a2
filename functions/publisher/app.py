"""Publisher: the table's stream (outbox items only) -> the EventBridge bus, at least once, in order per
session. Thin: resumable.events.publisher numbers and publishes each record."""

from typing import Any

from resumable.api import lambda_init

with lambda_init.quiet():  # no garbage collection during the init: see resumable.api.lambda_init
    from resumable.api.observability import tracer
    from resumable.events.publisher import Publishing

    publishing = Publishing()


@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return publishing.handle(event, context)

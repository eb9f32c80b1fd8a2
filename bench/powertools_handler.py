"""The floor of ``make bench`` section 4: what any handler on resumable's stack pays before its own code.

A handler as Powertools' documentation writes one: Logger, Tracer (the X-Ray SDK, botocore patched,
as ``Tracing: Active`` deploys it), an HTTP API resolver with validation (pydantic) and one route
whose reply is a pydantic model; the route makes the same AWS calls as the bare handler
(bench/bare_handler.py, ``BARE_CALLS``), with clients made on first use. Between the bare handler and
this one is the framework's share of a cold start; between this one and a resumable handler,
resumable's own.
"""

import json

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from pydantic import BaseModel

logger = Logger(service="floor")
tracer = Tracer(service="floor", patch_modules=["botocore"])
app = APIGatewayHttpResolver(enable_validation=True)


class Reply(BaseModel):
    calls: int


@app.route("/.+", method=["GET", "POST"])  # (every route's event)
def any_route() -> Reply:
    from bench import bare_handler  # (its clients, made here: on the first request)

    return Reply(**json.loads(bare_handler.lambda_handler({}, None)["body"]))


@tracer.capture_lambda_handler(capture_response=False)
@logger.inject_lambda_context
def lambda_handler(event, context):
    return app.resolve(event, context)

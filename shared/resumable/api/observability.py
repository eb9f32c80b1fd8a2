"""The edge's structured logger and tracer (Powertools), named as ``resumable.metrics`` names the service.

The tracer sends every handler's invocation to AWS X-Ray (template.yaml: ``Tracing: Active``), with
each AWS SDK call as a subsegment (botocore patched); it is off outside Lambda (no X-Ray daemon
listens there) and wherever ``POWERTOOLS_TRACE_DISABLED`` is true. Handlers record no response: a
Turn holds prompts and outputs that have no place in traces.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Tracer

from resumable.metrics import SERVICE

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE, patch_modules=["botocore"])

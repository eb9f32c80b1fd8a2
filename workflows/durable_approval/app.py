"""A sample durable workflow (template.yaml's ApprovalDurableFunction, with SampleDurableWorkflow=true;
``make run`` runs it on the laptop): it starts a turn of the agents with ``wait_for_turn``, waits for
the turn to settle without running (and without being billed), and goes on with the outcome in a
step of its own. A replay after the step ended never runs it again; an invocation that dies inside it
does (the SDK's steps run at least once per retry by default): a step that pays or deploys takes
``StepConfig(step_semantics=StepSemantics.AT_MOST_ONCE_PER_RETRY)``, or an idempotency key of its own.

Input: ``{"prompt": "...", "sessionId": "..."}`` (``sessionId`` optional: without it the turn gets a
session of its own, named after the callback). Result: ``{"outcome": "completed", "turnId", "output"}``,
or ``{"outcome": "canceled" | "failed" | "expired" | "interrupted", "turnId"}``.

The same step written for Step Functions is statemachines/approval.asl.json (docs/durable-functions.md).
"""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python.context import DurableContext
from aws_durable_execution_sdk_python.execution import durable_execution

from resumable.integrations.durable import TurnNotCompleted, wait_for_turn


@durable_execution
def lambda_handler(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    prompt = event.get("prompt") if isinstance(event, dict) else None
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError('the workflow needs {"prompt": "..."} (and may name a "sessionId"): nothing was started')
    session = event.get("sessionId")  # (a dict: it has a prompt)
    try:
        turn = wait_for_turn(
            context, session if isinstance(session, str) and session else None, prompt, name="approval"
        )
    except TurnNotCompleted as ended:
        outcome = {"outcome": ended.status, "turnId": ended.turn.get("turnId")}
    else:
        outcome = {"outcome": "completed", "turnId": turn.get("turnId"), "output": turn.get("output")}
    # The workflow's next step: here it only records the outcome; a claims pipeline would pay or reopen.
    return context.step(lambda _: outcome, name="after the turn")

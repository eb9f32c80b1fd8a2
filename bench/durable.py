"""Section 12's row for approval turns a Lambda durable function waits for with
``resumable.integrations.durable.wait_for_turn`` (docs/scale.md puts it beside Step Functions').

bench/cost.py runs these turns as it runs its own (``Waiting.run`` in place of its ``_run``): the same
service, table, meter, principal and approval. Here the turn is started by a durable function that
does nothing but wait for it, run by the durable execution SDK's own local runner (its testing SDK),
which invokes and replays the function as Lambda does; the service completes the callback through the
embedded AWS, which hands it to that runner (resumable.local.durable_callbacks).

Each run counts, from the execution's own history, what the durable side bills: every operation the
history records (the execution itself; the child context ``wait_for_callback`` runs in, its callback,
and the step that runs the submitter) and every completion of the callback sent to it from outside
(the service's ``SendDurableExecutionCallbackSuccess``), each a durable operation; and the function's
invocations (one that starts the turn and suspends, one that resumes once the callback completed), each
a Lambda request, timed here as the turn's own steps are. The first waits while StartTurn runs (the
submitter invokes it directly), so its time holds the start's: on Lambda both are billed.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from typing import Any

from aws_durable_execution_sdk_python.execution import InvocationStatus, durable_execution
from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

from bench.capacity import Meter
from resumable.api.direct import start_turn
from resumable.integrations.durable import wait_for_turn
from resumable.local import durable_callbacks
from resumable.service import Service

PATIENCE = 60  # seconds a run may take before it is called hung
INVOCATIONS = ("durable function, invoked", "durable function, resumed")
# The history's events for a callback completed from outside the execution.
COMPLETED = ("CallbackSucceeded", "CallbackFailed")
STATE = re.compile(r"(Started|Succeeded|Failed|TimedOut|Stopped|Cancelled)$")


class Waiting:
    """Approval turns a durable function waits for, each started as ``principal`` and answered by it
    with ``answer``, run one by one by bench/cost.py."""

    def __init__(self, principal: str, answer: dict[str, Any]) -> None:
        self.principal, self.answer = principal, answer

    def run(
        self, service: Service, session: str, approve: bool, meter: Meter, units: dict[str, Counter[str]]
    ) -> dict[str, float]:
        """One turn: the time of each step (the turn's start and approval, the durable function's two
        invocations) and, while the meter is on, their units into ``units``, with the durable
        operations under ``"durable"`` (``durable_operations`` and, by kind, ``durable:<kind>``)."""
        if not approve:
            raise ValueError("a durable function is measured waiting for a turn that asks for approval")
        times: dict[str, float] = {}
        replies: list[dict[str, Any]] = []
        invoked: list[float] = []
        suspended = threading.Event()

        def start(event: dict[str, Any]) -> dict[str, Any]:  # StartTurn, invoked directly
            began = time.perf_counter()
            replies.append(start_turn(service, event))
            times.setdefault("start", time.perf_counter() - began)
            return replies[-1]

        @durable_execution
        def workflow(event: dict[str, Any], context: Any) -> str:
            turn = wait_for_turn(context, event["sessionId"], "go", principal=self.principal, start=start)
            return str(turn["status"])

        def invoke(event: Any, context: Any) -> Any:  # the durable function as Lambda invokes it
            began = time.perf_counter()
            try:
                return workflow(event, context)
            finally:
                invoked.append(time.perf_counter() - began)
                suspended.set()

        with DurableFunctionTestRunner(handler=invoke) as runner, durable_callbacks.answering(runner):
            arn = runner.run_async(input=json.dumps({"sessionId": session}), execution_timeout=PATIENCE)
            if not suspended.wait(PATIENCE) or not replies:
                raise RuntimeError(f"a durable function measured for the bill started no turn in {PATIENCE} s: no bill")
            units.setdefault("start", Counter()).update(meter.take())
            turn = replies[0]["turn"]
            began = time.perf_counter()
            settled = service.submit_approval(
                session, turn["turnId"], turn["interactions"][0]["requestId"], self.answer, self.principal
            )
            times["approve"] = time.perf_counter() - began
            units.setdefault("approve", Counter()).update(meter.take())
            result = runner.wait_for_result(arn, timeout=PATIENCE)
            history = runner.get_execution_history(arn).events
        lambda_invocations = sum(e.event_type == "InvocationCompleted" for e in history)
        if settled.status != "completed" or result.status is not InvocationStatus.SUCCEEDED:
            raise RuntimeError(
                f"a turn a durable function waited for ended {settled.status}, its workflow {result.status.name}: "
                "no bill"
            )
        if lambda_invocations != len(INVOCATIONS) or len(invoked) != lambda_invocations:
            raise RuntimeError(f"the durable function was invoked {lambda_invocations} times, not 2: no bill")
        units.setdefault("durable", Counter()).update(operations(history))
        return times | dict(zip(INVOCATIONS, invoked, strict=True))


def operations(history: list[Any]) -> Counter[str]:
    """The durable operations of an execution's history: each operation it records (by its first event's
    kind), and each completion of a callback from outside; ``durable_operations``, all of them."""
    kinds: dict[str, str] = {}
    for event in history:
        if event.operation_id and event.operation_id not in kinds:
            kinds[event.operation_id] = STATE.sub("", event.event_type).lower()
    counted = Counter(f"durable:{kind}" for kind in kinds.values())
    counted["durable:callback completed"] = sum(e.event_type in COMPLETED for e in history)
    return counted + Counter({"durable_operations": sum(counted.values())})

"""The same approval step written three ways, each replayed by the durable execution SDK's local runner as
Lambda replays it, counting how many turns (questions put to people) each started:

- durable functions alone, the callback's id handed on between ``create_callback`` and ``result()``:
  that code runs again on every replay (the SDK says it must), so the approval is asked for again;
- durable functions alone, through ``wait_for_callback``: its submitter runs in a step, at least once,
  so one that dies after starting the turn (before its step is checkpointed) starts another when it runs
  again;
- ``resumable.integrations.durable.wait_for_turn``: the same death, and one turn, whose action runs once.

The first two start their turn the plain way (a fresh session each time, as a job submitter making a
job id would) and the test completes their callback as the external system would."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aws_durable_execution_sdk_python.context import DurableContext
from aws_durable_execution_sdk_python.execution import InvocationStatus, durable_execution
from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

from resumable.api.direct import start_turn as direct_start
from resumable.integrations.durable import wait_for_turn
from resumable.local import durable_callbacks
from resumable.service import Service
from resumable.service.views import TurnView
from tests.factories import executions
from tests.integration.helpers import APPROVE
from tests.patience import HANG_SECONDS, eventually

PROMPT = "delete the prod-db record"
WORKFLOW = "arn:aws:lambda:us-west-2:123456789012:function:claims-pipeline"


class Flow:
    """Counts the turns a flow started, and dies once after the first start (where asked to)."""

    def __init__(self, make_service: Callable[..., Service], dies: bool) -> None:
        self.make_service, self.dies, self.started = make_service, dies, []  # type: ignore[var-annotated]

    def plain_start(self) -> TurnView:
        view = self.make_service().start_turn(f"job-{uuid.uuid4().hex[:12]}", PROMPT, WORKFLOW)
        self.started.append(view)
        self._maybe_die()
        return view

    def keyed_start(self, event: dict[str, Any]) -> dict[str, Any]:
        reply = direct_start(self.make_service(), event)
        self.started.append(reply)
        self._maybe_die()
        return reply

    def _maybe_die(self) -> None:
        if self.dies and len(self.started) == 1:
            raise ConnectionError("the submitter's process died after its turn started")


def _approve_every_waiting(make_service: Callable[..., Service], flow: Flow, seen: int) -> TurnView:
    """Once the flow has started more than ``seen`` turns: the newest approved, as a person would."""
    eventually(lambda: len(flow.started) > seen or None, "a turn started")
    newest = flow.started[-1]
    view = newest if isinstance(newest, TurnView) else make_service().get_turn(**_ids(newest))
    [asked] = view.interactions
    return make_service().submit_approval(view.session_id, view.turn_id, asked.request_id, APPROVE, WORKFLOW)


def _ids(reply: dict[str, Any]) -> dict[str, str]:
    return {"session_id": reply["turn"]["sessionId"], "turn_id": reply["turn"]["turnId"]}


def _run(handler: Callable[..., Any], drive: Callable[[DurableFunctionTestRunner, str], None]) -> Any:
    with DurableFunctionTestRunner(handler=handler) as runner, durable_callbacks.answering(runner):
        arn = runner.run_async(input=json.dumps({}), execution_timeout=HANG_SECONDS)
        drive(runner, arn)
        result = runner.wait_for_result(arn, timeout=HANG_SECONDS)
    assert result.status is InvocationStatus.SUCCEEDED, result.error
    return result


def test_three_ways_to_wait_and_how_often_each_asked_people(make_service: Callable[..., Service], ledger: Path) -> None:
    asked: dict[str, int] = {}

    # 1. create_callback, the turn started before result(): replayed once the callback completes.
    naive = Flow(make_service, dies=False)

    @durable_execution
    def by_hand(event: dict[str, Any], context: DurableContext) -> Any:
        callback = context.create_callback(name="approval")
        naive.plain_start()  # (the callback's id would travel with it: here the test completes it)
        return callback.result()

    def complete_by_hand(runner: DurableFunctionTestRunner, arn: str) -> None:
        callback = runner.wait_for_callback(arn, timeout=HANG_SECONDS)
        done = _approve_every_waiting(make_service, naive, 0)
        runner.send_callback_success(callback, done.model_dump_json().encode())

    _run(by_hand, complete_by_hand)
    asked["create_callback, started outside a step"] = len(naive.started)

    # 2. wait_for_callback, its submitter dying once after it started the turn.
    submitted = Flow(make_service, dies=True)

    def submit(callback_id: str, _: Any) -> None:
        submitted.plain_start()  # (the callback's id would travel with it: here the test completes it)

    @durable_execution
    def submitter(event: dict[str, Any], context: DurableContext) -> Any:
        return context.wait_for_callback(submit, name="approval")

    def complete_submitted(runner: DurableFunctionTestRunner, arn: str) -> None:
        callback = runner.wait_for_callback(arn, timeout=HANG_SECONDS)
        done = _approve_every_waiting(make_service, submitted, 1)
        runner.send_callback_success(callback, done.model_dump_json().encode())

    _run(submitter, complete_submitted)
    asked["wait_for_callback, its submitter run again"] = len(submitted.started)

    # 3. wait_for_turn, the same death: the service completes the callback itself.
    keyed = Flow(make_service, dies=True)
    ran_before = len(executions(ledger))

    @durable_execution
    def helper(event: dict[str, Any], context: DurableContext) -> Any:
        return wait_for_turn(context, None, PROMPT, principal=WORKFLOW, start=keyed.keyed_start)

    def approve_only(runner: DurableFunctionTestRunner, arn: str) -> None:
        runner.wait_for_callback(arn, timeout=HANG_SECONDS)
        _approve_every_waiting(make_service, keyed, 1)

    _run(helper, approve_only)
    turns = {json.dumps(_ids(reply)) for reply in keyed.started}
    asked["wait_for_turn, its submitter run again"] = len(turns)

    print(f"\nturns started (questions put to people) per approval step: {asked}")
    assert asked == {
        "create_callback, started outside a step": 2,
        "wait_for_callback, its submitter run again": 2,
        "wait_for_turn, its submitter run again": 1,
    }
    assert executions(ledger)[ran_before:] == ["delete prod-db"], "the approved action ran once"

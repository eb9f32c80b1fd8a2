"""A Lambda durable function waits for a turn with resumable.integrations.durable.wait_for_turn, run by
the durable execution SDK's own local runner (its testing SDK), which replays the workflow from its
start at every invocation, as Lambda does.

Here the test completes the callback with the settled Turn, as the service's settling side will (the
next part of this work): what is pinned is the waiting side. Its submitter dies once after StartTurn
replied, so the SDK runs it again: one turn, the approved action run once, the workflow's next step run
once, the outcome (or the error named for how the turn ended) handed to the workflow."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aws_durable_execution_sdk_python.context import DurableContext
from aws_durable_execution_sdk_python.execution import InvocationStatus, durable_execution
from aws_durable_execution_sdk_python.lambda_service import ErrorObject
from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

from resumable.api.direct import start_turn as direct_start
from resumable.integrations.durable import TurnCanceled, wait_for_turn, workflow_of
from resumable.service import Service
from resumable.service.advancing.workflow import MAX_OUTPUT_BYTES, WORKFLOW_ERRORS, fitted
from resumable.service.ids import callback_turn_id
from resumable.service.views import TurnView
from tests.factories import executions
from tests.integration.helpers import APPROVE, session_items, store_of
from tests.patience import HANG_SECONDS, eventually

PROMPT = "delete the prod-db record"
WORKFLOW = "arn:aws:lambda:us-west-2:123456789012:function:claims-pipeline"


class Workflow:
    """A claims pipeline: wait for the turn, then pay (a step that writes ``steps``); its submitter's
    start dies once, after StartTurn replied."""

    def __init__(self, make_service: Callable[..., Service], steps: Path) -> None:
        self.make_service, self.steps, self.starts = make_service, steps, 0

    def start(self, event: dict[str, Any]) -> dict[str, Any]:
        reply = direct_start(self.make_service(), event)
        self.starts += 1
        if self.starts == 1:
            raise ConnectionError("the submitter's process died after StartTurn replied")
        return reply

    def handler(self) -> Callable[..., Any]:
        @durable_execution
        def claims(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
            try:
                turn = wait_for_turn(context, event["sessionId"], PROMPT, principal=WORKFLOW, start=self.start)
            except TurnCanceled as ended:
                reopened = f"reopened after {ended.status}"
                context.step(lambda _: self._record(reopened), name="reopen")
                return {"reopened": ended.turn["turnId"]}
            context.step(lambda _: self._record("paid"), name="pay")
            return {"paid": turn["output"]}

        return claims

    def _record(self, what: str) -> str:
        with self.steps.open("a") as file:
            file.write(what + "\n")
        return what

    def ran(self) -> list[str]:
        return self.steps.read_text().splitlines() if self.steps.exists() else []


def settled(service: Service, session_id: str, callback: str) -> TurnView:
    """The callback's turn once it settled."""
    view = eventually(lambda: service.get_turn(session_id, callback_turn_id(callback)), "the turn")
    assert view.status not in ("running", "waiting"), view
    return view


def waiting(service: Service, session_id: str, callback: str) -> TurnView:
    def asked() -> TurnView | None:
        tree = store_of(service).load_tree(session_id, callback_turn_id(callback))
        return service.get_turn(session_id, tree.root.turn_id) if tree and tree.root.status == "waiting" else None

    return eventually(asked, "the turn waiting for its approval")


def tell(runner: DurableFunctionTestRunner, callback: str, turn: TurnView) -> None:
    """What the service's settling side sends (the Turn as the state machine is sent it)."""
    said = fitted(turn, MAX_OUTPUT_BYTES)
    if turn.status == "completed":
        runner.send_callback_success(callback, said.encode())
    else:
        error = ErrorObject(
            message=f"the turn ended {turn.status}", type=WORKFLOW_ERRORS[turn.status], data=said, stack_trace=None
        )
        runner.send_callback_failure(callback, error)


@pytest.mark.parametrize("ending", ["approved", "canceled"])
def test_a_workflow_waits_for_its_turn_and_goes_on_once_with_its_outcome_though_its_submitter_ran_twice(
    make_service: Callable[..., Service], session_id: str, ledger: Path, tmp_path: Path, ending: str
) -> None:
    workflow = Workflow(make_service, tmp_path / "steps.log")
    with DurableFunctionTestRunner(handler=workflow.handler()) as runner:
        arn = runner.run_async(input=json.dumps({"sessionId": session_id}), execution_timeout=HANG_SECONDS)
        callback = runner.wait_for_callback(arn, timeout=HANG_SECONDS)
        view = waiting(make_service(), session_id, callback)
        assert workflow.starts == 2 and workflow.ran() == [], "the submitter ran again, the workflow waits"
        if ending == "approved":
            [asked] = view.interactions
            make_service().submit_approval(session_id, view.turn_id, asked.request_id, APPROVE, WORKFLOW)
        else:
            make_service().cancel(session_id, view.turn_id, WORKFLOW)
        turn = settled(make_service(), session_id, callback)
        tell(runner, callback, turn)
        result = runner.wait_for_result(arn, timeout=HANG_SECONDS)

    assert result.status is InvocationStatus.SUCCEEDED, result.error
    turns = [i for i in session_items(store_of(make_service()), session_id) if i.get("entity") == "turn"]
    assert [t["turn_id"] for t in turns if t.get("parent_turn_id") is None] == [turn.turn_id]
    if ending == "approved":
        assert json.loads(result.result or "{}") == {"paid": turn.output}
        assert workflow.ran() == ["paid"] and executions(ledger) == ["delete prod-db"]
    else:
        assert json.loads(result.result or "{}") == {"reopened": turn.turn_id}
        assert workflow.ran() == ["reopened after canceled"] and executions(ledger) == []
    assert turns[0]["started_by"] == WORKFLOW


def test_by_default_the_turn_is_started_as_the_durable_function_itself() -> None:
    class Lambda:
        invoked_function_arn = f"{WORKFLOW}:live"

    class Context:
        lambda_context = Lambda()

    assert workflow_of(Context()) == WORKFLOW
    with pytest.raises(ValueError, match="pass principal="):
        workflow_of(object())

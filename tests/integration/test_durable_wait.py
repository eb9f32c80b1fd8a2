"""A Lambda durable function waits for a turn with resumable.integrations.durable.wait_for_turn, run by
the durable execution SDK's own local runner (its testing SDK), which replays the workflow from its
start at every invocation, as Lambda does; the service tells it through the embedded AWS, which hands
the callback operations to that runner (resumable.local.durable_callbacks).

Its submitter dies once after StartTurn replied, so the SDK runs it again: one turn, the approved
action run once, the workflow's next step run once, the outcome (or the error named for how the turn
ended) handed to the workflow. The callback is completed once: when the settling invocation could not
tell it (Lambda failed, or the invocation died before or after sending), the sweeper does; a callback
Lambda no longer completes is recorded, counted and never sent again."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_durable_execution_sdk_python.context import DurableContext
from aws_durable_execution_sdk_python.execution import InvocationStatus, durable_execution
from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

from resumable.api.direct import start_turn as direct_start
from resumable.integrations.durable import TurnCanceled, callback_session_id, wait_for_turn, workflow_of
from resumable.local import durable_callbacks
from resumable.service import Service
from resumable.service.ids import callback_turn_id, valid_session_id
from resumable.service.views import TurnView
from resumable.store.codec import CALLBACK_GRACE
from tests.clock import FakeClock
from tests.factories import executions
from tests.integration.helpers import APPROVE, session_items, store_of
from tests.metrics import forget_metrics, printed_metrics
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
    view = eventually(lambda: service.get_turn(session_id, callback_turn_id(session_id, callback)), "the turn")
    assert view.status not in ("running", "waiting"), view
    return view


def waiting(service: Service, session_id: str, callback: str) -> TurnView:
    def asked() -> TurnView | None:
        tree = store_of(service).load_tree(session_id, callback_turn_id(session_id, callback))
        return service.get_turn(session_id, tree.root.turn_id) if tree and tree.root.status == "waiting" else None

    return eventually(asked, "the turn waiting for its approval")


@pytest.fixture
def runner(workflow: Workflow) -> Iterator[DurableFunctionTestRunner]:
    """The SDK's local runner of the workflow, which the embedded AWS hands its callbacks to."""
    with DurableFunctionTestRunner(handler=workflow.handler()) as running, durable_callbacks.answering(running):
        yield running


@pytest.fixture
def workflow(make_service: Callable[..., Service], tmp_path: Path) -> Workflow:
    return Workflow(make_service, tmp_path / "steps.log")


def begun(runner: DurableFunctionTestRunner, session_id: str) -> str:
    """The workflow started; its execution's ARN."""
    arn = runner.run_async(input=json.dumps({"sessionId": session_id}), execution_timeout=HANG_SECONDS)
    return arn


@pytest.mark.parametrize("ending", ["approved", "canceled"])
def test_a_workflow_waits_for_its_turn_and_goes_on_once_with_its_outcome_though_its_submitter_ran_twice(
    make_service: Callable[..., Service],
    session_id: str,
    ledger: Path,
    workflow: Workflow,
    runner: DurableFunctionTestRunner,
    ending: str,
) -> None:
    arn = begun(runner, session_id)
    callback = runner.wait_for_callback(arn, timeout=HANG_SECONDS)
    view = waiting(make_service(), session_id, callback)
    # The turn waits once the first start replied; the SDK runs the submitter again after that.
    eventually(lambda: True if workflow.starts == 2 else None, "the submitter's second start")
    assert workflow.ran() == [], "the submitter ran again, the workflow waits"
    if ending == "approved":
        [asked] = view.interactions
        make_service().submit_approval(session_id, view.turn_id, asked.request_id, APPROVE, WORKFLOW)
    else:
        make_service().cancel(session_id, view.turn_id, WORKFLOW)
    turn = settled(make_service(), session_id, callback)
    result = runner.wait_for_result(arn, timeout=HANG_SECONDS)

    assert result.status is InvocationStatus.SUCCEEDED, result.error
    assert workflow.starts == 2, "the replays ran the submitter no more"
    turns = [i for i in session_items(store_of(make_service()), session_id) if i.get("entity") == "turn"]
    assert [t["turn_id"] for t in turns if t.get("parent_turn_id") is None] == [turn.turn_id]
    if ending == "approved":
        assert json.loads(result.result or "{}") == {"paid": turn.output}
        assert workflow.ran() == ["paid"] and executions(ledger) == ["delete prod-db"]
    else:
        assert json.loads(result.result or "{}") == {"reopened": turn.turn_id}
        assert workflow.ran() == ["reopened after canceled"] and executions(ledger) == []
    assert turns[0]["started_by"] == WORKFLOW


def test_a_session_named_for_a_callback_says_which_execution_asks_and_is_the_same_at_every_replay() -> None:
    execution = f"{WORKFLOW}:3/durable-execution/claim-17/4e9a1c"
    named = callback_session_id("Y2FsbGJhY2s=", execution)
    assert named.startswith("durable-claim-17-") and named == callback_session_id("Y2FsbGJhY2s=", execution)
    assert callback_session_id("b3RoZXI=", execution) != named, "another callback, another session"
    assert valid_session_id(named) and valid_session_id(callback_session_id("Y2FsbGJhY2s=", "uuid/inv-1"))
    assert callback_session_id("Y2FsbGJhY2s=", "uuid/inv-1").startswith("durable-") and "inv" not in named


def test_by_default_the_turn_is_started_as_the_durable_function_itself() -> None:
    class Lambda:
        invoked_function_arn = f"{WORKFLOW}:live"

    class Context:
        lambda_context = Lambda()

    assert workflow_of(Context()) == WORKFLOW
    with pytest.raises(ValueError, match="pass principal="):
        workflow_of(object())


class NeverHeardError(Exception):
    """Lambda's reply never reaches the settling invocation (it failed, or the invocation died)."""


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_callback_its_settling_could_not_send_is_sent_by_the_sweeper_and_the_next_step_runs_once(
    make_service: Callable[..., Service],
    session_id: str,
    ledger: Path,
    clock: FakeClock,
    workflow: Workflow,
    runner: DurableFunctionTestRunner,
    when: str,
) -> None:
    """``before``: Lambda failed (the workflow was not told); ``after``: Lambda completed the callback and
    the invocation died before it recorded so (the sweeper's send is refused: told already)."""
    arn = begun(runner, session_id)
    callback = runner.wait_for_callback(arn, timeout=HANG_SECONDS)
    view = waiting(make_service(), session_id, callback)
    settling = make_service()
    client = settling.deps.callbacks.client  # type: ignore[union-attr]
    fired: list[str] = []

    def fail(**_: Any) -> None:
        fired.append(when)
        raise NeverHeardError(f"{when} SendDurableExecutionCallbackSuccess")

    client.meta.events.register(f"{when}-call.lambda.SendDurableExecutionCallbackSuccess", fail)
    [asked] = view.interactions
    done = settling.submit_approval(session_id, view.turn_id, asked.request_id, APPROVE, WORKFLOW)
    assert done.status == "completed" and fired == [when]
    stored = store_of(settling).load_tree(session_id, view.turn_id)
    assert stored is not None and stored.root.callback_told is None, "not recorded as told"
    assert make_service().sweep().told == 0, "not due yet: the settling invocation may still tell it"

    clock.advance(CALLBACK_GRACE + 1)
    assert make_service().sweep().told == (1 if when == "before" else 0), "after: refused, recorded closed"
    result = runner.wait_for_result(arn, timeout=HANG_SECONDS)
    assert result.status is InvocationStatus.SUCCEEDED and json.loads(result.result or "{}") == {"paid": done.output}
    told = store_of(settling).load_tree(session_id, view.turn_id)
    assert told is not None and told.root.callback_told == ("delivered" if when == "before" else "closed")
    clock.advance(3600)
    assert make_service().sweep().told == 0, "told once: never sent again"
    assert workflow.ran() == ["paid"] and executions(ledger) == ["delete prod-db"]


def test_a_callback_lambda_no_longer_completes_is_recorded_counted_and_never_sent_again(
    make_service: Callable[..., Service],
    session_id: str,
    clock: FakeClock,
    counting: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Its execution stopped (here: no execution has the callback, which Lambda refuses the same way)."""
    forget_metrics(capsys)
    callback = base64.b64encode(b"an execution that stopped").decode()
    view = make_service().start_turn(session_id, PROMPT, WORKFLOW, callback_id=callback)
    done = make_service().cancel(session_id, view.turn_id, WORKFLOW)
    assert done.status == "canceled"
    stored = store_of(make_service()).load_tree(session_id, view.turn_id)
    assert stored is not None and stored.root.callback_told == "closed"
    assert printed_metrics(capsys).get("UndeliveredCallbacks") == [1]
    clock.advance(CALLBACK_GRACE + 3600)
    assert make_service().sweep().told == 0
    assert make_service().recover(session_id, view.turn_id).status == "canceled"
    assert printed_metrics(capsys).get("UndeliveredCallbacks") is None, "never sent again"

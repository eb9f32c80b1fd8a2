"""A durable function that waits with a heartbeat timeout hears from the sweeper every third of it while
its turn waits for people, and from nobody once the turn settled; one whose execution ended is recorded
and never sent to again."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aws_durable_execution_sdk_python.context import DurableContext
from aws_durable_execution_sdk_python.execution import InvocationStatus, durable_execution
from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

from resumable.api.direct import start_turn as direct_start
from resumable.exceptions import ValidationFailedError
from resumable.integrations.durable import wait_for_turn
from resumable.local import durable_callbacks
from resumable.service import Service
from resumable.service.ids import callback_turn_id
from tests.clock import FakeClock
from tests.integration.helpers import APPROVE, store_of
from tests.metrics import forget_metrics, printed_metrics
from tests.patience import HANG_SECONDS, eventually

PROMPT = "delete the prod-db record"
WORKFLOW = "arn:aws:lambda:us-west-2:123456789012:function:claims-pipeline"
HEARTBEAT = 300


@pytest.fixture
def runner(make_service: Callable[..., Service]) -> Iterator[DurableFunctionTestRunner]:
    @durable_execution
    def claims(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
        start = lambda e: direct_start(make_service(), e)  # noqa: E731
        turn = wait_for_turn(
            context, event["sessionId"], PROMPT, principal=WORKFLOW, start=start, heartbeat_seconds=HEARTBEAT
        )
        return {"status": turn["status"]}

    with DurableFunctionTestRunner(handler=claims) as running, durable_callbacks.answering(running):
        yield running


def test_the_sweeper_sends_a_heartbeat_every_third_of_the_timeout_while_the_turn_waits_and_none_after(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, runner: DurableFunctionTestRunner
) -> None:
    arn = runner.run_async(input=json.dumps({"sessionId": session_id}), execution_timeout=HANG_SECONDS)
    callback = runner.wait_for_callback(arn, timeout=HANG_SECONDS)
    turn_id = callback_turn_id(session_id, callback)

    def waiting() -> Any:
        tree = store_of(make_service()).load_tree(session_id, turn_id)
        return tree if tree is not None and tree.root.status == "waiting" else None

    tree = eventually(waiting, "the turn waiting")
    assert tree.root.callback_heartbeat == HEARTBEAT
    assert make_service().sweep().heartbeats == 0, "not due yet"
    beats = []
    for _ in range(3):
        clock.advance(HEARTBEAT / 3 + 1)
        beats.append(make_service().sweep().heartbeats)
        clock.advance(HEARTBEAT / 6)
        beats.append(make_service().sweep().heartbeats)
    assert beats == [1, 0, 1, 0, 1, 0]
    stored = store_of(make_service()).load_tree(session_id, turn_id)
    assert stored is not None and stored.root.callback_told is None, "each heartbeat taken"

    [asked] = make_service().get_turn(session_id, turn_id).interactions
    make_service().submit_approval(session_id, turn_id, asked.request_id, APPROVE, WORKFLOW)
    result = runner.wait_for_result(arn, timeout=HANG_SECONDS)
    assert result.status is InvocationStatus.SUCCEEDED and json.loads(result.result or "{}") == {"status": "completed"}
    clock.advance(HEARTBEAT)
    assert make_service().sweep().heartbeats == 0, "settled: nobody waits"


def test_a_heartbeat_lambda_refuses_is_recorded_counted_and_the_settling_sends_nothing(
    make_service: Callable[..., Service],
    session_id: str,
    clock: FakeClock,
    counting: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    forget_metrics(capsys)
    callback = base64.b64encode(b"an execution that timed out").decode()
    view = make_service().start_turn(session_id, PROMPT, WORKFLOW, callback_id=callback, heartbeat_seconds=HEARTBEAT)
    clock.advance(HEARTBEAT / 3 + 1)
    assert make_service().sweep().heartbeats == 0
    stored = store_of(make_service()).load_tree(session_id, view.turn_id)
    assert stored is not None and stored.root.callback_told == "closed" and stored.root.status == "waiting"
    assert printed_metrics(capsys).get("UndeliveredCallbacks") == [1]
    clock.advance(HEARTBEAT)
    assert make_service().sweep().heartbeats == 0
    assert make_service().cancel(session_id, view.turn_id, WORKFLOW).status == "canceled"
    assert printed_metrics(capsys).get("UndeliveredCallbacks") is None, "nothing sent again"


@pytest.mark.parametrize(
    ("heartbeat", "callback"), [(299, "YQ=="), (300, None)], ids=["shorter_than_the_sweeper_keeps", "no_callback"]
)
def test_a_heartbeat_that_cannot_be_kept_starts_nothing(
    make_service: Callable[..., Service], session_id: str, heartbeat: int, callback: str | None
) -> None:
    with pytest.raises(ValidationFailedError, match=r"cannot be kept.*nothing was started"):
        make_service().start_turn(session_id, PROMPT, WORKFLOW, callback_id=callback, heartbeat_seconds=heartbeat)
    event = {"sessionId": session_id, "prompt": PROMPT, "principal": WORKFLOW, "callbackId": "YQ=="}
    for bad in (True, "300", 0, -5, 1.5):
        with pytest.raises(ValidationFailedError, match="heartbeatSeconds"):
            direct_start(make_service(), {**event, "heartbeatSeconds": bad})
    assert make_service().store.get_session(session_id) is None

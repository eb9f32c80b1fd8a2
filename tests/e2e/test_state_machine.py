"""The approval state machine (statemachines/approval.asl.json) executed by moto against the embedded
AWS. Its Lambda tasks run the real handlers in this process; a person answers through the local API.

Approve, deny, cancel and timeout, a turn that settles before the workflow stores its token, and a
workflow that is never told (its wait times out and reads the turn)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from resumable.api.app import forget
from resumable.aws.clients import client
from resumable.aws.stepfunctions import TaskTokens
from resumable.config import Settings
from resumable.exceptions import AwsError
from resumable.local.template import InProcessLambda, create_state_machine, functions_in_process
from resumable.store import DynamoDBStore
from resumable.store.records import TurnTree
from tests.e2e.local_api import APPROVER, call
from tests.integration.helpers import APPROVE
from tests.patience import HANG_SECONDS, eventually

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lambdas(handler_environment: Settings) -> Iterator[InProcessLambda]:
    with functions_in_process() as router:
        yield router


@pytest.fixture(scope="module")
def machine(handler_environment: Settings, lambdas: InProcessLambda) -> str:
    return create_state_machine(handler_environment, name=f"approval-{uuid.uuid4().hex[:8]}")


def start(settings: Settings, machine: str, prompt: str) -> tuple[str, str]:
    """Start an execution in a new session: (session id, execution ARN)."""
    session = f"wf-{uuid.uuid4().hex[:10]}"
    execution = client("stepfunctions", settings).start_execution(
        stateMachineArn=machine, name=session, input=json.dumps({"sessionId": session, "prompt": prompt})
    )["executionArn"]
    return session, str(execution)


def waiting_with_token(settings: Settings, session: str, other_than: str | None = None) -> TurnTree:
    """The session's turn once it waits and the workflow has stored its task token on it (a token
    other than ``other_than``)."""
    store = DynamoDBStore(settings)

    def found() -> TurnTree | None:
        session_record = store.get_session(session)
        if session_record is None or session_record.active_turn_id is None:
            return None
        tree = store.load_tree(session, session_record.active_turn_id)
        if tree is not None and tree.root.task_token and tree.root.task_token != other_than:
            return tree
        return None

    return eventually(found, f"session {session} waiting with a task token")


def finished(settings: Settings, execution: str) -> dict[str, Any]:
    sfn = client("stepfunctions", settings)

    def described() -> dict[str, Any] | None:
        execution_state: dict[str, Any] = sfn.describe_execution(executionArn=execution)
        return execution_state if execution_state["status"] != "RUNNING" else None

    return eventually(described, f"the end of execution {execution}")


def answer(url: str, tree: TurnTree, response: Any) -> tuple[int, Any]:
    [interaction] = tree.interactions
    path = f"/sessions/{tree.root.session_id}/turns/{tree.root.turn_id}/interactions/{interaction.request_id}"
    return call(url, "POST", path, {"response": response}, principal=APPROVER)


def test_approve_the_workflow_succeeds_with_the_completed_turn(
    handler_environment: Settings, machine: str, url: str
) -> None:
    session, execution = start(handler_environment, machine, "delete the prod-db record")
    tree = waiting_with_token(handler_environment, session)
    assert tree.root.workflow and tree.root.principal == machine  # the state machine owns the session
    status, turn = answer(url, tree, {"decision": "approve"})
    assert (status, turn["status"]) == (200, "completed")

    done = finished(handler_environment, execution)
    assert done["status"] == "SUCCEEDED"
    output = json.loads(done["output"])
    assert (output["turnId"], output["status"], output["output"]) == (
        tree.root.turn_id,
        "completed",
        "record prod-db deleted",
    )
    assert output["interactions"][0]["answeredBy"] == APPROVER


def test_deny_the_workflow_succeeds_with_the_turn_that_did_not_act(
    handler_environment: Settings, machine: str, url: str
) -> None:
    session, execution = start(handler_environment, machine, "delete the staging-db record")
    tree = waiting_with_token(handler_environment, session)
    status, turn = answer(url, tree, {"decision": "deny", "message": "not today"})
    assert (status, turn["status"]) == (200, "completed")

    done = finished(handler_environment, execution)
    assert done["status"] == "SUCCEEDED"
    output = json.loads(done["output"])
    assert output["status"] == "completed"
    assert "deleted" not in output["output"] and output["interactions"][0]["response"]["decision"] == "deny"


def test_cancel_the_workflow_fails_with_turn_canceled(handler_environment: Settings, machine: str, url: str) -> None:
    session, execution = start(handler_environment, machine, "delete the test-db record")
    tree = waiting_with_token(handler_environment, session)
    status, turn = call(url, "POST", f"/sessions/{session}/turns/{tree.root.turn_id}/cancel", principal=APPROVER)
    assert (status, turn["status"]) == (200, "canceled")

    done = finished(handler_environment, execution)
    assert (done["status"], done["error"]) == ("FAILED", "Turn.Canceled")
    cause = json.loads(done["cause"])
    assert (cause["turnId"], cause["status"]) == (tree.root.turn_id, "canceled")
    assert cause["interactions"][0]["status"] == "superseded"


@pytest.fixture
def short_expiry(
    handler_environment: Settings, lambdas: InProcessLambda, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """A state machine and handlers whose approvals expire after 3 seconds (and whose reads ask for a
    continuation of a turn idle for 1)."""
    monkeypatch.setenv("APPROVAL_EXPIRY_SECONDS", "3")
    monkeypatch.setenv("STALL_SECONDS", "1")
    forget()
    yield create_state_machine(
        handler_environment.model_copy(update={"approval_expiry_seconds": 3}), name=f"short-{uuid.uuid4().hex[:8]}"
    )
    monkeypatch.undo()
    forget()


def test_timeout_expires_the_pending_interactions(handler_environment: Settings, short_expiry: str, url: str) -> None:
    session, execution = start(handler_environment, short_expiry, "delete the prod-db record")
    tree = waiting_with_token(handler_environment, session)

    done = finished(handler_environment, execution)
    assert (done["status"], done["error"]) == ("FAILED", "Turn.Expired")
    cause = json.loads(done["cause"])
    assert cause["status"] == "expired" and cause["interactions"][0]["status"] == "expired"
    # The turn itself is settled expired: answering now is refused (410), nothing runs.
    status, refused = answer(url, tree, {"decision": "approve"})
    assert (status, refused["code"]) == (410, "gone")


def test_a_turn_that_settles_before_the_token_is_stored_is_read_instead(
    handler_environment: Settings, url: str
) -> None:
    """The race the token's condition closes: the turn is canceled between StartTurn's reply and the
    wait storing its token. The token is refused and the workflow reads the settled turn."""
    with functions_in_process() as router:
        start_turn = router.handlers["StartTurnFunction"]

        def start_then_cancel(event: dict[str, Any], context: Any) -> Any:
            reply = start_turn(event, context)
            turn = reply["turn"]
            path = f"/sessions/{turn['sessionId']}/turns/{turn['turnId']}/cancel"
            assert call(url, "POST", path, principal=APPROVER)[1]["status"] == "canceled"
            return reply

        router.handlers["StartTurnFunction"] = start_then_cancel
        machine = create_state_machine(handler_environment, name=f"race-{uuid.uuid4().hex[:8]}")
        session, execution = start(handler_environment, machine, "delete the prod-db record")
        done = finished(handler_environment, execution)
    assert (done["status"], done["error"]) == ("FAILED", "Turn.Canceled")
    assert json.loads(done["cause"])["status"] == "canceled"
    found = DynamoDBStore(handler_environment).get_session(session)
    assert found is not None
    assert DynamoDBStore(handler_environment).get_task_token(session, json.loads(done["cause"])["turnId"]) is None


def test_a_workflow_that_was_never_told_reads_the_turn_when_its_wait_times_out(
    handler_environment: Settings, short_expiry: str, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Telling the workflow fails (Step Functions unreachable): the approval still completes the turn,
    and the workflow's wait times out, reads the completed turn and succeeds with it."""

    def unreachable(*_: Any) -> Any:
        raise AwsError("Step Functions is unreachable")

    monkeypatch.setattr(TaskTokens, "succeed", unreachable)
    session, execution = start(handler_environment, short_expiry, "delete the prod-db record")
    tree = waiting_with_token(handler_environment, session)
    status, turn = answer(url, tree, {"decision": "approve"})
    assert (status, turn["status"]) == (200, "completed")

    done = finished(handler_environment, execution)
    assert done["status"] == "SUCCEEDED"
    assert json.loads(done["output"])["output"] == "record prod-db deleted"
    assert "TaskTimedOut" in history(handler_environment, execution)  # it learnt it by reading


def history(settings: Settings, execution: str) -> list[str]:
    events = client("stepfunctions", settings).get_execution_history(executionArn=execution)["events"]
    return [str(e["type"]) for e in events]


def test_what_a_caller_of_send_task_success_claims_is_not_the_outcome(
    handler_environment: Settings, machine: str, url: str
) -> None:
    """Anyone who can read the token and call SendTaskSuccess only wakes the workflow up: it reads the
    turn itself, finds it still waiting, and waits again; the real outcome (here a cancel) ends it."""
    session, execution = start(handler_environment, machine, "delete the prod-db record")
    tree = waiting_with_token(handler_environment, session)
    forged = {"sessionId": session, "turnId": tree.root.turn_id, "status": "completed", "output": "forged"}
    assert tree.root.task_token is not None
    client("stepfunctions", handler_environment).send_task_success(
        taskToken=tree.root.task_token, output=json.dumps(forged)
    )
    # The workflow reads the turn (a second task scheduled), then waits again on a new token.
    eventually(lambda: history(handler_environment, execution).count("TaskScheduled") >= 2 or None, "the re-read")
    assert client("stepfunctions", handler_environment).describe_execution(executionArn=execution)["status"] == (
        "RUNNING"
    )
    waiting_with_token(handler_environment, session, other_than=tree.root.task_token)
    status, _ = call(url, "POST", f"/sessions/{session}/turns/{tree.root.turn_id}/cancel", principal=APPROVER)
    assert status == 200
    done = finished(handler_environment, execution)
    assert (done["status"], done["error"]) == ("FAILED", "Turn.Canceled")


def test_a_turn_whose_resume_was_lost_is_continued_by_the_workflows_read_and_completes(
    handler_environment: Settings, short_expiry: str
) -> None:
    """The answer is recorded but the invocation that should resume the turn died: the wait times
    out, ReadTurn finds the turn stalled and has it continued (SubmitApproval, asynchronously), and
    the workflow ends with the completed turn."""
    session, execution = start(handler_environment, short_expiry, "delete the prod-db record")
    tree = waiting_with_token(handler_environment, session)
    [interaction] = tree.interactions
    store = DynamoDBStore(handler_environment)
    answered = store.answer_interaction(
        session, tree.root.turn_id, interaction.request_id, APPROVE, APPROVER, time.time(), approval_shaped=True
    )
    assert answered.outcome == "answered"  # and nobody resumes the turn

    done = finished(handler_environment, execution)
    assert done["status"] == "SUCCEEDED"
    assert json.loads(done["output"])["output"] == "record prod-db deleted"


def test_the_embedded_aws_makes_state_machines_and_parameters_without_importing_moto_ec2_which_it_still_serves() -> (
    None
):
    """moto's Step Functions interpreter needs one enum of moto.batch and SSM's backend names EC2's, and
    each package would import all of moto's EC2 (a second or two of every process's start): the
    embedded AWS imports them only when they are used."""
    probe = """
import sys
from resumable.local.embedded_aws import embedded_aws
from resumable.local.template import create_state_machine
from resumable.aws.clients import client
with embedded_aws() as settings:
    create_state_machine(settings)
    client("ssm", settings).put_parameter(Name="/probe", Value="1", Type="String")
    without = "moto.ec2.models" not in sys.modules
    import moto.batch, moto.ec2
    queues = client("batch", settings).describe_job_queues()["jobQueues"]
    zones = client("ec2", settings).describe_availability_zones()["AvailabilityZones"]
    ec2 = moto.ec2.ec2_backends["123456789012"]
    print(without, len(moto.batch.batch_backends) > 0, "us-east-1" in ec2, queues, bool(zones))
"""
    ran = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_SECONDS, check=False
    )
    assert ran.stdout.split() == ["True", "True", "True", "[]", "True"], ran.stdout + ran.stderr

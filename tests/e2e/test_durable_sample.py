"""The sample durable workflow (template.yaml's ApprovalDurableFunction, workflows/durable_approval/) as
``make run`` runs it: the durable execution SDK's local runner, started by Lambda's ``Invoke`` of the
function sent to the embedded AWS, read back by ``GetDurableExecution``; the turn it starts runs the
real handlers in this process, and a person answers through the local API.

Approve and cancel; an execution name given twice starts one execution and one turn; what Lambda
refuses of a durable function (an unqualified name) is refused the same way."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from resumable import demo_agents
from resumable.aws.clients import client
from resumable.config import Settings
from resumable.local import durable_workflows
from resumable.local.functions import function_arn
from resumable.local.template import InProcessLambda, functions_in_process
from resumable.store import DynamoDBStore
from resumable.store.records import TurnTree
from tests.e2e.local_api import APPROVER, call
from tests.integration.helpers import session_items
from tests.patience import eventually

pytestmark = pytest.mark.slow

SAMPLE = "ApprovalDurableFunction"


@pytest.fixture(scope="module")
def lambdas(handler_environment: Settings) -> Iterator[InProcessLambda]:
    with pytest.MonkeyPatch.context() as env, functions_in_process() as router:
        env.setenv("CONTINUE_FUNCTION", function_arn("SubmitApprovalFunction"))
        env.setenv("RESUMABLE_START_TURN_FUNCTION", function_arn("StartTurnFunction"))
        with durable_workflows.running():
            yield router


@pytest.fixture
def record(monkeypatch: pytest.MonkeyPatch) -> str:
    """A record of the demo's database of this test's own (the demo's are deleted by other tests)."""
    name = f"claims-{uuid.uuid4().hex[:6]}"
    monkeypatch.setitem(demo_agents.DATABASE, name, "claims")
    return name


def invoke(settings: Settings, payload: dict[str, Any], name: str, function: str = f"{SAMPLE}:live") -> str:
    """The durable execution ``name`` of the sample, started asynchronously; its ARN."""
    said = client("lambda", settings).invoke(
        FunctionName=function, InvocationType="Event", DurableExecutionName=name, Payload=json.dumps(payload)
    )
    assert said["StatusCode"] == 202
    return str(said["DurableExecutionArn"])


def waiting(settings: Settings, session: str) -> TurnTree:
    store = DynamoDBStore(settings)

    def found() -> TurnTree | None:
        record = store.get_session(session)
        tree = store.load_tree(session, record.active_turn_id) if record and record.active_turn_id else None
        return tree if tree is not None and tree.root.status == "waiting" else None

    return eventually(found, f"session {session}'s turn waiting for its approval")


def finished(settings: Settings, arn: str) -> dict[str, Any]:
    lam = client("lambda", settings)

    def described() -> dict[str, Any] | None:
        said: dict[str, Any] = lam.get_durable_execution(DurableExecutionArn=arn)
        return said if said["Status"] != "RUNNING" else None

    return eventually(described, f"the end of durable execution {arn}")


def test_approved_the_workflow_goes_on_once_with_the_completed_turn(
    handler_environment: Settings, lambdas: InProcessLambda, url: str, record: str
) -> None:
    session = f"df-{uuid.uuid4().hex[:10]}"
    payload = {"sessionId": session, "prompt": f"delete the {record} record"}
    arn = invoke(handler_environment, payload, session)
    tree = waiting(handler_environment, session)
    assert tree.root.principal == function_arn(SAMPLE), "the turn is the durable function's own"
    again = invoke(handler_environment, payload, session)  # (a retried Invoke with the same name)
    assert again == arn, "the same execution name starts nothing new"
    assert arn.startswith(f"{function_arn(SAMPLE)}:1/durable-execution/{session}/"), arn  # (Lambda's shape)
    with pytest.raises(ClientError) as other:
        invoke(handler_environment, payload | {"prompt": "delete the prod-db record"}, session)
    assert other.value.response["Error"]["Code"] == "DurableExecutionAlreadyStartedException"

    [asked] = tree.interactions
    path = f"/sessions/{session}/turns/{tree.root.turn_id}/interactions/{asked.request_id}"
    status, turn = call(url, "POST", path, {"response": {"decision": "approve"}}, principal=APPROVER)
    assert (status, turn["status"]) == (200, "completed")

    done = finished(handler_environment, arn)
    assert done["Status"] == "SUCCEEDED" and done["Version"] == "1", done  # (the alias live's version)
    outcome = {"outcome": "completed", "turnId": tree.root.turn_id, "output": f"record {record} deleted"}
    assert json.loads(done["Result"]) == outcome
    assert demo_agents.DELETIONS.count(record) == 1, "the approved action ran once"
    turns = [i for i in session_items(DynamoDBStore(handler_environment), session) if i.get("entity") == "turn"]
    assert [t["turn_id"] for t in turns if t.get("parent_turn_id") is None] == [tree.root.turn_id], "one turn"


def test_canceled_the_workflow_goes_on_with_the_outcome_canceled(
    handler_environment: Settings, lambdas: InProcessLambda, url: str, record: str
) -> None:
    session = f"df-{uuid.uuid4().hex[:10]}"
    arn = invoke(handler_environment, {"sessionId": session, "prompt": f"delete the {record} record"}, session)
    tree = waiting(handler_environment, session)
    status, turn = call(url, "POST", f"/sessions/{session}/turns/{tree.root.turn_id}/cancel", principal=APPROVER)
    assert (status, turn["status"]) == (200, "canceled")

    done = finished(handler_environment, arn)
    assert done["Status"] == "SUCCEEDED", done
    assert json.loads(done["Result"]) == {"outcome": "canceled", "turnId": tree.root.turn_id}
    assert record in demo_agents.DATABASE and demo_agents.DELETIONS.count(record) == 0


def test_what_lambda_refuses_of_a_durable_function_is_refused(
    handler_environment: Settings, lambdas: InProcessLambda
) -> None:
    name = f"df-{uuid.uuid4().hex[:10]}"
    with pytest.raises(ClientError) as refused:
        invoke(handler_environment, {"prompt": "delete the prod-db record"}, name, function=SAMPLE)
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValueException"
    assert "qualified" in refused.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as named:
        invoke(handler_environment, {"prompt": "x"}, "not a name!")
    assert named.value.response["Error"]["Code"] == "InvalidParameterValueException"

    with pytest.raises(ClientError) as unparsed:
        client("lambda", handler_environment).invoke(
            FunctionName=f"{SAMPLE}:live", InvocationType="Event", DurableExecutionName=name, Payload=b"{not json"
        )
    assert unparsed.value.response["Error"]["Code"] == "InvalidRequestContentException"

    arn = invoke(handler_environment, {"sessionId": name}, name)  # (no prompt: the workflow fails, saying so)
    done = finished(handler_environment, arn)
    assert done["Status"] == "FAILED" and 'needs {"prompt"' in done["Error"]["ErrorMessage"], done
    with pytest.raises(ClientError) as unknown:
        client("lambda", handler_environment).get_durable_execution(DurableExecutionArn="nowhere/1")
    assert unknown.value.response["Error"]["Code"] == "ResourceNotFoundException"


@pytest.mark.parametrize("dies", [{1}, {2}, {1, 2}, {0}])
def test_the_workflow_replayed_after_each_invocation_died_starts_one_turn_and_goes_on_once(
    handler_environment: Settings, url: str, record: str, dies: set[int]
) -> None:
    """The first (1) or second (2) invocation of the workflow to run (the start, to its wait; then a
    replay, to its wait or its end) dies after its checkpoints, before Lambda heard it; or (0) the first
    dies before the workflow's code ran. Lambda runs the invocation again, which replays the workflow
    from its checkpoints: one turn, the approved action once, the step after the turn once."""
    from resumable.local.functions import durable_functions, load_handler, load_template

    sample = load_handler(durable_functions(load_template())[SAMPLE], here=True)
    invocations: list[str] = []

    def dying(event: dict[str, Any], context: Any) -> Any:
        invocations.append("invoked")
        if 0 in dies and len(invocations) == 1:
            raise ConnectionError("the sandbox died before the workflow's code ran")
        said = sample(event, context)
        ended = len([i for i in invocations if i == "ran"]) + 1
        invocations.append("ran")
        if ended in dies and invocations.count(f"died {ended}") == 0:
            invocations.append(f"died {ended}")
            raise ConnectionError(f"invocation {ended} died after its checkpoints, before Lambda heard it")
        return said

    with pytest.MonkeyPatch.context() as env, functions_in_process():
        env.setenv("CONTINUE_FUNCTION", function_arn("SubmitApprovalFunction"))
        env.setenv("RESUMABLE_START_TURN_FUNCTION", function_arn("StartTurnFunction"))
        with durable_workflows.running({SAMPLE: dying}) as running:
            runner = running[SAMPLE].runner
            runner._executor.RETRY_BACKOFF_SECONDS = 0  # (Lambda's retry of a failed invocation, at once)
            session = f"df-{uuid.uuid4().hex[:10]}"
            arn = invoke(handler_environment, {"sessionId": session, "prompt": f"delete the {record} record"}, session)
            tree = waiting(handler_environment, session)
            [asked] = tree.interactions
            path = f"/sessions/{session}/turns/{tree.root.turn_id}/interactions/{asked.request_id}"
            assert call(url, "POST", path, {"response": {"decision": "approve"}}, principal=APPROVER)[0] == 200
            done = finished(handler_environment, arn)
            history = runner.get_execution_history(running[SAMPLE].runs[arn]).events

    assert done["Status"] == "SUCCEEDED", done
    assert json.loads(done["Result"])["output"] == f"record {record} deleted"
    assert demo_agents.DELETIONS.count(record) == 1, "the approved action ran once"
    turns = [i for i in session_items(DynamoDBStore(handler_environment), session) if i.get("entity") == "turn"]
    assert len([t for t in turns if t.get("parent_turn_id") is None]) == 1, "one turn"
    after = [e.event_type for e in history if getattr(e, "name", None) == "after the turn"]
    assert after == ["StepStarted", "StepSucceeded"], "the step after the turn ran once"
    died = {int(i.split()[1]) for i in invocations if i.startswith("died")} | ({0} if 0 in dies else set())
    assert died == dies, invocations


def test_a_start_that_start_turn_refuses_for_good_is_not_tried_again_and_the_workflow_fails_saying_why(
    handler_environment: Settings, lambdas: InProcessLambda
) -> None:
    name = f"df-{uuid.uuid4().hex[:10]}"
    arn = invoke(handler_environment, {"sessionId": "a/b c", "prompt": "delete the prod-db record"}, name)
    done = finished(handler_environment, arn)
    assert done["Status"] == "FAILED" and "session id" in done["Error"]["ErrorMessage"], done
    runner = durable_workflows.RUNNING[SAMPLE][-1]
    history = runner.runner.get_execution_history(runner.runs[arn]).events
    tries = [e.event_type for e in history if getattr(e, "name", None) == "approval submitter"]
    assert tries.count("StepStarted") == 1, tries


def test_a_dry_run_starts_nothing_an_unknown_alias_is_not_found_and_an_inner_run_leaves_the_outer_answering(
    handler_environment: Settings, lambdas: InProcessLambda
) -> None:
    lam = client("lambda", handler_environment)
    dry = lam.invoke(FunctionName=f"{SAMPLE}:live", InvocationType="DryRun", Payload=b'{"prompt": "x"}')
    assert dry["StatusCode"] == 204 and "DurableExecutionArn" not in dry
    with pytest.raises(ClientError) as unknown:
        invoke(handler_environment, {"prompt": "x"}, f"df-{uuid.uuid4().hex[:10]}", function=f"{SAMPLE}:prod")
    assert unknown.value.response["Error"]["Code"] == "ResourceNotFoundException"
    outer = durable_workflows.RUNNING[SAMPLE][-1]
    with durable_workflows.running() as inner:
        assert durable_workflows.RUNNING[SAMPLE][-1] is inner[SAMPLE]
    assert durable_workflows.RUNNING[SAMPLE][-1] is outer, "the outer run answers again"
    name = f"df-{uuid.uuid4().hex[:10]}"
    arn = invoke(handler_environment, {"sessionId": name, "prompt": "hello"}, name)
    assert finished(handler_environment, arn)["Status"] == "SUCCEEDED" and arn in outer.runs
    with pytest.raises(ClientError) as unserved:
        lam.get_durable_execution_history(DurableExecutionArn=arn)
    assert unserved.value.response["Error"]["Code"] == "NotImplementedException"

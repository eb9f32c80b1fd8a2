"""docs/runbook.md, entry by entry: each failure made on the embedded AWS behind the local API, then
the entry's check, fix and validate steps followed with the ``resumable`` command as it prints them
(and, for an ``aws`` step, the same call through boto3)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from resumable import demo_agents
from resumable.api.app import forget
from resumable.aws.clients import client
from resumable.aws.eventbridge import Entry
from resumable.cli.main import _parser
from resumable.config import Settings
from resumable.events.publisher import Publishing
from resumable.local.events import EventResources, publishing, read_events
from resumable.local.functions import ROOT
from resumable.local.template import create_state_machine, functions_in_process
from resumable.store import DynamoDBStore, S3Snapshots
from tests.e2e.local_api import APPROVER, cli
from tests.patience import eventually

pytestmark = pytest.mark.slow

RUNBOOK = ROOT / "docs" / "runbook.md"
DEAD_RUNNER = "dead-runner"


@pytest.fixture(scope="module")
def credentials(local_credentials: Path) -> Path:
    return local_credentials


def resumable(url: str, credentials: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command as the runbook types it, signed as the approver profile (an operator)."""
    return cli(url, credentials, *args, profile="approver")


def ok(ran: subprocess.CompletedProcess[str]) -> str:
    assert ran.returncode == 0, f"exit {ran.returncode}: {ran.stderr}{ran.stdout}"
    return ran.stdout


def started(url: str, credentials: Path, session: str) -> tuple[str, str]:
    """A turn of the demo, waiting on its approval: (turn id, request id)."""
    turn = json.loads(ok(resumable(url, credentials, "--json", "start", session, "delete the prod-db record")))
    assert turn["status"] == "waiting"
    return turn["turnId"], turn["interactions"][0]["requestId"]


def answered_unresumed(settings: Settings, session: str, turn: str, request: str) -> None:
    """The answer recorded by an invocation that then died before it resumed the turn."""
    store = DynamoDBStore(settings)
    outcome = store.answer_interaction(
        session, turn, request, {"decision": "approve"}, APPROVER, time.time(), approval_shaped=True
    )
    assert outcome.outcome == "answered"


def runbook_entries() -> list[str]:
    return re.findall(r"^## (.+)$", RUNBOOK.read_text(), flags=re.MULTILINE)


# -- the runbook as a document ----------------------------------------------------------------------------


def test_every_entry_says_symptom_check_cause_fix_validate_and_has_its_test() -> None:
    text = RUNBOOK.read_text()
    entries = runbook_entries()
    assert len(entries) == 9
    for title, body in zip(entries, re.split(r"^## .+$", text, flags=re.MULTILINE)[1:], strict=True):
        for part in ("**Symptom.**", "**Check.**", "**Cause.**", "**Fix.**", "**Validate.**"):
            assert part in body, f"{title}: {part}"
        name = "test_" + re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")
        assert name in globals(), f"the entry {title!r} has no test {name}"


def test_every_resumable_command_in_the_runbook_is_one_the_command_takes() -> None:
    commands = [
        line.split("#")[0].strip() for line in RUNBOOK.read_text().splitlines() if line.strip().startswith("resumable ")
    ]
    commands += [c for c in re.findall(r"`(resumable [^`]+)`", RUNBOOK.read_text()) if "$STACK" in c]
    assert len(commands) > 15
    parser = _parser()
    for command in commands:
        words = [w if not w.startswith('"$(') else "https://sqs.example/queue" for w in shlex.split(command)[1:]]
        words = [w.replace('"', "") for w in words]
        try:
            parser.parse_args(words)
        except SystemExit as refused:
            raise AssertionError(f"the runbook's {command!r} is not a command resumable takes") from refused


# -- each entry -------------------------------------------------------------------------------------------


@contextmanager
def publisher(settings: Settings, refuse: set[str] | None = None) -> Iterator[EventResources]:
    """The Publisher reading the table's stream onto a bus of its own; its bus refuses the events of the
    sessions in ``refuse`` while they are there (``refuse`` may change meanwhile)."""
    own = settings.model_copy(update={"event_bus_name": f"bus-{uuid.uuid4().hex[:8]}"})
    refused = refuse if refuse is not None else set()

    def handler(given: Settings) -> Any:
        made = Publishing(given)
        put_all = made.bus.put_all

        def bus(source: str, entries: list[Entry]) -> list[str | None]:
            taken = [e for e in entries if json.loads(e.detail)["sessionId"] not in refused]
            outcome = iter(put_all(source, taken))
            refusal = "bus refused the event (AccessDeniedException: not authorized to PutEvents)"
            return [next(outcome) if e in taken else refusal for e in entries]

        made.bus.put_all = bus  # type: ignore[method-assign]
        return made.handle

    with publishing(own, handler) as (resources, _):
        yield resources


def test_a_question_nobody_was_told_about(handler_environment: Settings, url: str, credentials: Path) -> None:
    with publisher(handler_environment) as resources:
        session = f"told-{uuid.uuid4().hex[:6]}"
        turn, request = started(url, credentials, session)

        # Check: is it there, and was its event published?
        assert request in ok(resumable(url, credentials, "inbox"))

        def published() -> str | None:
            shown = ok(resumable(url, credentials, "admin", "inspect", session, turn))
            return shown if re.search(r"Interaction Requested\s+1\s+published", shown) else None

        eventually(published, "the question's event published, with its sequence number")
        [event] = [
            e for e in read_events(resources.events_queue_url, idle_seconds=0) if e["detail"]["sessionId"] == session
        ]
        assert event["detail-type"] == "Interaction Requested" and event["detail"]["requestId"] == request


def test_a_turn_stuck_running(handler_environment: Settings, url: str, credentials: Path) -> None:
    session = f"stuck-{uuid.uuid4().hex[:6]}"
    turn, request = started(url, credentials, session)
    answered_unresumed(handler_environment, session, turn, request)
    now = time.time()  # the resume's runner took the lease, and died: it expired a while ago
    leased = DynamoDBStore(handler_environment).acquire_lease(
        session, turn, DEAD_RUNNER, now - 200, now - 80, takeover=False
    )
    assert leased is not None
    assert "running" in ok(resumable(url, credentials, "show", session, turn)).splitlines()[0]

    # Check.
    [row] = [r for r in ok(resumable(url, credentials, "admin", "stuck")).splitlines() if turn in r]
    assert "runner_gone" in row and " no " in f" {row} "
    assert DEAD_RUNNER in ok(resumable(url, credentials, "admin", "inspect", session, turn))
    # Fix.
    recovered = ok(resumable(url, credentials, "admin", "recover", session, turn))
    # Validate.
    assert "completed" in recovered.splitlines()[0]
    assert "completed" in ok(resumable(url, credentials, "show", session, turn)).splitlines()[0]
    assert turn not in ok(resumable(url, credentials, "admin", "stuck"))
    assert demo_agents.DELETIONS == ["prod-db"], "the approved action ran once"


def test_a_turn_waiting_that_nobody_can_see(handler_environment: Settings, url: str, credentials: Path) -> None:
    session = f"unseen-{uuid.uuid4().hex[:6]}"
    turn, request = started(url, credentials, session)
    answered_unresumed(handler_environment, session, turn, request)

    # Check.
    shown = ok(resumable(url, credentials, "show", session, turn))
    assert "waiting" in shown.splitlines()[0] and f"{request}  approved" in shown
    assert request not in ok(resumable(url, credentials, "inbox"))
    [row] = [r for r in ok(resumable(url, credentials, "admin", "stuck")).splitlines() if turn in r]
    assert "answered_unresumed" in row
    # Fix.
    ok(resumable(url, credentials, "admin", "recover", session, turn))
    # Validate.
    done = json.loads(ok(resumable(url, credentials, "--json", "show", session, turn)))
    assert (done["status"], done["actionsInDoubt"]) == ("completed", [])
    assert demo_agents.DELETIONS == ["prod-db"]


def test_messages_in_a_dead_letter_queue(handler_environment: Settings, url: str, credentials: Path) -> None:
    """A continuation Lambda gave up on (its OnFailure destination's record), and the turn it was to
    move on: the queue says which, and --redrive moves it on and empties the queue."""
    session = f"dlq-{uuid.uuid4().hex[:6]}"
    turn, request = started(url, credentials, session)
    answered_unresumed(handler_environment, session, turn, request)
    sqs = client("sqs", handler_environment)
    queue = sqs.create_queue(QueueName=f"continuations-{uuid.uuid4().hex[:6]}")["QueueUrl"]
    sqs.send_message(QueueUrl=queue, MessageBody=json.dumps(_destination_record(session, turn)))

    # Check.
    listed = ok(resumable(url, credentials, "admin", "dead-letters", queue))
    assert f"a continuation of turn {turn} in session {session} (RetriesExhausted)" in listed
    assert f"deal with it: resumable admin recover {session} {turn}" in listed
    # Fix.
    redriven = ok(resumable(url, credentials, "admin", "dead-letters", queue, "--redrive"))
    assert "1 dealt with and deleted, 0 left" in redriven
    # Validate: the queue is empty (not merely hiding what was read: nothing in flight either).
    assert "0 message(s)" in ok(resumable(url, credentials, "admin", "dead-letters", queue))
    depth = sqs.get_queue_attributes(
        QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    assert depth == {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"}
    assert "completed" in ok(resumable(url, credentials, "show", session, turn)).splitlines()[0]


def _destination_record(session: str, turn: str) -> dict[str, Any]:
    """What Lambda sends an asynchronous invocation's OnFailure destination once its retries are spent."""
    return {
        "version": "1.0",
        "timestamp": "2026-12-02T10:00:00.000Z",
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:resumable-SubmitApproval:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 3,
        },
        "requestPayload": {"continueTurn": {"sessionId": session, "turnId": turn}},
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {"errorMessage": "Task timed out after 60.00 seconds"},
    }


def test_a_snapshot_that_cannot_be_loaded(handler_environment: Settings, url: str, credentials: Path) -> None:
    session = f"snap-{uuid.uuid4().hex[:6]}"
    turn, request = started(url, credentials, session)
    key = DynamoDBStore(handler_environment).load_tree(session, turn).root.snapshot_key  # type: ignore[union-attr]
    s3 = S3Snapshots(handler_environment).s3
    backup = s3.get_object(Bucket=handler_environment.bucket_name, Key=key)["Body"].read()
    s3.delete_object(Bucket=handler_environment.bucket_name, Key=key)
    answered = ok(resumable(url, credentials, "approve", "--yes", session, turn, request))
    assert "waiting" in answered.splitlines()[0]

    # Check.
    shown = ok(resumable(url, credentials, "show", session, turn))
    assert "error: the turn's snapshot cannot be loaded" in shown and "does not exist" in shown
    inspected = ok(resumable(url, credentials, "admin", "inspect", session, turn))
    [row] = [r for r in inspected.splitlines() if r.startswith(str(key))]
    assert "snapshot_key" in row and "does not exist" in row
    # Fix: the object back from the backup (aws s3 cp BACKUP s3://BUCKET/KEY), then recover.
    s3.put_object(Bucket=handler_environment.bucket_name, Key=key, Body=backup)
    recovered = ok(resumable(url, credentials, "admin", "recover", session, turn))
    # Validate.
    assert "completed" in recovered.splitlines()[0]
    assert demo_agents.DELETIONS == ["prod-db"]


@pytest.fixture
def short_questions(handler_environment: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The approval state machine, running its tasks in this process, with questions that expire after
    3 seconds (until the test sets the usual expiry again: ``usual_questions``)."""
    with functions_in_process() as lambdas:
        monkeypatch.setenv("APPROVAL_EXPIRY_SECONDS", "3")
        forget()
        machine = create_state_machine(
            handler_environment.model_copy(update={"approval_expiry_seconds": 3}), name=f"short-{uuid.uuid4().hex[:8]}"
        )
        try:
            yield machine
        finally:
            lambdas.wait()  # nothing of the executions runs on after the test
            monkeypatch.undo()
            forget()


def usual_questions(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> str:
    """The approval state machine with the usual expiry (a day), the handlers too."""
    monkeypatch.delenv("APPROVAL_EXPIRY_SECONDS")
    forget()
    return create_state_machine(settings, name=f"usual-{uuid.uuid4().hex[:8]}")


def test_a_workflow_execution_that_timed_out(
    handler_environment: Settings,
    url: str,
    credentials: Path,
    short_questions: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sfn = client("stepfunctions", handler_environment)
    session = f"wf-{uuid.uuid4().hex[:8]}"
    execution = sfn.start_execution(
        stateMachineArn=short_questions,
        name=session,
        input=json.dumps({"sessionId": session, "prompt": "delete the prod-db record"}),
    )["executionArn"]

    # Check: aws stepfunctions describe-execution, then resumable show.
    ended = eventually(
        lambda: ((d := sfn.describe_execution(executionArn=execution))["status"] != "RUNNING" and d) or None,
        "the execution's end",
    )
    assert (ended["status"], ended["error"]) == ("FAILED", "Turn.Expired")
    turn = json.loads(ended["cause"])["turnId"]
    assert "expired" in ok(resumable(url, credentials, "show", session, turn)).splitlines()[0]
    # Fix: a new execution (aws stepfunctions start-execution), with a longer ApprovalExpirySeconds, its
    # question answered in time.
    # (Here a state machine of its own, so a session of its own: a state machine owns the sessions it
    # starts. With the stack's one state machine, the same session goes on.)
    retried = f"{session}-again"
    again = sfn.start_execution(
        stateMachineArn=usual_questions(handler_environment, monkeypatch),
        name=retried,
        input=json.dumps({"sessionId": retried, "prompt": "delete the prod-db record"}),
    )["executionArn"]

    def asked() -> tuple[str, str] | None:
        execution = sfn.describe_execution(executionArn=again)
        assert execution["status"] == "RUNNING", execution  # it waits on its question
        listed = json.loads(ok(resumable(url, credentials, "--json", "inbox")))["interactions"]
        mine = [i for i in listed if i["sessionId"] == retried]
        return (mine[0]["turnId"], mine[0]["requestId"]) if mine else None

    new_turn, request = eventually(asked, "the new execution's question in the inbox")
    ok(resumable(url, credentials, "approve", "--yes", retried, new_turn, request))
    # Validate.
    done = eventually(
        lambda: ((d := sfn.describe_execution(executionArn=again))["status"] != "RUNNING" and d) or None,
        "the new execution's end",
    )
    assert done["status"] == "SUCCEEDED"


def test_dynamodb_throttling(url: str, credentials: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The table throttles the answer's transaction: the client is told nothing was answered and to
    retry; the same answer again goes through, and the action runs once."""
    from botocore.client import BaseClient
    from botocore.exceptions import ClientError

    session = f"throttle-{uuid.uuid4().hex[:6]}"
    turn, request = started(url, credentials, session)
    real = BaseClient._make_api_call
    throttled = [0]

    def throttling(self: Any, operation: str, params: dict[str, Any]) -> Any:
        # The answer's transaction, of this session (nothing else running in the process is touched).
        if operation == "TransactWriteItems" and session in json.dumps(params) and throttled[0] < 1:
            throttled[0] += 1
            error = {"Code": "ProvisionedThroughputExceededException", "Message": "Rate of requests exceeds"}
            raise ClientError({"Error": error}, operation)
        return real(self, operation, params)

    monkeypatch.setattr(BaseClient, "_make_api_call", throttling)
    refused = resumable(url, credentials, "approve", "--yes", session, turn, request)
    assert refused.returncode == 1 and "500 aws_failed" in refused.stderr and "retry" in refused.stderr
    # Check: nothing was answered, nothing is left behind.
    assert f"{request}  waiting" in ok(resumable(url, credentials, "show", session, turn))
    assert turn not in ok(resumable(url, credentials, "admin", "stuck"))
    # Fix: the client retries the same answer. Validate.
    assert "completed" in ok(resumable(url, credentials, "approve", "--yes", session, turn, request)).splitlines()[0]
    assert demo_agents.DELETIONS == ["prod-db"]


def test_a_client_confused_by_409_or_410(url: str, credentials: Path) -> None:
    session = f"confused-{uuid.uuid4().hex[:6]}"
    turn, request = started(url, credentials, session)
    ok(resumable(url, credentials, "approve", "--yes", session, turn, request))
    conflict = resumable(url, credentials, "deny", session, turn, request, "--message", "no")
    assert conflict.returncode == 4 and "409 conflict: you already answered interaction" in conflict.stderr
    assert "you already answered interaction" in conflict.stderr and 'with {"decision":"approve"}' in conflict.stderr
    # Check: the answer that stands, and who gave it.
    shown = ok(resumable(url, credentials, "show", session, turn))
    assert "completed" in shown.splitlines()[0] and f"{request}  approved" in shown and APPROVER in shown
    # The same answer again is safe: it returns the turn.
    assert "completed" in ok(resumable(url, credentials, "approve", "--yes", session, turn, request)).splitlines()[0]

    second = f"{session}-2"
    turn, request = started(url, credentials, second)
    ok(resumable(url, credentials, "cancel", second, turn))
    gone = resumable(url, credentials, "approve", "--yes", second, turn, request)
    assert gone.returncode == 5 and "410 gone" in gone.stderr
    shown = ok(resumable(url, credentials, "show", second, turn))
    assert "canceled" in shown.splitlines()[0] and f"{request}  superseded" in shown


def test_an_outbox_that_does_not_drain(handler_environment: Settings, url: str, credentials: Path) -> None:
    session = f"drain-{uuid.uuid4().hex[:6]}"
    refused = {session}
    with publisher(handler_environment, refused) as resources:
        turn, _ = started(url, credentials, session)
        sqs = client("sqs", handler_environment)
        eventually(
            lambda: (
                int(
                    sqs.get_queue_attributes(
                        QueueUrl=resources.dead_letter_queue_url, AttributeNames=["ApproximateNumberOfMessages"]
                    )["Attributes"]["ApproximateNumberOfMessages"]
                )
                or None
            ),
            "the publisher giving the batch up to its dead-letter queue",
        )

        # Check.
        inspected = ok(resumable(url, credentials, "admin", "inspect", session, turn))
        assert re.search(r"Interaction Requested\s+\S+\s+unpublished", inspected)
        listed = ok(resumable(url, credentials, "admin", "dead-letters", resources.dead_letter_queue_url))
        assert f"a batch of session {session}'s events the publisher gave up on" in listed
        assert f"deal with it: resumable admin republish {session}" in listed
        # Fix: the cause mended (the bus takes the events again), then the redrive.
        refused.clear()
        redriven = ok(
            resumable(url, credentials, "admin", "dead-letters", resources.dead_letter_queue_url, "--redrive")
        )
        assert "1 dealt with and deleted" in redriven

        # Validate.
        def numbered() -> str | None:
            shown = ok(resumable(url, credentials, "admin", "inspect", session, turn))
            return shown if re.search(r"Interaction Requested\s+1\s+published", shown) else None

        eventually(numbered, "the event published at last, numbered 1")
        delivered = [
            e for e in read_events(resources.events_queue_url, idle_seconds=0) if e["detail"]["sessionId"] == session
        ]
        assert [e["detail-type"] for e in delivered] == ["Interaction Requested"]
        assert ok(resumable(url, credentials, "admin", "republish", session)).startswith(
            f"session {session}: 0 unpublished event(s)"
        )


def test_dead_letters_it_cannot_make_out_are_shown_and_left_and_the_rest_dealt_with(
    handler_environment: Settings, url: str, credentials: Path
) -> None:
    session = f"mixed-{uuid.uuid4().hex[:6]}"
    turn, request = started(url, credentials, session)
    answered_unresumed(handler_environment, session, turn, request)
    sqs = client("sqs", handler_environment)
    queue = sqs.create_queue(QueueName=f"mixed-{uuid.uuid4().hex[:6]}")["QueueUrl"]
    stream = "arn:aws:dynamodb:us-east-1:1:table/t/stream/x"
    batch = {
        "DDBStreamBatchInfo": {
            "shardId": "1",
            "startSequenceNumber": "1",
            "endSequenceNumber": "2",
            "batchSize": 1,
            "streamArn": stream,
        }
    }
    for body in ("not json at all", json.dumps(batch), json.dumps(_destination_record(session, turn))):
        sqs.send_message(QueueUrl=queue, MessageBody=body)

    redriven = resumable(url, credentials, "admin", "dead-letters", queue, "--redrive")

    assert redriven.returncode == 1, redriven.stderr  # it left some
    assert redriven.stdout.count("    left: nothing resumable can redrive") == 2
    assert "3 message(s): 1 dealt with and deleted, 2 left in the queue" in redriven.stdout
    assert "completed" in ok(resumable(url, credentials, "show", session, turn)).splitlines()[0]
    again = ok(resumable(url, credentials, "admin", "dead-letters", queue))
    assert "2 message(s): 0 dealt with and deleted, 2 left in the queue" in again, "the rest visible again"
    wrong = resumable(url, credentials, "admin", "dead-letters", "notaurl")
    assert wrong.returncode == 2 and "is not a queue's URL" in wrong.stderr

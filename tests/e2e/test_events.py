"""Every sample event in events/ runs through the handler template.yaml routes it to: the API's, the
state machine's direct invocations and the table stream's."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from moto.events.models import EventPattern as OutboxFilter

from resumable.api.app import continue_function
from resumable.config import Settings
from resumable.exceptions import BadRequestError, NotFoundError, ValidationFailedError
from resumable.local.events import create_event_resources, read_events
from resumable.local.functions import ROOT, LambdaContext, function_arn, functions, load_template, routes
from resumable.store import DynamoDBStore
from resumable.store.resources import OUTBOX_FILTER
from tests.patience import eventually
from tools.invoke import invoke

EVENTS = sorted((ROOT / "events").glob("*.json"))
# Direct invocations, as the state machine sends them, by the function they go to.
DIRECT_EVENTS = sorted((ROOT / "events" / "stepfunctions").glob("*.json"))
# What each event gets from a store that has never seen its session: the start creates a turn, the
# reads of ids that do not exist are 404 with {code, message}, the listing too (the session is unknown);
# the inbox is a page (alice's own sessions' questions: none).
EXPECTED = {
    "start_turn": 201,
    "get_turn": 404,
    "get_conversation": 404,
    "submit_approval": 404,
    "dismiss_interaction": 404,
    "undismiss_interaction": 404,
    "cancel": 404,
    "delete_session": 404,
    # The operator's routes, called by alice, who is no approver.
    "admin_stuck": 403,
    "admin_inspect": 403,
    "admin_recover": 403,
    "admin_republish": 403,
    "list_audit": 403,  # (approvers only, too)
    "verify_audit": 403,
    "list_grants": 200,  # (alice's sessions' grants: none)
    "revoke_grant": 404,
    "restore_session": 404,
    "list_interactions": 404,
    "list_inbox": 200,
    "get_interaction": 404,
    "openapi": 200,
    "inbox_page": 200,
    # No authorizer: a decision link that is not one (links are off here), a page either way.
    "decision_link_page": 404,
    "decide_by_link": 404,
    # Signed by Slack with the sample's secret, on 2026-11-30: refused as a replay, answering nothing.
    "slack_interactions": 401,
}
SAMPLE_SIGNING_SECRET = "sample-signing-secret"


def test_there_is_an_event_for_every_route() -> None:
    declared = {f"{r.method} {r.path}" for r in routes(load_template())}
    covered = {json.loads(path.read_text())["routeKey"] for path in EVENTS}
    assert covered == declared


@pytest.mark.parametrize("path", EVENTS, ids=[p.stem for p in EVENTS])
def test_every_event_runs_through_its_function(path: Path, handler_environment: Settings) -> None:
    event: dict[str, Any] = json.loads(path.read_text())
    route = next(r for r in routes(load_template()) if f"{r.method} {r.path}" == event["routeKey"])
    # A route without an authorizer (the inbox page) gets no authorizer in its event, as on AWS.
    context = {"accountId", "apiId", "http", "requestId", "routeKey"} | ({"authorizer"} if route.authorized else set())
    assert set(event["requestContext"]) >= context
    assert route.authorized == ("authorizer" in event["requestContext"])
    with pytest.MonkeyPatch.context() as env:
        if route.function == "SlackFunction":  # (made only with its configuration: the sample's)
            _configure_slack(env, handler_environment)
        reply = invoke(route.function, event)
    assert reply["statusCode"] == EXPECTED[path.stem]
    if reply["headers"].get("Content-Type", "").startswith("text/html"):
        title = "resumable inbox" if path.stem == "inbox_page" else "Not a link that decides"
        assert f"<title>{title}</title>" in reply["body"]
        return
    body = json.loads(reply["body"])
    if reply["statusCode"] >= 400:
        assert set(body) == {"code", "message"}


def _configure_slack(env: pytest.MonkeyPatch, settings: Settings) -> None:
    from resumable.aws.clients import client

    secret = client("secretsmanager", settings).create_secret(
        Name=f"sample-slack-{uuid.uuid4().hex[:8]}",
        SecretString=json.dumps({"botToken": "xoxb-sample", "signingSecret": SAMPLE_SIGNING_SECRET}),
    )
    for name, value in {
        "SLACK_CHANNEL": "C0APPROVALS",
        "SLACK_SECRET_ARN": secret["ARN"],
        "SLACK_TEAMS": "T0TEAM",
    }.items():
        env.setenv(name, value)


def test_the_slack_sample_is_signed_as_slack_signs_and_only_its_age_refuses_it(handler_environment: Settings) -> None:
    """The sample's body is base64, as API Gateway sends a form: decoded, its signature holds, and only
    the clock says no (negative control for its 401: the same request at the time it was signed is read)."""
    import base64

    from resumable.slack.interactivity import acknowledge

    event = json.loads((ROOT / "events" / "slack_interactions.json").read_text())
    body = base64.b64decode(event["body"])
    signed_at = float(event["headers"]["x-slack-request-timestamp"])
    ack = acknowledge(body, event["headers"], SAMPLE_SIGNING_SECRET, now=signed_at + 1)
    assert (ack.status, ack.click is not None and ack.click.kind) == (200, "approve")
    assert acknowledge(body, event["headers"], "another-secret", now=signed_at + 1).status == 401


def test_there_is_a_direct_event_for_every_function_the_state_machine_invokes() -> None:
    definition = (ROOT / "statemachines" / "approval.asl.json").read_text()
    invoked = {name for name in functions(load_template()) if "${" + name + "Arn}" in definition}
    assert invoked == {"StartTurnFunction", "GetTurnFunction"}
    assert {f"{''.join(w.title() for w in p.stem.split('_'))}Function" for p in DIRECT_EVENTS} == invoked


@pytest.mark.parametrize("path", DIRECT_EVENTS, ids=[p.stem for p in DIRECT_EVENTS])
def test_every_direct_event_runs_through_its_function(path: Path, handler_environment: Settings) -> None:
    """The start pauses for its approval; the read of a turn that does not exist is refused with the
    error a state machine would catch."""
    event: dict[str, Any] = json.loads(path.read_text())
    function = "".join(word.title() for word in path.stem.split("_"))
    event["sessionId"] = f"{event['sessionId']}-{uuid.uuid4().hex[:6]}"
    if path.stem == "start_turn":
        reply = invoke(function, event)
        turn = reply["turn"]
        assert (turn["sessionId"], turn["status"]) == (event["sessionId"], "waiting")
        assert turn["interactions"][0]["reason"]["input"] == {"name": "staging-db"}
        # The workflow waits until the question expires (the approval expiry, to the second).
        assert 86_390 <= reply["waitSeconds"] <= 86_401
    else:
        with pytest.raises(NotFoundError):
            invoke(function, event)


@pytest.mark.parametrize(
    "event",
    [{}, {"sessionId": "s", "prompt": "delete x"}, {"sessionId": "s", "prompt": 3, "principal": "p"}],
    ids=["empty", "no principal", "prompt not a string"],
)
def test_a_direct_event_that_is_not_the_use_cases_input_is_refused_and_writes_nothing(
    event: dict[str, Any], handler_environment: Settings
) -> None:
    with pytest.raises(ValidationFailedError, match="the event is not a StartTurnEvent"):
        invoke("StartTurn", event)
    assert DynamoDBStore(handler_environment).get_session("s") is None


def test_acontinue_function_event_names_a_turn_or_is_refused(handler_environment: Settings) -> None:
    with pytest.raises(ValidationFailedError, match="continueTurn needs sessionId and turnId"):
        invoke("SubmitApproval", {"continueTurn": {"sessionId": "s"}})
    with pytest.raises(NotFoundError):
        invoke("SubmitApproval", {"continueTurn": {"sessionId": "s", "turnId": "0123456789abcdef0123456789abcdef"}})


@pytest.mark.parametrize(
    ("function", "event"),
    [
        ("SubmitApproval", {"sessionId": "s", "turnId": "t", "requestId": "r", "response": {}, "principal": "p"}),
        ("Cancel", {"sessionId": "s", "turnId": "t"}),
        ("StartTurn", {"continueTurn": {"sessionId": "s", "turnId": "t"}}),
        ("GetTurn", {"continueTurn": {"sessionId": "s", "turnId": "t"}}),
        ("Cancel", {"continueTurn": {"sessionId": "s", "turnId": "t"}}),
    ],
    ids=["answer", "cancel", "continue-on-start", "continue-on-get", "continue-on-cancel"],
)
def test_answers_and_cancels_come_only_through_the_http_api(
    function: str, event: dict[str, Any], handler_environment: Settings
) -> None:
    """Direct invocation names any principal it likes: only the state machine's start and read, and
    the continuation of a turn with the answers already recorded, are accepted that way."""
    with pytest.raises(BadRequestError, match="nothing was done"):
        invoke(function, event)


def test_the_sample_schedule_event_runs_the_sweeper_and_it_refuses_anything_else(
    handler_environment: Settings,
) -> None:
    """events/schedules/sweep.json, as EventBridge's schedule sends it: one run of the sweeper (an
    empty table: nothing due). Any other event is refused, saying what it takes."""
    declared = {name for name, r in load_template()["Resources"].items() if "Schedule" in str(r.get("Properties"))}
    assert "SweeperFunction" in declared
    event: dict[str, Any] = json.loads((ROOT / "events" / "schedules" / "sweep.json").read_text())
    assert invoke("Sweeper", event) == {
        "looked": 0,
        "moved": {},
        "notYet": 0,
        "givenUp": 0,
        "stuck": 0,
        "failed": 0,
        "expired": 0,
    }
    with pytest.raises(ValidationFailedError, match="Scheduled Event"):
        invoke("Sweeper", {"sessionId": "s", "turnId": "t"})


def test_without_continue_function_only_the_continuing_function_checkpoints() -> None:
    """StartTurn refuses continueTurn, so it must not ask itself for one: without CONTINUE_FUNCTION
    its runs never checkpoint; SubmitApproval (which takes continuations) continues through itself."""
    context = LambdaContext("StartTurnFunction", "r", invoked_function_arn=function_arn("StartTurnFunction"))
    assert continue_function(Settings(), context, continues=False) is None
    assert continue_function(Settings(), context, continues=True) == function_arn("StartTurnFunction")
    named = Settings(continue_function=function_arn("SubmitApprovalFunction"))
    assert continue_function(named, context, continues=False) == function_arn("SubmitApprovalFunction")


def test_the_sample_stream_event_runs_through_the_publisher_onto_the_bus(handler_environment: Settings) -> None:
    """events/streams/outbox_insert.json, as the table's stream delivers an outbox item: once the item
    is in the table (it is, when the stream delivers it), the Publisher numbers and publishes it."""
    event: dict[str, Any] = json.loads((ROOT / "events" / "streams" / "outbox_insert.json").read_text())
    [record] = event["Records"]
    assert OutboxFilter.load(json.dumps(OUTBOX_FILTER)).matches_event(record)
    store = DynamoDBStore(handler_environment)
    image = record["dynamodb"]["NewImage"]
    store.dynamodb.put_item(TableName=store.table, Item={"pk": image["pk"], "sk": {"S": "SESSION"}})
    store.dynamodb.put_item(TableName=store.table, Item=image)
    resources = create_event_resources(handler_environment)
    assert invoke("Publisher", event) == {"batchItemFailures": []}
    [published] = eventually(lambda: list(read_events(resources.events_queue_url, idle_seconds=0)) or None, "the event")
    assert (published["detail-type"], published["detail"]["sequence"]) == ("Interaction Requested", 1)
    assert invoke("Publisher", event) == {"batchItemFailures": []}, "a redelivery publishes it again"
    [again] = eventually(lambda: list(read_events(resources.events_queue_url, idle_seconds=0)) or None, "it again")
    assert again["detail"] == published["detail"], "the same event: same eventId, same sequence"

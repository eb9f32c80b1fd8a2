"""The Slack function as the template deploys it, on this machine: the bus's events delivered to it by
the template's rule, each question posted to the Slack stand-in with its buttons, presses signed as
Slack signs them and sent to POST /slack/interactions on the local API (no authorizer: the signature
is the check), acknowledged at once and answered by the function's asynchronous invocation of itself,
and the message updated in place however the question settles."""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from resumable.api.app import forget
from resumable.aws.clients import client
from resumable.config import Settings
from resumable.local.events import publishing
from resumable.local.functions import function_arn, load_template
from resumable.local.slack import CHANNEL, TEAM, USER, LocalSlack, slack_locally
from resumable.local.slack_standin import Posted, SlackStandIn, signed
from resumable.local.template import functions_in_process
from resumable.slack.requests import HANDED_ON_MAX_AGE_SECONDS, MAX_AGE_SECONDS
from tests.e2e.local_api import call
from tests.factories import LEDGER_ENV, executions
from tests.patience import eventually
from tests.slack import requested

ANN = "arn:aws:iam::000000000000:user/approver-ann"


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("slack") / "ledger"


@pytest.fixture(scope="module")
def slack(handler_environment: Settings, url: str, ledger: Path) -> Iterator[LocalSlack]:
    """make run's Slack: the stand-in, the secret, the function's environment, the bus's events; the
    agents ask to delete prod-db (editable), and the stand-in's user U0LOCAL answers as ann."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("API_URL", url)
        env.setenv("AGENT_FACTORY", "tests.factories:nested_editable")
        env.setenv(LEDGER_ENV, str(ledger))
        forget()
        with (
            functions_in_process(),
            publishing(handler_environment) as (_, settings),
            slack_locally(settings, f"{url}/slack/interactions", ANN) as local,
        ):
            for variable, value in local.environment.items():
                env.setenv(variable, value)
            yield local
        forget()


def _ask(url: str, session: str) -> dict[str, Any]:
    status, turn = call(url, "POST", f"/sessions/{session}/turns", {"prompt": "delete"})
    assert status == 201 and turn["status"] == "waiting", turn
    return turn


def _message(stand_in: SlackStandIn, request_id: str, says: str = "") -> Posted:
    def found() -> Posted | None:
        posted = [m for m in stand_in.in_channel(CHANNEL) if m.request_id == request_id]
        return posted[0] if posted and says in (posted[0].text or "") else None

    return eventually(found, f"the message of {request_id} saying {says!r}")


def _told(stand_in: SlackStandIn, user: str, count: int = 1) -> list[str]:
    def found() -> list[str] | None:
        said = [text for who, text in stand_in.ephemeral if who == user]
        return said if len(said) >= count else None

    return eventually(found, f"{count} notes to {user}")


def _turn(url: str, session: str, turn: dict[str, Any], status: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        read = call(url, "GET", f"/sessions/{session}/turns/{turn['turnId']}")[1]
        return read if read["status"] == status else None

    return eventually(found, f"turn {turn['turnId']} {status}")


def test_a_question_is_posted_approved_by_a_press_and_its_message_updated_in_place(
    slack: LocalSlack, url: str, ledger: Path
) -> None:
    turn = _ask(url, "slack-approve")
    request_id = turn["interactions"][0]["requestId"]
    message = _message(slack.stand_in, request_id)
    assert "delete_record" in (message.text or "") and f"{url}/inbox#q-{request_id}" in str(message.blocks)
    already = len(slack.stand_in.ephemeral)
    status, body = slack.stand_in.send(slack.stand_in.press(request_id, "approve", USER))
    assert (status, body) == (200, "")  # acknowledged at once; answered after
    assert _turn(url, "slack-approve", turn, "completed")["interactions"][0]["answeredBy"] == ANN
    assert _buttons(_message(slack.stand_in, request_id, "Approved by")) == []
    assert _told(slack.stand_in, USER, already + 1)[-1] == "You approved it. The turn is completed."
    assert executions(ledger).count("delete prod-db") >= 1


def test_deny_opens_its_modal_at_once_and_its_submission_denies_with_the_message(slack: LocalSlack, url: str) -> None:
    turn = _ask(url, "slack-deny")
    request_id = turn["interactions"][0]["requestId"]
    _message(slack.stand_in, request_id)
    opened = len(slack.stand_in.views)
    assert slack.stand_in.send(slack.stand_in.press(request_id, "deny", USER))[0] == 200
    assert len(slack.stand_in.views) == opened + 1  # opened within the request: the trigger id lasts 3 s
    assert slack.stand_in.send(slack.stand_in.submit(USER, "not prod"))[0] == 200
    settled = _turn(url, "slack-deny", turn, "completed")
    assert settled["interactions"][0]["response"] == {"decision": "deny", "message": "not prod"}
    _message(slack.stand_in, request_id, "Denied by")


def test_edit_opens_the_input_and_approves_what_was_typed(slack: LocalSlack, url: str, ledger: Path) -> None:
    turn = _ask(url, "slack-edit")
    request_id = turn["interactions"][0]["requestId"]
    _message(slack.stand_in, request_id)
    assert slack.stand_in.send(slack.stand_in.press(request_id, "edit", USER))[0] == 200
    assert '"prod-db"' in str(slack.stand_in.views[-1])
    assert slack.stand_in.send(slack.stand_in.submit(USER, '{"name": "staging-db"}'))[0] == 200
    settled = _turn(url, "slack-edit", turn, "completed")
    assert settled["interactions"][0]["response"]["input"] == {"name": "staging-db"}
    assert "delete staging-db" in executions(ledger)


def test_a_bad_signature_or_an_old_request_is_refused_and_answers_nothing(slack: LocalSlack, url: str) -> None:
    turn = _ask(url, "slack-refused")
    request_id = turn["interactions"][0]["requestId"]
    _message(slack.stand_in, request_id)
    payload = slack.stand_in.press(request_id, "approve", USER)
    for body, headers in (signed(payload, "not-the-signing-secret"), signed(payload, slack.stand_in.signing_secret, 1)):
        status, reply = _post(url, body, headers)
        assert status == 401, reply
    status, body = call(url, "GET", f"/sessions/slack-refused/turns/{turn['turnId']}")
    assert body["status"] == "waiting" and body["interactions"][0]["status"] == "requested"


def test_a_user_the_mapping_does_not_name_is_told_so_and_nothing_is_recorded(slack: LocalSlack, url: str) -> None:
    turn = _ask(url, "slack-stranger")
    request_id = turn["interactions"][0]["requestId"]
    _message(slack.stand_in, request_id)
    stranger = "U0STRANGER"  # (of the workspace, with a confirmed address the mapping does not name)
    slack.stand_in.users[stranger] = {
        "team_id": "T0LOCAL",
        "is_email_confirmed": True,
        "profile": {"email": "eve@x.io"},
    }
    assert slack.stand_in.send(slack.stand_in.press(request_id, "approve", stranger))[0] == 200
    assert "not mapped" in _told(slack.stand_in, stranger)[-1]
    nobody = "U0NOBODY"  # (a user Slack knows nothing of: told so, not to press again)
    assert slack.stand_in.send(slack.stand_in.press(request_id, "approve", nobody))[0] == 200
    assert "not mapped" in _told(slack.stand_in, nobody)[-1]
    body = call(url, "GET", f"/sessions/slack-stranger/turns/{turn['turnId']}")[1]
    assert body["interactions"][0]["status"] == "requested"


def test_two_presses_at_once_settle_it_once_and_a_press_after_is_told_it_is_settled(
    slack: LocalSlack, url: str, ledger: Path
) -> None:
    turn = _ask(url, "slack-race")
    request_id = turn["interactions"][0]["requestId"]
    _message(slack.stand_in, request_id)
    before = executions(ledger).count("delete prod-db")
    notes = len([text for who, text in slack.stand_in.ephemeral if who == USER])
    payload = slack.stand_in.press(request_id, "approve", USER)
    late = slack.stand_in.press(request_id, "deny", USER)  # (pressed on the message as it was shown)
    statuses: list[int] = []
    presses = [threading.Thread(target=lambda: statuses.append(slack.stand_in.send(payload)[0])) for _ in range(2)]
    for press in presses:
        press.start()
    for press in presses:
        press.join()
    assert statuses == [200, 200]
    _turn(url, "slack-race", turn, "completed")
    _message(slack.stand_in, request_id, "Approved by")
    assert executions(ledger).count("delete prod-db") == before + 1
    _told(slack.stand_in, USER, notes + 2)  # (each press is told after its ack, in whichever order they end)
    assert slack.stand_in.send(late)[0] == 200
    assert _told(slack.stand_in, USER, notes + 3)[-1].startswith("Nothing to answer: the question is")


def test_a_question_settled_on_the_page_has_its_message_updated_too(slack: LocalSlack, url: str) -> None:
    turn = _ask(url, "slack-elsewhere")
    request_id = turn["interactions"][0]["requestId"]
    _message(slack.stand_in, request_id)
    path = f"/sessions/slack-elsewhere/turns/{turn['turnId']}/interactions/{request_id}"
    assert call(url, "POST", path, {"response": {"decision": "deny", "message": "no"}})[0] == 200
    updated = _message(slack.stand_in, request_id, "Denied by")
    assert updated.updates == 1


def _buttons(message: Posted) -> list[str]:
    return [e["action_id"] for b in message.blocks for e in b.get("elements", []) if e.get("type") == "button"]


def _post(url: str, body: str, headers: dict[str, str]) -> tuple[int, str]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"{url}/slack/interactions",
        body.encode(),
        {**headers, "Content-Type": "application/x-www-form-urlencoded"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_question_whose_turn_is_canceled_has_its_message_closed_and_its_buttons_gone(
    slack: LocalSlack, url: str
) -> None:
    turn = _ask(url, "slack-cancel")
    request_id = turn["interactions"][0]["requestId"]
    _message(slack.stand_in, request_id)
    assert call(url, "POST", f"/sessions/slack-cancel/turns/{turn['turnId']}/cancel")[0] == 200
    closed = _message(slack.stand_in, request_id, "Closed: ")
    assert _buttons(closed) == [] and closed.updates == 1


def _invoke(settings: Settings, event: dict[str, Any]) -> dict[str, Any]:
    """The Slack function invoked directly, as anyone allowed lambda:InvokeFunction on it can: its reply,
    or ``{"errorType", "errorMessage"}`` where it raised."""
    reply = client("lambda", settings).invoke(FunctionName=function_arn("SlackFunction"), Payload=json.dumps(event))
    said: dict[str, Any] = json.loads(reply["Payload"].read())
    return said


def _still_waits(url: str, session: str, turn: dict[str, Any], stand_in: SlackStandIn, request_id: str) -> None:
    body = call(url, "GET", f"/sessions/{session}/turns/{turn['turnId']}")[1]
    assert body["status"] == "waiting" and body["interactions"][0]["status"] == "requested", body
    [message] = [m for m in stand_in.in_channel(CHANNEL) if m.request_id == request_id]
    assert _buttons(message) != [] and message.updates == 0, message


def test_a_click_handed_to_the_function_by_anyone_but_slack_answers_nothing(
    slack: LocalSlack, url: str, handler_environment: Settings
) -> None:
    turn = _ask(url, "slack-forged-click")
    request_id = turn["interactions"][0]["requestId"]
    message = _message(slack.stand_in, request_id)
    told = len(slack.stand_in.ephemeral)
    asked = {"session_id": "slack-forged-click", "turn_id": turn["turnId"], "request_id": request_id}
    click = {"kind": "approve", "asked": asked, "user_id": USER, "team_id": TEAM, "channel_id": CHANNEL}
    refused = _invoke(handler_environment, {"slackClick": click | {"message_ts": message.ts}})
    assert "nothing was answered" in refused.get("errorMessage", ""), refused
    payload = slack.stand_in.press(request_id, "approve", USER)
    body, headers = signed(payload, "not-the-signing-secret")
    forged = {
        "body": base64.b64encode(body.encode()).decode(),
        "timestamp": headers["X-Slack-Request-Timestamp"],
        "signature": headers["X-Slack-Signature"],
    }
    refused = _invoke(handler_environment, {"slackRequest": forged})
    assert "signature does not match" in refused.get("errorMessage", ""), refused
    _still_waits(url, "slack-forged-click", turn, slack.stand_in, request_id)
    assert len(slack.stand_in.ephemeral) == told  # (nobody was told anything was recorded)


def _bus_event(kind: str, detail: dict[str, Any]) -> dict[str, Any]:
    """An event as the template's rule hands it to the function (EventBridge's envelope)."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": kind,
        "source": "resumable",
        "account": "000000000000",
        "time": "2026-12-04T10:02:07Z",
        "region": "us-east-1",
        "resources": [],
        "detail": detail,
    }


def test_a_look_alike_event_on_the_bus_changes_no_message_and_posts_none(
    slack: LocalSlack, url: str, handler_environment: Settings
) -> None:
    turn = _ask(url, "slack-forged-event")
    request_id = turn["interactions"][0]["requestId"]
    _message(slack.stand_in, request_id)
    mallory = "arn:aws:iam::000000000000:user/mallory"
    ids = {"sessionId": "slack-forged-event", "turnId": turn["turnId"], "sequence": 2}
    answered = ids | {
        "eventId": str(uuid.uuid4()),
        "occurredAt": "2026-12-04T10:02:07Z",
        "requestId": request_id,
        "decision": "approve",
        "response": {"decision": "approve"},
        "answeredBy": mallory,
        "answeredAt": "2026-12-04T10:02:07Z",
    }
    done = _invoke(handler_environment, _bus_event("Interaction Answered", answered))["done"]
    assert done.endswith("(the table holds it requested): nothing was posted or updated"), done
    _still_waits(url, "slack-forged-event", turn, slack.stand_in, request_id)
    never_asked = "r" + "0" * 24
    asked = requested(never_asked, sessionId="slack-forged-event", turnId=turn["turnId"], summary="forged")
    done = _invoke(handler_environment, _bus_event("Interaction Requested", asked))["done"]
    assert done.endswith("(the table holds no such question): nothing was posted or updated"), done
    assert [m for m in slack.stand_in.in_channel(CHANNEL) if m.request_id == never_asked] == []
    assert slack.stand_in.send(slack.stand_in.press(request_id, "approve", USER))[0] == 200
    _turn(url, "slack-forged-event", turn, "completed")
    approved = _message(slack.stand_in, request_id, "Approved by")  # (the answer given, not the look-alike's)
    assert ANN in (approved.text or "") and mallory not in str(approved.blocks) and approved.updates == 1


def test_a_request_handed_on_is_read_again_for_as_long_as_lambda_retries_its_hand_on() -> None:
    retried = load_template()["Resources"]["SlackFunction"]["Properties"]["EventInvokeConfig"]
    assert int(retried["MaximumEventAgeInSeconds"]) + MAX_AGE_SECONDS == HANDED_ON_MAX_AGE_SECONDS

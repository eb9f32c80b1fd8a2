"""Slack's interactivity requests end to end on this machine: signed as Slack signs them, acknowledged
at once, processed against the embedded AWS, and what the person is shown lands in the local Slack
stand-in (slack_sdk's WebClient talking to it): a note to them alone, a modal opened, a modal's JSON
refused in the modal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from slack_sdk import WebClient

from resumable.local.slack_standin import SlackStandIn, slack_stand_in
from resumable.service import Service
from resumable.slack.interactivity import acknowledge, process
from resumable.slack.messages import APPROVE, DENY, DENY_MODAL, EDIT_MODAL, INPUT_FIELD, Asked
from resumable.slack.people import People
from tests.factories import executions
from tests.slack import CHANNEL, SIGNING_SECRET, button, signed, submitted

ANN = "arn:aws:iam::000000000000:user/approver-ann"
PEOPLE = People({"U0ANN": ANN}, {"T0TEAM"})


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with slack_stand_in() as stand_in:
        yield stand_in


@pytest.fixture
def service(make_service: Callable[..., Service]) -> Service:
    return make_service("nested_editable", approver_principals=(ANN,))


def _asked(service: Service, session_id: str) -> Asked:
    turn = service.start_turn(session_id, "delete")
    return Asked(session_id=session_id, turn_id=turn.turn_id, request_id=turn.interactions[0].request_id)


def test_an_approve_click_is_acknowledged_then_answered_and_its_person_told_alone(
    service: Service, session_id: str, slack: SlackStandIn, ledger: Path
) -> None:
    asked = _asked(service, session_id)
    ack = acknowledge(*signed(button(APPROVE, asked)), SIGNING_SECRET)
    assert (ack.status, ack.body) == (200, None) and ack.click is not None
    web = WebClient(token=slack.token, base_url=slack.url)
    assert process(ack.click, service, PEOPLE, web).startswith("approve: told U0ANN: You approved it")
    assert slack.ephemeral == [("U0ANN", "You approved it. The turn is completed.")]
    assert executions(ledger) == ["delete prod-db"]


def test_deny_opens_its_modal_and_the_submission_is_told_in_the_questions_channel(
    service: Service, session_id: str, slack: SlackStandIn
) -> None:
    asked = _asked(service, session_id)
    web = WebClient(token=slack.token, base_url=slack.url)
    ack = acknowledge(*signed(button(DENY, asked)), SIGNING_SECRET)
    assert ack.click is not None
    process(ack.click, service, PEOPLE, web)
    [modal] = slack.views
    assert modal["callback_id"] == DENY_MODAL
    ack = acknowledge(*signed(submitted(DENY_MODAL, asked, "no")), SIGNING_SECRET)
    assert (ack.status, ack.body) == (200, None), "an empty 200 closes the modal"
    assert ack.click is not None and ack.click.channel_id == CHANNEL
    process(ack.click, service, PEOPLE, web)
    assert slack.ephemeral == [("U0ANN", "You denied it. The turn is completed.")]
    assert [m for m, a in slack.calls if m == "chat.postEphemeral" and a["channel"] == CHANNEL]


def test_an_edit_that_is_not_json_is_refused_in_the_modal_at_once_and_a_forged_request_gets_a_401(
    service: Service, session_id: str
) -> None:
    asked = _asked(service, session_id)
    ack = acknowledge(*signed(submitted(EDIT_MODAL, asked, '{"name": ')), SIGNING_SECRET)
    assert ack.status == 200 and ack.click is None and ack.body is not None
    assert ack.body["response_action"] == "errors" and "Not JSON" in ack.body["errors"][INPUT_FIELD]
    body, headers = signed(button(APPROVE, asked), secret="another")
    forged = acknowledge(body, headers, SIGNING_SECRET)
    assert forged.status == 401 and forged.click is None and "signature" in str(forged.body)
    assert service.get_turn(session_id, asked.turn_id).status == "waiting"

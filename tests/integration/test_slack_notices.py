"""Each question in Slack once, updated in place once settled, whatever order and however often the
bus delivers the events: on the embedded AWS's table, against the local Slack stand-in, with
slack_sdk's own WebClient."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from slack_sdk import WebClient

from resumable.config import Settings
from resumable.local.slack_standin import SlackStandIn, slack_stand_in
from resumable.slack.notices import Notices
from resumable.store.slack_messages import CLAIM_SECONDS, SlackMessages
from tests.slack import requested

CHANNEL = "C0APPROVALS"
ANN = "arn:aws:iam::000000000000:user/approver-ann"
NOW = 1_796_380_000.0


def _requested(request_id: str = "r1") -> dict[str, Any]:
    return {"detail-type": "Interaction Requested", "detail": requested(request_id)}


def _answered(request_id: str = "r1") -> dict[str, Any]:
    return {
        "detail-type": "Interaction Answered",
        "detail": {
            "eventId": f"a-{request_id}",
            "sessionId": "s1",
            "turnId": "t1",
            "sequence": 2,
            "occurredAt": "2026-12-04T10:02:00Z",
            "requestId": request_id,
            "decision": "approve",
            "response": {"decision": "approve"},
            "answeredBy": ANN,
            "answeredAt": "2026-12-04T10:02:07Z",
        },
    }


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with slack_stand_in() as stand_in:
        yield stand_in


def _notices(aws: Settings, slack: SlackStandIn, web: Any = None) -> Notices:
    client = web or WebClient(token=slack.token, base_url=slack.url)
    return Notices(SlackMessages(aws), client, CHANNEL, keep_seconds=86400)


def _buttons(blocks: list[dict[str, Any]]) -> int:
    return sum(len(b["elements"]) for b in blocks if b["type"] == "actions")


def test_a_question_is_posted_once_however_often_it_comes_and_updated_in_place_when_answered(
    aws: Settings, slack: SlackStandIn
) -> None:
    notices = _notices(aws, slack)
    assert notices.handle(_requested(), NOW) == "r1: posted"
    assert notices.handle(_requested(), NOW + 1).startswith("r1: posted already")
    assert notices.handle(_requested(), NOW + CLAIM_SECONDS + 5).startswith("r1: posted already"), "posted: never again"
    [message] = slack.in_channel(CHANNEL)
    assert _buttons(message.blocks) == 2 and message.text == "orchestrator -&gt; db_admin wants to run delete_record"
    assert notices.handle(_answered(), NOW + 2) == f"r1: updated: Approved by {ANN} at 10:02 UTC"
    [message] = slack.in_channel(CHANNEL)
    assert (_buttons(message.blocks), message.updates) == (0, 1)
    assert f"Approved by {ANN} at 10:02 UTC" in str(message.blocks)
    again = notices.handle(_answered(), NOW + 3)  # redelivered: the first outcome, shown again
    assert again == f"r1: updated: Approved by {ANN} at 10:02 UTC"
    assert len(slack.in_channel(CHANNEL)) == 1


def test_an_answer_that_comes_before_its_question_is_posted_as_settled(aws: Settings, slack: SlackStandIn) -> None:
    notices = _notices(aws, slack)
    assert notices.handle(_answered(), NOW).startswith("r1: settled before its message was posted")
    assert notices.handle(_requested(), NOW + 1) == "r1: posted"
    [message] = slack.in_channel(CHANNEL)
    assert _buttons(message.blocks) == 0 and "Approved by" in str(message.blocks) and message.updates == 0


def test_an_answer_that_comes_while_the_question_is_being_posted_updates_it_once_posted(
    aws: Settings, slack: SlackStandIn
) -> None:
    real = WebClient(token=slack.token, base_url=slack.url)
    notices: Notices

    class AnsweredMeanwhile:
        def chat_postMessage(self, **kwargs: Any) -> Any:
            posted = real.chat_postMessage(**kwargs)
            assert notices.handle(_answered(), NOW + 1).startswith("r1: settled before its message was posted")
            return posted

        def chat_update(self, **kwargs: Any) -> Any:
            return real.chat_update(**kwargs)

    notices = _notices(aws, slack, AnsweredMeanwhile())
    assert notices.handle(_requested(), NOW).startswith("r1: posted, and updated: Approved by")
    [message] = slack.in_channel(CHANNEL)
    assert (_buttons(message.blocks), message.updates) == (0, 1)


def test_a_claim_whose_poster_died_is_taken_over_once_it_is_old(aws: Settings, slack: SlackStandIn) -> None:
    messages = SlackMessages(aws)
    asked = _requested()["detail"]
    assert messages.claim_post("s1", "r1", str(asked), NOW, NOW + 86400) is not None  # then it died
    notices = _notices(aws, slack)
    assert notices.handle(_requested(), NOW + 1).startswith("r1: posted already")
    assert slack.in_channel(CHANNEL) == []
    assert notices.handle(_requested(), NOW + CLAIM_SECONDS + 1) == "r1: posted"
    assert len(slack.in_channel(CHANNEL)) == 1


def test_an_expired_question_and_one_closed_say_so(aws: Settings, slack: SlackStandIn) -> None:
    notices = _notices(aws, slack)
    for request_id, status, said in [
        ("r1", "expired", "Expired: nobody answered in time"),
        ("r2", "superseded", "Closed: the turn was canceled"),
    ]:
        notices.handle(_requested(request_id), NOW)
        closed = {
            "detail-type": "Interaction Closed",
            "detail": {
                "eventId": f"c-{request_id}", "sessionId": "s1", "turnId": "t1", "sequence": 3,
                "occurredAt": "2026-12-04T11:00:00Z", "requestId": request_id, "childTurnId": None,
                "status": status, "why": "the turn was canceled",
            },
        }  # fmt: skip
        assert notices.handle(closed, NOW + 1) == f"{request_id}: updated: {said}"
    assert [_buttons(m.blocks) for m in slack.in_channel(CHANNEL)] == [0, 0]
    assert notices.handle({"detail-type": "Turn Settled", "detail": {}}, NOW) == "nothing to do for 'Turn Settled'"


def test_the_text_a_notification_shows_is_escaped_as_the_message_is(aws: Settings, slack: SlackStandIn) -> None:
    hostile = "<!channel> <https://evil.example/approve|Approve>\u202e````\x07"
    notices = _notices(aws, slack)
    notices.handle({"detail-type": "Interaction Requested", "detail": requested(summary=hostile)}, NOW)
    closed = {
        "eventId": "c-r1", "sessionId": "s1", "turnId": "t1", "sequence": 3, "occurredAt": "2026-12-04T11:00:00Z",
        "requestId": "r1", "childTurnId": None, "status": "superseded", "why": hostile,
    }  # fmt: skip
    [posted] = slack.in_channel(CHANNEL)
    said = posted.text
    notices.handle({"detail-type": "Interaction Closed", "detail": closed}, NOW + 1)
    [updated] = slack.in_channel(CHANNEL)
    for text in (said, updated.text):
        assert text is not None and "<" not in text and "\u202e" not in text and "\x07" not in text, text
        assert "&lt;!channel&gt; &lt;https://evil.example/approve|Approve&gt;\\u202e````\\u0007" in text, text
    assert updated.text is not None and updated.text.startswith("Closed: ")


def test_a_question_asked_under_a_rule_that_names_a_channel_is_posted_there_and_updated_there(
    aws: Settings, slack: SlackStandIn
) -> None:
    notices = _notices(aws, slack)
    rule = {"name": "dba", "tools": ["delete_*"], "required": 1, "slackChannel": "C0DBA"}
    asked = {"detail-type": "Interaction Requested", "detail": requested("r2", rule=rule)}
    assert notices.handle(asked, NOW) == "r2: posted"
    assert notices.handle(_answered("r2"), NOW + 1).startswith("r2: updated: Approved")
    assert slack.in_channel(CHANNEL) == [] and [m.updates for m in slack.in_channel("C0DBA")] == [1]

"""Each question in Slack once, updated in place once settled, whatever order and however often the
bus delivers the events, and only as the table holds it: an event only names the question, which is
read from the table before anything is posted or updated (anyone allowed events:PutEvents on the bus
can put a look-alike). On the embedded AWS's table, against the local Slack stand-in, with slack_sdk's
own WebClient."""

from __future__ import annotations

import calendar
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from slack_sdk import WebClient

from resumable.config import Settings
from resumable.local.slack_standin import SlackStandIn, slack_stand_in
from resumable.runtime.rules import parse_rules
from resumable.service import Service, TurnView
from resumable.service.caller import Caller
from resumable.service.views import InteractionView
from resumable.slack.interactivity import process
from resumable.slack.messages import APPROVE, Asked
from resumable.slack.notices import Notices
from resumable.slack.people import People
from resumable.slack.requests import read
from resumable.store import DynamoDBStore
from resumable.store.records import InteractionRecord, InteractionStatus
from resumable.store.slack_messages import CLAIM_SECONDS, SlackMessages
from tests.inbox import write_interactions
from tests.slack import SIGNING_SECRET, button, requested, signed

CHANNEL = "C0APPROVALS"
ANN = "arn:aws:iam::000000000000:user/approver-ann"
MALLORY = "arn:aws:iam::000000000000:user/mallory"
NOW = 1_796_380_000.0
ANSWERED_AT = calendar.timegm(time.strptime("2026-12-04T10:02:07", "%Y-%m-%dT%H:%M:%S"))
SUMMARY = 'orchestrator -&gt; db_admin wants to run delete_record {"name": "prod-db"}'


def _held(
    store: DynamoDBStore, request_id: str = "r1", status: InteractionStatus = "requested", **changed: Any
) -> None:
    """The question ``request_id`` of session s1's turn t1, written to the table as a commit writes it:
    orchestrator -> db_admin asks to run delete_record on prod-db; answered, ann approved it at 10:02."""
    answered = {"response": {"decision": "approve"}, "answered_by": ANN, "answered_at": ANSWERED_AT}
    record = InteractionRecord(
        session_id="s1",
        root_turn_id="t1",
        turn_id="t1",
        request_id=request_id,
        interrupt_id=f"v1:tool:{request_id}",
        name="approval",
        reason={"agent": "db_admin", "tool": "delete_record", "input": {"name": "prod-db"}},
        agent_path=["orchestrator", "db_admin"],
        status=status,
        expires_at=NOW + 3600,
        created_at=NOW,
        updated_at=NOW,
        **(answered if status == "answered" else {}),
    )
    write_interactions(store, [record.model_copy(update=changed)])


def _requested(request_id: str = "r1", **changed: Any) -> dict[str, Any]:
    return {"detail-type": "Interaction Requested", "detail": requested(request_id, **changed)}


def _answered(request_id: str = "r1", by: str = ANN) -> dict[str, Any]:
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
            "answeredBy": by,
            "answeredAt": "2026-12-04T10:02:07Z",
        },
    }


def _closed(request_id: str, status: str, why: str) -> dict[str, Any]:
    detail = {
        "eventId": f"c-{request_id}", "sessionId": "s1", "turnId": "t1", "sequence": 3,
        "occurredAt": "2026-12-04T11:00:00Z", "requestId": request_id, "childTurnId": None,
        "status": status, "why": why,
    }  # fmt: skip
    return {"detail-type": "Interaction Closed", "detail": detail}


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with slack_stand_in() as stand_in:
        yield stand_in


def _notices(aws: Settings, slack: SlackStandIn, web: Any = None, api_url: str | None = None) -> Notices:
    client = web or WebClient(token=slack.token, base_url=slack.url)
    return Notices(SlackMessages(aws), DynamoDBStore(aws), client, CHANNEL, keep_seconds=86400, api_url=api_url)


def _buttons(blocks: list[dict[str, Any]]) -> int:
    return sum(len(b["elements"]) for b in blocks if b["type"] == "actions")


def test_a_question_is_posted_once_however_often_it_comes_and_updated_in_place_when_answered(
    aws: Settings, slack: SlackStandIn, store: DynamoDBStore
) -> None:
    _held(store)
    notices = _notices(aws, slack)
    assert notices.handle(_requested(), NOW) == "r1: posted"
    assert notices.handle(_requested(), NOW + 1).startswith("r1: posted already")
    assert notices.handle(_requested(), NOW + CLAIM_SECONDS + 5).startswith("r1: posted already"), "posted: never again"
    [message] = slack.in_channel(CHANNEL)
    assert _buttons(message.blocks) == 2 and message.text == SUMMARY
    _held(store, status="answered")
    assert notices.handle(_answered(), NOW + 2) == f"r1: updated: Approved by {ANN} at 10:02 UTC"
    [message] = slack.in_channel(CHANNEL)
    assert (_buttons(message.blocks), message.updates) == (0, 1)
    assert f"Approved by {ANN} at 10:02 UTC" in str(message.blocks)
    again = notices.handle(_answered(), NOW + 3)  # redelivered: the first outcome, shown again
    assert again == f"r1: updated: Approved by {ANN} at 10:02 UTC"
    assert len(slack.in_channel(CHANNEL)) == 1


def test_a_question_answered_before_its_event_came_is_not_posted(
    aws: Settings, slack: SlackStandIn, store: DynamoDBStore
) -> None:
    _held(store, status="answered")
    notices = _notices(aws, slack)
    assert notices.handle(_answered(), NOW).startswith("r1: settled before its message was posted")
    said = notices.handle(_requested(), NOW + 1)
    assert said == "r1: not as the event says (the table holds it answered): nothing was posted or updated"
    assert slack.in_channel(CHANNEL) == []


def test_an_answer_that_comes_while_the_question_is_being_posted_updates_it_once_posted(
    aws: Settings, slack: SlackStandIn, store: DynamoDBStore
) -> None:
    _held(store)
    real = WebClient(token=slack.token, base_url=slack.url)
    notices: Notices

    class AnsweredMeanwhile:
        def chat_postMessage(self, **kwargs: Any) -> Any:
            posted = real.chat_postMessage(**kwargs)
            _held(store, status="answered")
            assert notices.handle(_answered(), NOW + 1).startswith("r1: settled before its message was posted")
            return posted

        def chat_update(self, **kwargs: Any) -> Any:
            return real.chat_update(**kwargs)

    notices = _notices(aws, slack, AnsweredMeanwhile())
    assert notices.handle(_requested(), NOW).startswith("r1: posted, and updated: Approved by")
    [message] = slack.in_channel(CHANNEL)
    assert (_buttons(message.blocks), message.updates) == (0, 1)


def test_a_claim_whose_poster_died_is_taken_over_once_it_is_old(
    aws: Settings, slack: SlackStandIn, store: DynamoDBStore
) -> None:
    _held(store)
    messages = SlackMessages(aws)
    asked = _requested()["detail"]
    assert messages.claim_post("s1", "r1", str(asked), NOW, NOW + 86400) is not None  # then it died
    notices = _notices(aws, slack)
    assert notices.handle(_requested(), NOW + 1).startswith("r1: posted already")
    assert slack.in_channel(CHANNEL) == []
    assert notices.handle(_requested(), NOW + CLAIM_SECONDS + 1) == "r1: posted"
    assert len(slack.in_channel(CHANNEL)) == 1


def test_an_expired_question_and_one_closed_say_so(aws: Settings, slack: SlackStandIn, store: DynamoDBStore) -> None:
    notices = _notices(aws, slack)
    status: InteractionStatus
    for request_id, status, said in [
        ("r1", "expired", "Expired: nobody answered in time"),
        ("r2", "superseded", "Closed: the turn was canceled"),
    ]:
        _held(store, request_id)
        notices.handle(_requested(request_id), NOW)
        _held(store, request_id, status)
        assert notices.handle(_closed(request_id, status, "the turn was canceled"), NOW + 1) == (
            f"{request_id}: updated: {said}"
        )
    assert [_buttons(m.blocks) for m in slack.in_channel(CHANNEL)] == [0, 0]
    assert notices.handle({"detail-type": "Turn Settled", "detail": {}}, NOW) == "nothing to do for 'Turn Settled'"


def test_the_text_a_notification_shows_is_escaped_as_the_message_is(
    aws: Settings, slack: SlackStandIn, store: DynamoDBStore
) -> None:
    hostile = "<!channel> <https://evil.example/approve|Approve>\u202e````\x07"
    _held(store, agent_path=[hostile])
    notices = _notices(aws, slack)
    notices.handle(_requested(), NOW)
    [posted] = slack.in_channel(CHANNEL)
    said = posted.text
    _held(store, status="superseded")
    notices.handle(_closed("r1", "superseded", hostile), NOW + 1)
    [updated] = slack.in_channel(CHANNEL)
    for text in (said, updated.text):
        assert text is not None and "<" not in text and "\u202e" not in text and "\x07" not in text, text
        assert "&lt;!channel&gt; &lt;https://evil.example/approve|Approve&gt;\\u202e````\\u0007" in text, text
    assert updated.text is not None and updated.text.startswith("Closed: ")


def test_a_question_asked_under_a_rule_that_names_a_channel_is_posted_there_and_updated_there(
    aws: Settings, slack: SlackStandIn, store: DynamoDBStore
) -> None:
    rule = {"name": "dba", "tools": ["delete_*"], "required": 1, "slack_channel": "C0DBA"}
    _held(store, "r2", rule=rule)
    notices = _notices(aws, slack)
    assert notices.handle(_requested("r2"), NOW) == "r2: posted"
    _held(store, "r2", "answered", rule=rule)
    assert notices.handle(_answered("r2"), NOW + 1).startswith("r2: updated: Approved")
    assert slack.in_channel(CHANNEL) == [] and [m.updates for m in slack.in_channel("C0DBA")] == [1]


def test_a_look_alike_event_changes_nothing_and_a_message_shows_what_the_table_holds(
    aws: Settings, slack: SlackStandIn, store: DynamoDBStore
) -> None:
    notices = _notices(aws, slack, api_url="https://api.example.com/")
    nothing = "nothing was posted or updated"
    assert notices.handle(_requested("r9"), NOW).endswith(f"(the table holds no such question): {nothing}")
    assert notices.handle(_answered("r9"), NOW).endswith(f"(the table holds no such question): {nothing}")
    assert slack.in_channel(CHANNEL) == []
    _held(store)
    link = "<https://evil.example/inbox|Open it on the inbox page>"
    look_alike = _requested(summary="routine cleanup", input={"name": "scratch"}, inboxUrl=link, turnId="t1~0f")
    assert notices.handle(look_alike, NOW) == "r1: posted"  # (of a child turn: its root's question)
    [message] = slack.in_channel(CHANNEL)
    assert message.text == SUMMARY and "prod-db" in str(message.blocks), "the table's words, not the event's"
    assert "evil.example" not in str(message.blocks) and "https://api.example.com/inbox#q-r1" in str(message.blocks)
    assert notices.handle(_answered(by=MALLORY), NOW + 1).endswith(f"(the table holds it requested): {nothing}")
    assert notices.handle(_closed("r1", "expired", "nobody came"), NOW + 2).endswith(nothing)
    [message] = slack.in_channel(CHANNEL)
    assert (_buttons(message.blocks), message.updates) == (2, 0), "still waiting, as the table says"
    _held(store, status="answered")
    assert notices.handle(_answered(by=MALLORY), NOW + 3) == f"r1: updated: Approved by {ANN} at 10:02 UTC"
    _held(store, "r3", deleted_generation=1)
    assert notices.handle(_requested("r3"), NOW + 4).endswith(f"in a deleted session): {nothing}")
    assert [m.updates for m in slack.in_channel(CHANNEL)] == [1]


def test_a_vote_pressed_in_slack_draws_the_message_again_with_the_approvals_so_far_and_a_refused_press_changes_nothing(
    aws: Settings, slack: SlackStandIn, make_service: Callable[..., Service], session_id: str
) -> None:
    owner, ben = "arn:aws:iam::000000000000:user/owner", "arn:aws:iam::000000000000:user/approver-ben"
    rule = {"tools": ["delete_record"], "required": 3, "risk": "destructive", "impact": "gone for good"}
    service = make_service("nested", approver_principals=(ANN, ben, owner), approval_rules=parse_rules([rule]))
    started = service.start_turn(session_id, "delete it", Caller(owner))
    [asked] = started.interactions
    notices = _notices(aws, slack)
    event = _requested(asked.request_id, sessionId=session_id, turnId=started.turn_id)
    assert notices.handle(event, NOW) == f"{asked.request_id}: posted"
    [message] = slack.in_channel(CHANNEL)
    assert "Approvals: 0 of 3" in str(message.blocks) and "Turn started by " + owner in str(message.blocks)
    assert "confirm" in message.blocks[-1]["elements"][0], "destructive: Approve asks first"
    web = WebClient(token=slack.token, base_url=slack.url)
    people = People({"U0ANN": ANN, "U0OWNER": owner}, {"T0TEAM"})
    ids = Asked(session_id=session_id, turn_id=started.turn_id, request_id=asked.request_id)

    def press(user: str) -> str:
        body, headers = signed(button(APPROVE, ids, {"id": user, "username": user, "team_id": "T0TEAM"}))
        return process(read(body, headers, SIGNING_SECRET), service, people, web, notices)

    press("U0OWNER")  # the starter, under a rule of three: refused, told alone, and nothing changes
    assert slack.ephemeral[-1][0] == "U0OWNER" and "Not yours to answer: " + owner in slack.ephemeral[-1][1]
    [message] = slack.in_channel(CHANNEL)
    assert message.updates == 0 and "Approvals: 0 of 3" in str(message.blocks)
    press("U0ANN")
    assert slack.ephemeral[-1] == ("U0ANN", "Your approval is recorded: 1 of 3. It waits for 2 more.")
    [message] = slack.in_channel(CHANNEL)
    assert message.updates == 1 and f"Approvals: 1 of 3: {ANN}" in str(message.blocks)
    assert _buttons(message.blocks) == 2, "it still waits: its buttons stay"
    press("U0ANN")  # a second vote by the same person: refused, told alone, and nothing changes
    assert slack.ephemeral[-1][0] == "U0ANN" and slack.ephemeral[-1][1].startswith("Not recorded: ")
    assert slack.in_channel(CHANNEL)[0].updates == 1
    # A vote from another channel (the page, the CLI) is an Interaction Voted event: drawn again by it
    service.submit_approval(session_id, started.turn_id, asked.request_id, {"decision": "approve"}, Caller(ben))
    detail = {
        "eventId": "e-voted", "sessionId": session_id, "turnId": started.turn_id, "sequence": 3,
        "occurredAt": "2026-12-04T10:03:00Z", "requestId": asked.request_id, "childTurnId": asked.child_turn_id,
        "by": ben, "approvals": 2, "required": 3, "votedAt": "2026-12-04T10:03:00Z",
    }  # fmt: skip
    assert (
        notices.handle({"detail-type": "Interaction Voted", "detail": detail}, NOW)
        == f"{asked.request_id}: drawn again with 2 approval(s)"
    )
    [message] = slack.in_channel(CHANNEL)
    assert message.updates == 2 and f"Approvals: 2 of 3: {ANN}, {ben}" in str(message.blocks)


class _Meanwhile:
    """slack_sdk's client, but the first ``chat.update`` lets ``meanwhile`` happen before it reaches Slack
    (a vote, a settling, another draw overtaking it)."""

    def __init__(self, web: WebClient, meanwhile: Callable[[], object]) -> None:
        self.web, self.meanwhile, self.updates = web, meanwhile, 0

    def chat_postMessage(self, **kwargs: Any) -> Any:
        return self.web.chat_postMessage(**kwargs)

    def chat_update(self, **kwargs: Any) -> Any:
        self.updates += 1
        if self.updates == 1:
            self.meanwhile()
        return self.web.chat_update(**kwargs)


def _three_approvers(
    aws: Settings, make_service: Callable[..., Service], session_id: str
) -> tuple[Service, TurnView, InteractionView]:
    rule = {"tools": ["delete_record"], "required": 3}
    service = make_service("nested", approver_principals=(ANN, MALLORY), approval_rules=parse_rules([rule]))
    started = service.start_turn(session_id, "delete it", Caller("arn:aws:iam::000000000000:user/owner"))
    return service, started, started.interactions[0]


@pytest.mark.parametrize("then", ["another vote", "a deny that settles it"])
def test_a_draw_overtaken_by_a_vote_or_a_settling_ends_showing_the_question_as_the_table_holds_it(
    aws: Settings, slack: SlackStandIn, make_service: Callable[..., Service], session_id: str, then: str
) -> None:
    service, started, asked = _three_approvers(aws, make_service, session_id)
    web = WebClient(token=slack.token, base_url=slack.url)
    posting = _notices(aws, slack, web)
    posting.handle(_requested(asked.request_id, sessionId=session_id, turnId=started.turn_id), NOW)
    service.submit_approval(session_id, started.turn_id, asked.request_id, {"decision": "approve"}, Caller(ANN))

    def meanwhile() -> None:  # (lands after the draw read the question, before Slack got its draw)
        if then == "another vote":
            service.submit_approval(session_id, started.turn_id, asked.request_id, {"decision": "approve"}, MALLORY)
        else:
            deny = {"decision": "deny", "message": "no"}
            service.submit_approval(session_id, started.turn_id, asked.request_id, deny, Caller(MALLORY))
            answered = _answered(asked.request_id, by=MALLORY)
            answered["detail"] |= {"sessionId": session_id, "turnId": started.turn_id}
            posting.handle(answered, NOW)  # (its event came: the settled message drawn, before the draw lands)

    notices = Notices(SlackMessages(aws), DynamoDBStore(aws), _Meanwhile(web, meanwhile), CHANNEL, 86400)
    notices.refresh(session_id, started.turn_id, asked.request_id, NOW)
    [message] = slack.in_channel(CHANNEL)
    if then == "another vote":
        assert f"Approvals: 2 of 3: {ANN}, {MALLORY}" in str(message.blocks) and _buttons(message.blocks) == 2
    else:
        assert _buttons(message.blocks) == 0 and f"Denied by {MALLORY}" in str(message.blocks), message.blocks

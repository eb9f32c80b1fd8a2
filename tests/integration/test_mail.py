"""The e-mail NotifyEmail gets is sent by the Publisher from what the table holds (never from the bus):
resumable's own words first (where to decide, the decision link), then the agent's, marked as the
agent's, every control or direction-changing character shown as its escape; a failed e-mail holds its
session back until it is sent."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from resumable.config import Settings
from resumable.events.mail import AGENTS_WORDS
from resumable.events.publisher import Publishing
from resumable.exceptions import AwsError
from resumable.local.events import publishing
from resumable.service import Service
from tests.clock import FakeClock
from tests.patience import eventually

HOSTILE = "<https://evil.example/approve|Approve> \u202eeveryone\u2066 \x85"


def hostile(context: Any) -> Any:
    """An agent whose tool input carries a look-alike link and characters that reorder what follows."""
    from tests.factories import _db_admin

    return _db_admin(target=HOSTILE)


@pytest.fixture
def mailbox(aws: Settings) -> Iterator[tuple[Settings, Callable[[], list[dict[str, Any]]]]]:
    """Settings with a topic of this test's own, and what a subscriber of it has read so far."""
    from resumable.aws.clients import client

    sns, sqs = client("sns", aws), client("sqs", aws)
    name = f"mail-{uuid.uuid4().hex[:10]}"
    topic = sns.create_topic(Name=name)["TopicArn"]
    queue = sqs.create_queue(QueueName=name)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    read: list[dict[str, Any]] = []

    def mails() -> list[dict[str, Any]]:
        for message in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", []):
            read.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
        return read

    configured = aws.model_copy(
        update={"event_bus_name": name, "api_url": "http://api.test", "notify_topic_arn": topic}
    )
    yield configured, mails


def test_the_mail_says_where_to_decide_first_and_the_agents_words_last_marked_and_never_obeyed(
    make_service: Callable[..., Service], mailbox: tuple[Settings, Callable[[], list[dict[str, Any]]]]
) -> None:
    settings, mails = mailbox
    turn = make_service(hostile).start_turn("mailed", "delete it")
    with publishing(settings, lambda given: Publishing(given, FakeClock()).handle):
        [mail] = eventually(lambda: mails() or None, "the question's e-mail")
    assert mail["Subject"] == "A question waits for your decision"
    ours, _, theirs = mail["Message"].partition(f"\n\n{AGENTS_WORDS}\n")
    request_id = turn.interactions[0].request_id
    assert f"Decide on the inbox page (opening it decides nothing): http://api.test/inbox#q-{request_id}" in ours
    assert "evil.example" not in ours and "evil.example" in theirs
    assert "\\u202eeveryone\\u2066 \\u0085" in theirs  # (shown, not obeyed)
    assert not any(c in mail["Message"] for c in "\u202e\u2066\x85")


def test_a_mail_that_fails_holds_its_session_back_until_it_is_sent(
    make_service: Callable[..., Service], mailbox: tuple[Settings, Callable[[], list[dict[str, Any]]]]
) -> None:
    settings, mails = mailbox
    failures = [2]

    def flaky(given: Settings) -> Any:
        made = Publishing(given, FakeClock())
        publish = made.topic.publish

        def failing(subject: str, message: str) -> None:
            if failures[0]:
                failures[0] -= 1
                raise AwsError("Publish to the topic failed: ThrottlingException")
            publish(subject, message)

        made.topic.publish = failing  # type: ignore[method-assign]
        return made.handle

    make_service("nested").start_turn("mail-retried", "delete the prod-db record")
    with publishing(settings, flaky):
        eventually(lambda: mails() or None, "the question's e-mail, once the topic takes it")
    assert failures == [0] and len(mails()) == 1

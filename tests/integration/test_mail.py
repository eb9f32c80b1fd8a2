"""The e-mail NotifyEmail gets is sent by the Publisher from what the table holds (never from the bus):
resumable's own words first (where to decide, the decision link), then the agent's, marked as the
agent's, every control or direction-changing character shown as its escape; a failed e-mail holds its
session back until it is sent."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from resumable.config import Settings
from resumable.events.mail import AGENTS_WORDS
from resumable.events.publisher import Publishing
from resumable.exceptions import AwsError
from resumable.local.events import EventResources, publishing, read_mail
from resumable.runtime.rules import parse_rules
from resumable.service import Service
from resumable.service.caller import Caller
from tests.clock import FakeClock
from tests.patience import eventually

HOSTILE = "<https://evil.example/approve|Approve> \u202eeveryone\u2066 \x85\u2028Decide here: https://evil.example"


def hostile(context: Any) -> Any:
    """An agent whose tool input carries a look-alike link and characters that reorder what follows."""
    from tests.factories import _db_admin

    return _db_admin(target=HOSTILE)


@pytest.fixture
def configured(aws: Settings) -> Settings:
    """Settings with a bus of this test's own (publishing() adds NotifyEmail's topic and its mailbox)."""
    return aws.model_copy(update={"event_bus_name": f"mail-{uuid.uuid4().hex[:10]}", "api_url": "http://api.test"})


def _mails(resources: EventResources) -> Callable[[], list[tuple[str, str]]]:
    """What the mailbox has received so far (each e-mail's subject and text)."""
    read: list[tuple[str, str]] = []

    def mails() -> list[tuple[str, str]]:
        read.extend(read_mail(resources.mail_queue_url, idle_seconds=0))
        return read

    return mails


def test_the_mail_says_where_to_decide_first_and_the_agents_words_last_marked_and_never_obeyed(
    make_service: Callable[..., Service], configured: Settings
) -> None:
    turn = make_service(hostile).start_turn("mailed", "delete it")
    with publishing(configured, lambda given: Publishing(given, FakeClock()).handle) as (resources, _):
        mails = _mails(resources)
        [(subject, message)] = eventually(lambda: mails() or None, "the question's e-mail")
    assert subject == "A question waits for your decision"
    ours, _, theirs = message.partition(f"\n\n{AGENTS_WORDS}\n")
    request_id = turn.interactions[0].request_id
    assert f"Decide on the inbox page (opening it decides nothing): http://api.test/inbox#q-{request_id}" in ours
    assert "evil.example" not in ours and "evil.example" in theirs
    assert "\\u202eeveryone\\u2066 \\u0085\\u2028Decide here" in theirs  # (shown, not obeyed)
    assert not any(c in message for c in "\u202e\u2066\x85\u2028")
    assert all(line.startswith("> ") for line in theirs.rstrip("\n").split("\n"))  # (every line marked)


def test_a_mail_that_fails_holds_its_session_back_until_it_is_sent(
    make_service: Callable[..., Service], configured: Settings
) -> None:
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
    with publishing(configured, flaky) as (resources, _):
        mails = _mails(resources)
        eventually(lambda: mails() or None, "the question's e-mail, once the topic takes it")
    assert failures == [0] and len(mails()) == 1


APPROVER = "arn:aws:iam::000000000000:user/approver-ann"
LINK = re.compile(r"^Or decide without signing in \(its page decides, once\): \S+/decide/(\S+)$", re.MULTILINE)


def test_a_mail_that_fails_in_one_session_spends_no_link_another_session_was_mailed(
    make_service: Callable[..., Service], configured: Settings
) -> None:
    """One batch, two sessions: the first session's e-mail fails once, so Lambda delivers the batch again
    from it, and the second session's question is mailed again. Every link mailed still works (the
    first used spends them all), not only the latest."""
    links = {"decision_links_as": APPROVER, "approver_principals": (APPROVER,)}
    service = make_service("nested", **links)
    asked = {s: service.start_turn(s, "delete").interactions[0].request_id for s in ("held-1", "mailed-1")}
    failures = [1]

    def flaky(given: Settings) -> Any:
        made = Publishing(given.model_copy(update=links), FakeClock())
        publish = made.topic.publish

        def failing(subject: str, message: str) -> None:
            if failures[0] and f"(request {asked['held-1']})" in message:
                failures[0] -= 1
                raise AwsError("Publish to the topic failed: ThrottlingException")
            publish(subject, message)

        made.topic.publish = failing  # type: ignore[method-assign]
        return made.handle

    with publishing(configured, flaky) as (resources, _):
        mails = _mails(resources)
        eventually(lambda: len(mails()) >= 3 or None, "both questions mailed, the second one twice")
    tokens = {
        s: [m.group(1) for _, text in mails() if f"(request {r})" in text for m in [LINK.search(text)] if m]
        for s, r in asked.items()
    }
    assert failures == [0] and len(tokens["mailed-1"]) == 2 and len(set(tokens["mailed-1"])) == 2
    for token in [*tokens["mailed-1"], *tokens["held-1"]]:
        assert service.decision_link(token)[1].status == "requested"  # (each still opens its question)


def test_the_mail_shows_what_the_inbox_card_shows_to_judge_it_and_the_prompt_among_the_words_not_ours(
    make_service: Callable[..., Service], configured: Settings
) -> None:
    rule = {"tools": ["delete_*"], "required": 2, "name": "two DBAs", "risk": "destructive", "impact": "no undo"}
    service = make_service("nested", approval_rules=parse_rules([rule]))
    forged = "IT Security) Pre-approved by the CISO, decide here: https://evil.example/decide/abc (ok"
    service.start_turn("mailed-judged", f"delete it {HOSTILE}", Caller("arn:aws:iam::1:user/owner", name=forged))
    with publishing(configured, lambda given: Publishing(given, FakeClock()).handle) as (resources, _):
        mails = _mails(resources)
        [(_, message)] = eventually(lambda: mails() or None, "the question's e-mail")
    ours, _, theirs = message.partition(f"\n\n{AGENTS_WORDS}\n")
    assert "Risk: destructive: no undo" in ours and "Turn started by arn:aws:iam::1:user/owner." in ours
    assert "It needs 2 approvals from distinct approvers (its approval rule: two DBAs)." in ours
    assert "each page asks you to confirm it first" in ours
    assert "> Prompt: delete it <https://evil.example/approve|Approve>" in theirs and "evil.example" not in ours
    assert f"> The one who started the turn gives their name as: {forged}" in theirs, "a name its holder may set"

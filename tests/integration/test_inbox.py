"""The inbox: the open questions a principal may answer, across sessions, most urgent first, paged by
a signed cursor, served by one Query of an index whatever the number of sessions."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from resumable.api.app import build_app
from resumable.exceptions import ValidationFailedError
from resumable.service import InboxPage, Service
from resumable.store import DynamoDBStore
from tests.clock import FakeClock
from tests.inbox import open_questions
from tests.integration.helpers import ALICE, APPROVE
from tests.integration.helpers import http as request

APPROVER = "arn:aws:iam::111122223333:user/approver"
BOB = "arn:aws:iam::111122223333:user/bob"


@pytest.fixture
def service(make_service: Callable[..., Service]) -> Service:
    return make_service("nested", approver_principals=(APPROVER,))


@contextmanager
def counted_calls(store: DynamoDBStore) -> Iterator[list[str]]:
    """The names of the DynamoDB calls ``store``'s client makes inside the block."""
    calls: list[str] = []

    def count(event_name: str, **_: Any) -> None:
        calls.append(event_name.rsplit(".", 1)[-1])

    store.dynamodb.meta.events.register("before-call.dynamodb", count)
    try:
        yield calls
    finally:
        store.dynamodb.meta.events.unregister("before-call.dynamodb", count)


def every_page(service: Service, principal: str | None, limit: int) -> list[InboxPage]:
    pages = [service.inbox(principal, limit=limit)]
    while pages[-1].cursor is not None:
        pages.append(service.inbox(principal, limit=limit, cursor=pages[-1].cursor))
    return pages


def test_an_approver_sees_every_sessions_open_questions_most_urgent_first_and_others_only_their_own(
    service: Service, clock: FakeClock
) -> None:
    alices = service.start_turn("inbox-alice", "delete", principal=ALICE)
    clock.advance(10)
    bobs = service.start_turn("inbox-bob", "delete", principal=BOB)
    clock.advance(10)
    apps = service.start_turn("inbox-app", "delete")  # started by the application: no principal
    oldest_first = [t.interactions[0].request_id for t in (alices, bobs, apps)]

    assert [i.request_id for i in service.inbox(APPROVER).interactions] == oldest_first
    assert [i.request_id for i in service.inbox(None).interactions] == oldest_first
    assert [i.request_id for i in service.inbox(ALICE).interactions] == [oldest_first[0]]
    assert [i.request_id for i in service.inbox(BOB).interactions] == [oldest_first[1]]
    [listed] = service.inbox(ALICE).interactions
    assert (listed.session_id, listed.turn_id, listed.child_turn_id) == (
        "inbox-alice",
        alices.turn_id,
        alices.children[0].turn_id,
    )
    assert listed.agent_path == ["orchestrator", "db_admin"]


def test_answered_canceled_and_expired_questions_are_not_in_the_inbox(service: Service, clock: FakeClock) -> None:
    answered = service.start_turn("gone-answered", "delete", principal=ALICE)
    service.submit_approval("gone-answered", answered.turn_id, answered.interactions[0].request_id, APPROVE, ALICE)
    canceled = service.start_turn("gone-canceled", "delete", principal=ALICE)
    service.cancel("gone-canceled", canceled.turn_id, ALICE)
    service.start_turn("gone-expired", "delete", principal=ALICE)
    assert [i.session_id for i in service.inbox(ALICE).interactions] == ["gone-expired"]
    clock.advance(service.settings.approval_expiry_seconds)  # expired, and nothing has settled its turn yet
    assert service.inbox(ALICE).interactions == []
    assert service.inbox(APPROVER).interactions == []


def test_pages_follow_each_other_by_cursor_to_the_last_and_each_is_one_query(
    service: Service, store: DynamoDBStore, clock: FakeClock
) -> None:
    expected = open_questions(store, 7, clock.now(), ALICE)
    with counted_calls(service.store) as calls:  # type: ignore[arg-type]
        pages = every_page(service, ALICE, limit=3)
    assert [i.request_id for page in pages for i in page.interactions] == expected
    assert [len(p.interactions) for p in pages][:3] == [3, 3, 1]
    assert pages[-1].cursor is None
    assert calls == ["Query"] * len(pages)


@pytest.mark.parametrize("sessions", [1, 100, 1000])
def test_a_page_of_every_sessions_inbox_costs_a_query_or_two_per_shard_whatever_the_number_of_sessions(
    sessions: int, service: Service, store: DynamoDBStore, clock: FakeClock
) -> None:
    expected = open_questions(store, sessions, clock.now(), ALICE)
    with counted_calls(service.store) as calls:  # type: ignore[arg-type]
        page = service.inbox(APPROVER, limit=50)
    assert [i.request_id for i in page.interactions] == expected[:50]
    assert set(calls) == {"Query"}
    assert store.shards <= len(calls) <= 2 * store.shards


def _tampered(cursor: str) -> str:
    payload, mac = cursor.split(".")
    start = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    start["after"]["S"] = "0" + start["after"]["S"][1:]
    forged = base64.urlsafe_b64encode(json.dumps(start).encode()).decode().rstrip("=")
    return f"{forged}.{mac}"


def test_a_cursor_not_issued_by_the_inbox_changed_or_of_another_inbox_is_refused_and_nothing_is_read(
    service: Service, store: DynamoDBStore, clock: FakeClock
) -> None:
    open_questions(store, 3, clock.now(), ALICE)
    cursor = service.inbox(ALICE, limit=1).cursor
    assert cursor is not None
    for bad, whose in [
        ("not-a-cursor", ALICE),
        (cursor[:-1] + ("A" if cursor[-1] != "A" else "B"), ALICE),
        (_tampered(cursor), ALICE),
        (cursor, BOB),  # alice's cursor, in bob's inbox
        (cursor, APPROVER),  # or in the approvers'
        ("." * 3000, ALICE),
        ("abc.\u00e9", ALICE),  # not ASCII (API Gateway decodes %C3%A9)
    ]:
        with counted_calls(service.store) as calls, pytest.raises(ValidationFailedError, match="cursor"):  # type: ignore[arg-type]
            service.inbox(whose, limit=1, cursor=bad)
        assert calls == [], "a refused cursor reads nothing"


@pytest.fixture
def api(service: Service) -> APIGatewayHttpResolver:
    return build_app(service)


def test_the_inbox_over_http_pages_and_refuses_bad_parameters_with_code_and_message(
    api: APIGatewayHttpResolver, store: DynamoDBStore, clock: FakeClock
) -> None:
    expected = open_questions(store, 3, clock.now(), ALICE)
    status, page = request(api, "GET", "/interactions", query="status=requested&limit=2")
    assert status == 200
    assert [i["requestId"] for i in page["interactions"]] == expected[:2]
    assert set(page["interactions"][0]) >= {"sessionId", "turnId", "childTurnId", "requestId", "expiresAt"}
    status, rest = request(api, "GET", "/interactions", query=f"limit=2&cursor={page['cursor']}")
    assert (status, [i["requestId"] for i in rest["interactions"]]) == (200, expected[2:])
    for query, said in [
        ("status=answered", "status"),
        ("status=bogus", "status"),
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=ten", "limit"),
        ("cursor=forged.mac", "cursor"),
        ("cursor=abc.%C3%A9", "cursor"),
        (f"cursor={'x' * 3000}", "cursor"),
    ]:
        status, body = request(api, "GET", "/interactions", query=query)
        assert status == 422, query
        assert set(body) == {"code", "message"} and body["code"] == "validation_failed", query
        assert said in body["message"], (query, body)


def test_every_listing_names_the_root_turn_and_an_answer_through_the_child_turn_replies_with_the_root(
    service: Service, session_id: str
) -> None:
    started = service.start_turn(session_id, "delete", principal=ALICE)
    [listed] = service.list_interactions(session_id, "requested", ALICE)
    assert (listed.turn_id, listed.child_turn_id) == (started.turn_id, started.children[0].turn_id)
    assert started.interactions[0].turn_id == started.turn_id
    done = service.submit_approval(session_id, started.children[0].turn_id, listed.request_id, APPROVE, ALICE)
    assert (done.turn_id, done.status) == (started.turn_id, "completed")
    assert [c.turn_id for c in done.children] == [started.children[0].turn_id]

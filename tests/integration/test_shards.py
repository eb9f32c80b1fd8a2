"""Sharded indexes: no partition key takes the whole deployment's writes. The inbox, the sweeper's
index and the audit trail's days are spread over INDEX_SHARDS partitions by session, and a read of one
lists what a single partition would: the same order, the same pages, the same reader's view."""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resumable.config import Settings
from resumable.exceptions import ValidationFailedError
from resumable.runtime.rules import RISKS
from resumable.service import Service
from resumable.service import cursor as cursors
from resumable.service.reading.inbox import MAX_READS
from resumable.store import DynamoDBStore
from resumable.store.audit import audit_put
from resumable.store.codec import INBOX, inbox_sort_key, shard_of, sharded, turn_item
from resumable.store.records import AuditRecord, InteractionRecord, TurnRecord
from resumable.store.resources import TABLE_INDEXES, TABLE_KEY_SCHEMA, create_table_request
from tests.clock import FakeClock
from tests.inbox import question, write_interactions
from tests.integration.helpers import ALICE, APPROVE
from tests.integration.test_inbox import counted_calls
from tests.patience import HANG_SECONDS

APPROVER = "arn:aws:iam::111122223333:user/approver"
BOB = "arn:aws:iam::111122223333:user/bob"

# Every partition key of the table and its indexes, as written: a session's, a principal's, or a shard
# of a deployment-wide partition (``<name>`` for shard 0, ``<name>#<n>`` for the others). None is a
# constant: a key shared by every session takes the whole deployment's writes (about 1,000 a second
# per partition in DynamoDB, then throttling for everyone).
KEY_SHAPES = {
    "pk": r"SESSION#(?P<session>[^#]+)|AUDIT#\d{4}-\d\d-\d\d(#(?P<shard>\d+))?",
    "gsi1pk": r"SESSION#(?P<session>[^#]+)#INTERACTIONS",
    "gsi2pk": r"INBOX(#(?P<shard>\d+))?",
    "gsi3pk": r"PRINCIPAL#(?P<principal>.+)",
    "gsi4pk": r"(UNSETTLED|STUCK|EXPIRING)(#(?P<shard>\d+))?",
    "request_id": r"r[0-9a-f]{24}",  # (gsi5's: a question's own request id, one partition each)
}


@pytest.fixture
def new_table(aws_server: Settings) -> Iterator[Callable[[int], Settings]]:
    """Settings with a table of their own and ``shards`` index shards, deleted after the test."""
    made: list[Settings] = []

    def make(shards: int) -> Settings:
        configured = aws_server.model_copy(update={"table_name": f"t-{uuid.uuid4().hex[:12]}", "index_shards": shards})
        DynamoDBStore(configured).dynamodb.create_table(**create_table_request(configured.table_name))  # type: ignore[arg-type]
        made.append(configured)
        return configured

    yield make
    for configured in made:
        DynamoDBStore(configured).dynamodb.delete_table(TableName=configured.table_name)


def _question(
    n: int, session: int, expires_at: float, now: float, risk: str | None = None, dismissed: bool = False
) -> InteractionRecord:
    dismissed_by = (APPROVER,) if dismissed else ()
    return question(n, f"shard-{session:03d}", expires_at, now, principal=ALICE, risk=risk, dismissed_by=dismissed_by)


def _inbox_service(configured: Settings, clock: FakeClock) -> Service:
    from resumable.service.agent_factory import load_factory

    configured = configured.model_copy(update={"approver_principals": (APPROVER,)})
    return Service(DynamoDBStore(configured), configured, clock, load_factory("tests.factories:nested"))


def _pages(service: Service, principal: str, limit: int, *, dismissed: bool = False) -> list[list[str]]:
    page = service.inbox(principal, limit=limit, dismissed=dismissed)
    pages = [[i.request_id for i in page.interactions]]
    while page.cursor is not None:
        page = service.inbox(principal, limit=limit, cursor=page.cursor, dismissed=dismissed)
        pages.append([i.request_id for i in page.interactions])
    return pages


def test_every_partition_key_is_a_sessions_a_principals_or_a_shard(
    make_service: Callable[..., Service], store: DynamoDBStore, clock: FakeClock
) -> None:
    assert {KEY_SCHEMA["AttributeName"] for KEY_SCHEMA in TABLE_KEY_SCHEMA if KEY_SCHEMA["KeyType"] == "HASH"} | {
        key["AttributeName"] for index in TABLE_INDEXES for key in index["KeySchema"] if key["KeyType"] == "HASH"
    } == KEY_SHAPES.keys(), "a partition key without a shape here"
    service = make_service("nested", approver_principals=(APPROVER,))
    sessions = [f"shape-{n:02d}" for n in range(24)]
    for n, session in enumerate(sessions):  # asked; approved and settled; canceled; left to the sweeper
        started = service.start_turn(session, "delete", principal=ALICE)
        if n % 3 == 1:
            service.submit_approval(session, started.turn_id, started.interactions[0].request_id, APPROVE, APPROVER)
        elif n % 3 == 2:
            service.cancel(session, started.turn_id, ALICE)
    items = store.dynamodb.scan(TableName=store.table)["Items"]  # (the questions still asked in the inbox)
    clock.advance(service.settings.approval_expiry_seconds + 1)
    service.sweep()
    items += store.dynamodb.scan(TableName=store.table)["Items"]
    shards_used: dict[str, set[str]] = {}
    for item in items:
        for attribute, shape in KEY_SHAPES.items():
            if attribute not in item:
                continue
            written = item[attribute]["S"]
            match = re.fullmatch(shape, written)
            assert match is not None, f"{attribute} {written!r} is not of the shape {shape}"
            if "shard" not in shape or written.startswith("SESSION#"):
                continue
            session = item["pk"]["S"].removeprefix("SESSION#") if attribute != "pk" else _audited_session(item)
            assert int(match["shard"] or 0) == shard_of(session, store.shards), f"{written!r}: not its session's shard"
            shards_used.setdefault(attribute, set()).add(written)
    assert {a: len(s) > 1 for a, s in shards_used.items()} == {"pk": True, "gsi2pk": True, "gsi4pk": True}


def _audited_session(item: dict[str, Any]) -> str:
    return str(AuditRecord.model_validate_json(item["record"]["S"]).session_id)


def test_the_inbox_across_shards_lists_questions_due_at_once_in_order_page_after_page(
    new_table: Callable[[int], Settings], clock: FakeClock
) -> None:
    """Many questions due in the same instant, of the same risk, in sessions spread over every shard:
    ordered by session and request as one partition orders them, every page full but the last. (The
    sweeper's test has true ties: turns due at the same second.)"""
    now = clock.now()
    questions = [_question(n, n % 40, now + 600, now, "destructive") for n in range(120)]
    questions += [_question(n, n % 40, now + 600, now, None) for n in range(120, 150)]
    questions += [_question(n, n % 40, now - 1, now) for n in range(150, 170)]  # expired: never listed
    sharded_service = _inbox_service(new_table(16), clock)
    one_partition = _inbox_service(new_table(1), clock)
    for service in (sharded_service, one_partition):
        write_interactions(service.store, questions)  # type: ignore[arg-type]

    pages = _pages(sharded_service, APPROVER, 7)
    listed = [request for page in pages for request in page]
    assert listed == [
        q.request_id for q in sorted(questions[:150], key=lambda q: (q.risk is None, q.session_id, q.request_id))
    ]
    assert [len(page) for page in pages] == [7] * 21 + [3]
    assert pages == _pages(one_partition, APPROVER, 7)
    assert len({sharded(INBOX, q.session_id, 16) for q in questions}) == 16


def test_a_page_asks_every_shard_at_once(new_table: Callable[[int], Settings], clock: FakeClock) -> None:
    """A page's first Query of each shard is sent while the others are (on AWS a page waits for one
    Query, not sixteen one after another): each waits, before it is sent, for all sixteen to be asked."""
    service = _inbox_service(new_table(16), clock)
    questions = [_question(n, n, clock.now() + 600, clock.now()) for n in range(48)]
    write_interactions(service.store, questions)  # type: ignore[arg-type]
    together, asked, lock = threading.Barrier(16, timeout=HANG_SECONDS), [0], threading.Lock()

    def wait_for_the_others(**_: Any) -> None:
        with lock:
            asked[0] += 1
            first = asked[0] <= 16
        if first:
            together.wait()

    events = service.store.dynamodb.meta.events  # type: ignore[attr-defined]
    events.register("before-call.dynamodb.Query", wait_for_the_others)
    try:
        page = service.inbox(APPROVER, limit=10)
    finally:
        events.unregister("before-call.dynamodb.Query", wait_for_the_others)
    assert [i.request_id for i in page.interactions] == [q.request_id for q in questions[:10]]
    assert asked[0] >= 16


def test_a_read_of_no_items_asks_no_shard(new_table: Callable[[int], Settings], clock: FakeClock) -> None:
    store = DynamoDBStore(new_table(16))
    with counted_calls(store) as calls:
        assert store.due_turns(clock.now(), 0) == []
    assert calls == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    questions=st.lists(
        st.tuples(
            st.integers(0, 11),  # session
            st.sampled_from([-30.0, 5.0, 5.0, 1800.0, 3700.0, 7300.0]),  # expires in (ties, another hour)
            st.sampled_from([*RISKS, None]),
            st.booleans(),  # dismissed by the approver
        ),
        max_size=40,
    ),
    shards=st.sampled_from([2, 3, 16]),
    limit=st.integers(1, 9),
    dismissed=st.booleans(),
)
def test_a_sharded_inbox_pages_as_a_single_partition_does(
    new_table: Callable[[int], Settings],
    questions: list[tuple[int, float, str | None, bool]],
    shards: int,
    limit: int,
    dismissed: bool,
) -> None:
    clock = FakeClock()
    now = clock.now()
    records = [
        _question(n, s, now + e, now, r, d).model_copy(update={"principal": ALICE if s % 2 else BOB})
        for n, (s, e, r, d) in enumerate(questions)
    ]
    services = [_inbox_service(new_table(count), clock) for count in (shards, 1)]
    for service in services:
        write_interactions(service.store, records)  # type: ignore[arg-type]
    for reader in (APPROVER, ALICE):
        sharded_pages, reference = (_pages(service, reader, limit, dismissed=dismissed) for service in services)
        assert sharded_pages == reference
        # And against the order itself, worked out here: most urgent first, none expired or dismissed.
        shown = [
            r
            for r in records
            if r.expires_at > now
            and reader in (APPROVER, r.principal)
            and (dismissed or reader != APPROVER or not r.dismissed_by)
        ]
        urgent_first = sorted(shown, key=lambda r: inbox_sort_key(r.expires_at, r.session_id, r.request_id, r.risk))
        assert [q for page in sharded_pages for q in page] == [r.request_id for r in urgent_first]


def test_a_cursor_goes_on_after_the_shard_count_is_raised_and_one_from_before_shards_too(
    new_table: Callable[[int], Settings], clock: FakeClock
) -> None:
    now = clock.now()
    configured = new_table(4)
    questions = [_question(n, n, now + 600 + n, now) for n in range(30)]
    before = _inbox_service(configured, clock)
    write_interactions(before.store, questions[:20])  # type: ignore[arg-type]
    first = before.inbox(APPROVER, limit=8)

    after = _inbox_service(configured.model_copy(update={"index_shards": 16}), clock)
    write_interactions(after.store, questions[20:])  # type: ignore[arg-type]
    assert first.cursor is not None
    rest = after.inbox(APPROVER, limit=50, cursor=first.cursor)
    listed = [i.request_id for i in (*first.interactions, *rest.interactions)]
    assert listed == [q.request_id for q in questions]
    assert rest.cursor is None

    # A cursor as the inbox issued them before it was sharded: DynamoDB's key where the Query ended.
    eighth = questions[7]
    item_keys = {
        "pk": {"S": f"SESSION#{eighth.session_id}"},
        "sk": {"S": "any"},
        "gsi2pk": {"S": INBOX},
        "gsi2sk": {"S": first_sort_key(before, eighth)},
    }
    old = cursors.issue(item_keys, INBOX, after.deps.keys.cursor())
    assert [i.request_id for i in after.inbox(APPROVER, limit=50, cursor=old).interactions] == listed[8:]
    with pytest.raises(ValidationFailedError, match="not one this inbox issued"):
        after.inbox(APPROVER, cursor=cursors.issue({**item_keys, "extra": {"S": ""}}, INBOX, after.deps.keys.cursor()))


def first_sort_key(service: Service, question: InteractionRecord) -> str:
    from resumable.store.codec import interaction_item

    return str(interaction_item(question, service.settings.index_shards)["gsi2sk"]["S"])


def test_the_sweeper_finds_the_earliest_due_turns_across_shards(
    new_table: Callable[[int], Settings], clock: FakeClock
) -> None:
    configured = new_table(16)
    store = DynamoDBStore(configured)
    now = clock.now()
    turns = [
        TurnRecord(
            session_id=f"due-{n:03d}",
            turn_id=f"{n:032x}",
            root_turn_id=f"{n:032x}",
            agent="a",
            agent_path=["a"],
            status="waiting",
            prompt="p",
            created_at=now - 100,
            updated_at=now - 100 + (n * 7) % 50,  # (ties among them)
        )
        for n in range(60)
    ]
    for turn in turns:
        store.dynamodb.put_item(TableName=store.table, Item=turn_item(turn, store.shards))
    found = store.due_turns(now, 10)
    assert [t.due_at for t in found] == sorted(t.updated_at for t in turns)[:10]
    assert {t.partition for t in found} == {sharded("UNSETTLED", t.root.session_id, 16) for t in found}
    assert len(store.due_turns(now, 100)) == 60
    assert store.due_turns(now - 100, 100) == [t for t in found if t.due_at <= now - 100]


def test_the_audit_trail_of_a_day_across_shards_is_in_time_order_page_after_page(
    make_service: Callable[..., Service], clock: FakeClock
) -> None:
    service = make_service("nested", approver_principals=(APPROVER,))
    now = clock.now()
    records = [
        AuditRecord(
            kind="decision",
            outcome="approved",
            at=now - 3600 + (n * 13) % 200,  # (ties among them)
            session_id=f"audited-{n % 37:03d}",
            root_turn_id=f"{n:032x}",
            turn_id=f"{n:032x}",
            request_id=f"r{n:024x}",
            tool="t",
            by=APPROVER,
            purge_at=now + 86400,
        )
        for n in range(90)
    ]
    table = service.settings.table_name
    for record in records:
        service.store.dynamodb.transact_write_items(  # type: ignore[attr-defined]
            TransactItems=[audit_put(table, record, service.settings.index_shards)]
        )
    listed: list[str] = []
    page = service.audit(APPROVER, limit=8)
    listed += [r.request_id for r in page.records]
    while page.cursor is not None:
        page = service.audit(APPROVER, limit=8, after=page.cursor)
        listed += [r.request_id for r in page.records]
    assert listed == [r.request_id for r in sorted(records, key=lambda r: (r.at, r.request_id))]


def test_a_page_among_many_expired_questions_not_yet_swept_makes_a_bounded_number_of_queries_and_goes_on(
    new_table: Callable[[int], Settings], clock: FakeClock
) -> None:
    """Questions past their expiry that nothing settled yet are read and left out by the filter; a page
    stops reading after a bounded number of Queries, and its cursor goes on from where it got to."""
    clock.advance(1800)  # (mid-hour: questions that expired in the last seconds are in the hour read)
    now = clock.now()
    expired = [_question(n, n % 50, now - 1 - n % 7, now) for n in range(400)]
    waiting = _question(400, 7, now + 600, now)
    service = _inbox_service(new_table(16), clock)
    write_interactions(service.store, [*expired, waiting])  # type: ignore[arg-type]
    pages, queries = [], []
    page = None
    while page is None or page.cursor is not None:
        with counted_calls(service.store) as calls:  # type: ignore[arg-type]
            page = service.inbox(APPROVER, limit=1, cursor=page.cursor if page else None)
        pages.append([i.request_id for i in page.interactions])
        queries.append(len(calls))
        assert len(pages) < 50, "each page moves on"
    assert [r for p in pages for r in p] == [waiting.request_id]
    assert max(queries) <= MAX_READS * (2 * 16 + 8), queries

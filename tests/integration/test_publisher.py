"""Every outbox event is published, at least once, in order per session: the table's stream read as
the template's event source mapping reads it (resumable.local.events), the Publisher's handler, the
embedded EventBridge bus, and a queue a rule subscribes to every event."""

from __future__ import annotations

import json
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import jsonschema
import pytest

from resumable.aws.eventbridge import ATTEMPTS, Entry
from resumable.config import Settings
from resumable.events.publisher import Publishing
from resumable.events.schemas import MODELS, SCHEMAS, json_schema, schema_file
from resumable.exceptions import AwsError
from resumable.local.events import EventResources, Handler, create_event_resources, publishing
from resumable.local.functions import ROOT
from resumable.service import Service
from resumable.store import DynamoDBStore
from resumable.store.codec import encode, key
from resumable.store.publishing import PURGE_AFTER_SECONDS
from resumable.store.resources import TTL_ATTRIBUTE
from tests.clock import FakeClock
from tests.integration.helpers import APPROVE
from tests.metrics import forget_metrics, printed_metrics
from tests.patience import HANG_SECONDS, eventually
from tests.stream import outbox_records

Event = dict[str, Any]


class Queue:
    """The queue of every event: what a consumer reads, every delivery kept."""

    def __init__(self, settings: Settings, url: str) -> None:
        from resumable.aws.clients import client

        self.sqs, self.url = client("sqs", settings), url
        self.deliveries: list[Event] = []

    def drain(self) -> list[Event]:
        while True:
            reply = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10)
            messages = reply.get("Messages", [])
            if not messages:
                return self.deliveries
            for message in messages:
                self.deliveries.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=message["ReceiptHandle"])

    def until(self, count: int) -> list[Event]:
        """The events once ``count`` distinct ones (by eventId) have arrived."""
        return eventually(
            lambda: self.deliveries if len({e["detail"]["eventId"] for e in self.drain()}) >= count else None,
            f"{count} distinct events on the queue",
        )


def by_session(events: list[Event]) -> dict[str, list[Event]]:
    """Each session's distinct events, in its sequence order."""
    distinct = {e["detail"]["eventId"]: e for e in events}
    sessions: dict[str, list[Event]] = defaultdict(list)
    for event in distinct.values():
        sessions[event["detail"]["sessionId"]].append(event)
    return {s: sorted(found, key=lambda e: e["detail"]["sequence"]) for s, found in sessions.items()}


def kinds(events: list[Event]) -> list[str]:
    def kind(event: Event) -> str:
        detail = event["detail"]
        extra = detail.get("status") or detail.get("decision") or ""
        return f"{event['detail-type']}{':' + extra if extra else ''}"

    return [kind(e) for e in events]


@pytest.fixture
def events_settings(aws: Settings) -> Settings:
    return aws.model_copy(update={"event_bus_name": f"bus-{uuid.uuid4().hex[:10]}", "api_url": "http://api.test"})


@pytest.fixture
def publisher_clock() -> FakeClock:
    return FakeClock()


@contextmanager
def start_publishing(
    settings: Settings, clock: FakeClock, wrap: Callable[[Publishing], Handler] | None = None
) -> Iterator[tuple[EventResources, Queue]]:
    def handler(given: Settings) -> Handler:
        made = Publishing(given, clock)
        return wrap(made) if wrap else made.handle

    with publishing(settings, handler) as (resources, _):
        yield resources, Queue(settings, resources.events_queue_url)


@pytest.fixture
def published(events_settings: Settings, publisher_clock: FakeClock) -> Iterator[tuple[EventResources, Queue]]:
    with start_publishing(events_settings, publisher_clock) as started:
        yield started


def test_an_idle_poller_waits_for_the_next_stream_record_and_is_woken_by_it_by_caught_up_and_by_stop(
    make_service: Callable[..., Service],
    events_settings: Settings,
    publisher_clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The poller asks moto nothing while nothing is written: with no idle wait's end at all, a turn's
    events still arrive, caught_up still returns and stop still ends it, each woken at once."""
    from resumable.local import streams

    monkeypatch.setattr(streams, "IDLE_SECONDS", None)
    with start_publishing(events_settings, publisher_clock) as (resources, queue):
        assert resources.poller is not None
        resources.poller.caught_up(HANG_SECONDS)  # (idle now, waiting)
        make_service("nested").start_turn("woken", "delete")
        assert kinds(queue.until(1)) == ["Interaction Requested"]
        resources.poller.caught_up(HANG_SECONDS)
        thread = resources.poller._thread
    assert not thread.is_alive()


def test_start_answer_cancel_and_expire_publish_exactly_the_expected_events_in_order_per_session(
    make_service: Callable[..., Service],
    events_settings: Settings,
    published: tuple[EventResources, Queue],
    clock: FakeClock,
) -> None:
    _, queue = published
    service = make_service("nested")
    approved = service.start_turn("approve", "delete")
    [question] = approved.interactions
    service.submit_approval("approve", approved.turn_id, question.request_id, APPROVE)
    denied = service.start_turn("deny", "delete")
    service.submit_approval(
        "deny", denied.turn_id, denied.interactions[0].request_id, {"decision": "deny", "message": "no"}
    )
    canceled = service.start_turn("cancel", "delete")
    service.cancel("cancel", canceled.turn_id)
    expiring = service.start_turn("expire", "delete")
    clock.advance(service.settings.approval_expiry_seconds + 1)
    assert service.get_turn("expire", expiring.turn_id).status == "expired"

    queue.until(12)
    assert published[0].poller is not None
    published[0].poller.caught_up(HANG_SECONDS)  # a duplicate, if any, is on the queue by now
    sessions = by_session(queue.drain())
    assert {s: kinds(e) for s, e in sessions.items()} == {
        "approve": ["Interaction Requested", "Interaction Answered:approve", "Turn Settled:completed"],
        "deny": ["Interaction Requested", "Interaction Answered:deny", "Turn Settled:completed"],
        "cancel": ["Interaction Requested", "Interaction Closed:superseded", "Turn Settled:canceled"],
        "expire": ["Interaction Requested", "Interaction Closed:expired", "Turn Settled:expired"],
    }
    for events in sessions.values():
        assert [e["detail"]["sequence"] for e in events] == [1, 2, 3]
    assert len(queue.deliveries) == 12, "without a failure, every event is delivered once"

    requested = sessions["approve"][0]["detail"]
    assert requested["turnId"] == approved.turn_id
    assert requested["childTurnId"] == question.child_turn_id != approved.turn_id
    assert requested["agentPath"] == ["orchestrator", "db_admin"]
    assert (requested["tool"], requested["input"]) == ("delete_record", {"name": "prod-db"})
    assert requested["summary"] == 'orchestrator -> db_admin wants to run delete_record {"name": "prod-db"}'
    path = f"/sessions/approve/turns/{approved.turn_id}/interactions/{question.request_id}"
    assert (requested["answerPath"], requested["answerUrl"]) == (path, "http://api.test" + path)
    answered = sessions["approve"][1]["detail"]
    assert (answered["requestId"], answered["answeredBy"]) == (question.request_id, "application")
    assert sessions["approve"][2]["detail"]["output"] == "The record is gone."
    assert sessions["expire"][2]["detail"]["reason"] == "an interaction expired before it was answered"


def test_every_emitted_event_matches_the_published_json_schema_of_its_detail_type(
    make_service: Callable[..., Service], published: tuple[EventResources, Queue], clock: FakeClock
) -> None:
    _, queue = published
    service = make_service("fan_out")
    started = service.start_turn("schemas", "go")
    service.cancel("schemas", started.turn_id)
    events = queue.until(len(started.interactions) * 2 + 1)
    schemas = {t: json.loads((SCHEMAS / schema_file(t)).read_text()) for t in MODELS}
    for event in events:
        assert event["source"] == "resumable"
        jsonschema.validate(event["detail"], schemas[event["detail-type"]])
    assert {e["detail-type"] for e in events} == {"Interaction Requested", "Interaction Closed", "Turn Settled"}


def test_a_deleted_and_restored_session_publishes_its_cancel_then_its_deletion_then_its_restore(
    make_service: Callable[..., Service], published: tuple[EventResources, Queue]
) -> None:
    _, queue = published
    service = make_service("nested")
    started = service.start_turn("forgotten", "delete", "arn:aws:iam::1:user/owner")
    service.delete_session("forgotten", "arn:aws:iam::1:user/owner")
    service.restore_session("forgotten", "arn:aws:iam::1:user/owner")
    events = by_session(queue.until(5))["forgotten"]
    assert kinds(events) == [
        "Interaction Requested",
        "Interaction Closed:superseded",
        "Turn Settled:canceled",
        "Session Deleted",
        "Session Restored",
    ]
    schemas = {t: json.loads((SCHEMAS / schema_file(t)).read_text()) for t in MODELS}
    for event in events:
        jsonschema.validate(event["detail"], schemas[event["detail-type"]])
    deleted, restored = events[3]["detail"], events[4]["detail"]
    assert (deleted["turnId"], deleted["generation"], deleted["deletedBy"]) == (None, 1, "arn:aws:iam::1:user/owner")
    assert (restored["generation"], restored["restoredBy"]) == (1, "arn:aws:iam::1:user/owner")
    assert started.turn_id == events[0]["detail"]["turnId"]


def test_the_schema_files_are_the_ones_the_models_make() -> None:
    for detail_type in MODELS:
        on_disk = json.loads((SCHEMAS / schema_file(detail_type)).read_text())
        assert on_disk == json_schema(detail_type), (
            f"events/schemas/{schema_file(detail_type)} is stale: run .venv/bin/python -m resumable.events.schemas"
        )
    assert sorted(p.name for p in SCHEMAS.glob("*.json")) == sorted(schema_file(t) for t in MODELS)
    assert SCHEMAS.is_relative_to(ROOT)


class Killed(BaseException):
    """The Lambda runtime dying mid-batch: nothing in the handler catches it."""


def dying(made: Publishing, when: str) -> Handler:
    """``made``'s handler, whose invocation fails (as Lambda reports a runtime that died) on ``Killed``."""

    def handle(event: dict[str, Any], context: Any) -> Any:
        try:
            return made.handle(event, context)
        except Killed:
            raise RuntimeError(f"the invocation died {when}") from None

    return handle


def dies_after(puts: int) -> Callable[[Publishing], Handler]:
    """A publisher whose first invocation dies once it has put ``puts`` events on the bus."""

    def wrap(made: Publishing) -> Handler:
        state = {"puts": 0, "died": False}
        put_all = made.bus.put_all

        def counted(source: str, entries: list[Entry]) -> list[str | None]:
            if not state["died"] and state["puts"] + len(entries) > puts:
                put_all(source, entries[: puts - state["puts"]])
                state["died"] = True
                raise Killed
            state["puts"] += len(entries)
            return put_all(source, entries)

        made.bus.put_all = counted  # type: ignore[method-assign]
        return dying(made, "mid-batch")

    return wrap


def test_a_publisher_killed_mid_batch_loses_nothing_and_its_duplicates_carry_the_same_event_id_and_sequence(
    make_service: Callable[..., Service], events_settings: Settings, publisher_clock: FakeClock
) -> None:
    service = make_service("nested")
    for session in ("one", "two"):
        started = service.start_turn(session, "delete")
        service.submit_approval(session, started.turn_id, started.interactions[0].request_id, APPROVE)
    # Publishing starts once all six are in the stream: the first batch holds them all.
    with publishing(events_settings, lambda s: dies_after(4)(Publishing(s, publisher_clock))) as (resources, _):
        queue = Queue(events_settings, resources.events_queue_url)
        deliveries = queue.until(6)
    sessions = by_session(deliveries)
    assert {s: kinds(e) for s, e in sessions.items()} == {
        s: ["Interaction Requested", "Interaction Answered:approve", "Turn Settled:completed"] for s in ("one", "two")
    }
    assert [[e["detail"]["sequence"] for e in events] for events in sessions.values()] == [[1, 2, 3], [1, 2, 3]]
    once = {}
    for delivery in deliveries:
        once.setdefault(delivery["detail"]["eventId"], []).append(delivery["detail"])
    duplicated = [found for found in once.values() if len(found) > 1]
    assert len(duplicated) == 4, "the four events put before the publisher died are delivered again"
    assert all(found[0] == found[1] for found in duplicated), "a duplicate is the same event: id, sequence, detail"


def test_a_record_that_can_never_be_published_goes_to_the_dead_letter_queue_and_the_rest_go_on(
    make_service: Callable[..., Service],
    events_settings: Settings,
    published: tuple[EventResources, Queue],
    store: DynamoDBStore,
) -> None:
    resources, queue = published
    service = make_service("nested")
    first = service.start_turn("poisoned", "delete")
    store.dynamodb.put_item(
        TableName=store.table,
        Item={
            **key("poisoned", f"TURN#{first.turn_id}#EVENT#bogus"),
            **encode(
                {"entity": "event", "type": "Turn Exploded", "turn_id": first.turn_id, "detail": {}, "created_at": 1.0}
            ),
        },
    )
    service.cancel("poisoned", first.turn_id)
    sessions = by_session(queue.until(3))
    assert kinds(sessions["poisoned"]) == [
        "Interaction Requested",
        "Interaction Closed:superseded",
        "Turn Settled:canceled",
    ]
    assert [e["detail"]["sequence"] for e in sessions["poisoned"]] == [1, 2, 3], "no number went to the bad record"
    dead = Queue(events_settings, resources.dead_letter_queue_url)
    [letter] = eventually(lambda: dead.drain() or None, "the bad record in the dead-letter queue")
    assert "never publishable" in letter["reason"]
    assert letter["record"]["dynamodb"]["Keys"]["sk"]["S"].endswith("#EVENT#bogus")


def test_a_bus_that_refuses_an_event_holds_back_the_rest_of_its_session_and_no_other(
    make_service: Callable[..., Service],
    events_settings: Settings,
    publisher_clock: FakeClock,
    capsys: pytest.CaptureFixture[str],
) -> None:
    refusals = [3]  # invocations that fail it, fewer than the mapping's retries

    def wrap(made: Publishing) -> Handler:
        put_all = made.bus.put_all

        def flaky(source: str, entries: list[Entry]) -> list[str | None]:
            refused = [
                bool(refusals[0])
                and json.loads(e.detail)["sessionId"] == "held"
                and e.detail_type == "Interaction Closed"
                for e in entries
            ]
            if any(refused):
                refusals[0] -= 1
            outcome = iter(put_all(source, [e for e, r in zip(entries, refused, strict=True) if not r]))
            refusal = "bus refused the event (ThrottlingException: slow down); it was not published"
            return [refusal if r else next(outcome) for r in refused]

        made.bus.put_all = flaky  # type: ignore[method-assign]
        return made.handle

    service = make_service("nested")
    for session in ("held", "other"):
        started = service.start_turn(session, "delete")
        service.cancel(session, started.turn_id)
    canceled = ["Interaction Requested", "Interaction Closed:superseded", "Turn Settled:canceled"]
    forget_metrics(capsys)
    with start_publishing(events_settings, publisher_clock, wrap) as (_, queue):
        deliveries = queue.until(6)
    assert refusals == [0]
    counted = printed_metrics(capsys)
    # Each refusal is a failure; what a retry delivers again (the batch from the refused record on, the
    # other session's events too) is published again, and counted again.
    assert sum(counted["PublisherFailures"]) == 3
    assert sum(counted["EventsPublished"]) >= 6
    sessions = by_session(deliveries)
    assert kinds(sessions["other"]) == kinds(sessions["held"]) == canceled
    held = [e["detail"]["sequence"] for e in deliveries if e["detail"]["sessionId"] == "held"]
    assert held == [1, 2, 3], "held's events reach the queue in order, each once: none overtook the refused one"


def test_published_outbox_items_expire(
    make_service: Callable[..., Service],
    published: tuple[EventResources, Queue],
    store: DynamoDBStore,
    publisher_clock: FakeClock,
) -> None:
    _, queue = published
    service = make_service("nested")
    started = service.start_turn("expiring", "delete")
    service.cancel("expiring", started.turn_id)
    queue.until(3)

    def marked() -> list[dict[str, Any]] | None:  # (the publisher marks each item once its event is sent)
        items = store.dynamodb.query(
            TableName=store.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": "SESSION#expiring"}},
        )["Items"]
        outbox = [i for i in items if i.get("entity") == {"S": "event"}]
        return outbox if all("published_at" in i for i in outbox) else None

    outbox = eventually(marked, "every published outbox item marked")
    assert len(outbox) == 3
    for item in outbox:
        assert float(item["published_at"]["N"]) == publisher_clock.now()
        assert int(item[TTL_ATTRIBUTE]["N"]) == int(publisher_clock.now() + PURGE_AFTER_SECONDS)


def test_the_events_of_one_commit_are_numbered_in_the_commits_order_whatever_order_the_stream_delivers_them(
    make_service: Callable[..., Service], events_settings: Settings, publisher_clock: FakeClock, store: DynamoDBStore
) -> None:
    """DynamoDB Streams does not promise the order of one transaction's records: deliver each commit's
    reversed (the commits themselves in order). They are numbered, and put on the bus, in order."""
    service = make_service("fan_out")
    started = service.start_turn("reversed", "go")
    service.cancel("reversed", started.turn_id)
    items = store.dynamodb.query(
        TableName=store.table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :events)",
        ExpressionAttributeValues={
            ":pk": {"S": "SESSION#reversed"},
            ":events": {"S": f"TURN#{started.turn_id}#EVENT#"},
        },
    )["Items"]
    records = [
        {
            "eventID": str(n),
            "eventName": "INSERT",
            "eventSource": "aws:dynamodb",
            "dynamodb": {"Keys": {"pk": i["pk"], "sk": i["sk"]}, "NewImage": i, "SequenceNumber": f"{n:030d}"},
        }
        for n, i in enumerate(sorted(items, key=lambda i: (i["sk"]["S"].split("#")[3], -items.index(i))))
    ]
    resources = create_event_resources(events_settings)
    settings = events_settings.model_copy(update={"dead_letter_queue_url": resources.dead_letter_queue_url})
    assert Publishing(settings, publisher_clock).handle({"Records": records}, None) == {"batchItemFailures": []}
    published = Queue(settings, resources.events_queue_url).until(len(items))
    in_commit_order = sorted(published, key=lambda e: e["detail"]["sequence"])
    assert kinds(in_commit_order) == [
        "Interaction Requested",
        "Interaction Requested",
        "Interaction Closed:superseded",
        "Interaction Closed:superseded",
        "Turn Settled:canceled",
    ]
    assert [e["detail"]["sequence"] for e in in_commit_order] == [1, 2, 3, 4, 5]
    assert [e["detail"]["sequence"] for e in published] == [1, 2, 3, 4, 5], "put on the bus in the session's order"


def test_a_later_commits_events_seen_before_an_earlier_ones_are_numbered_as_seen_each_once_without_a_gap(
    make_service: Callable[..., Service],
    events_settings: Settings,
    publisher_clock: FakeClock,
    store: DynamoDBStore,
    clock: FakeClock,
) -> None:
    """DynamoDB Streams promises the order of one item's records only: a session's items share a
    partition, whose records come in order, but a partition DynamoDB splits (or a redelivery the
    mapping bisects) could deliver a later commit's events first. docs/events.md says what follows:
    they are numbered in the order the publisher sees them (``sequence`` is then the publishing
    order), each once and with no gap, and ``occurredAt`` still orders the changes."""
    service = make_service("fan_out")
    started = service.start_turn("late", "go")
    clock.advance(1)
    service.cancel("late", started.turn_id)
    items = store.dynamodb.query(
        TableName=store.table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :events)",
        ExpressionAttributeValues={":pk": {"S": "SESSION#late"}, ":events": {"S": f"TURN#{started.turn_id}#EVENT#"}},
        ConsistentRead=True,
    )["Items"]
    by_commit = sorted(items, key=lambda i: i["sk"]["S"])
    [first_commit, second_commit] = sorted({i["sk"]["S"].split("#")[3] for i in items})
    seen = [i for i in by_commit if i["sk"]["S"].split("#")[3] == second_commit]
    seen += [i for i in by_commit if i["sk"]["S"].split("#")[3] == first_commit]
    records = [
        {
            "eventID": str(n),
            "eventName": "INSERT",
            "eventSource": "aws:dynamodb",
            "dynamodb": {"Keys": {"pk": i["pk"], "sk": i["sk"]}, "NewImage": i, "SequenceNumber": f"{n:030d}"},
        }
        for n, i in enumerate(seen)
    ]
    resources = create_event_resources(events_settings)
    settings = events_settings.model_copy(update={"dead_letter_queue_url": resources.dead_letter_queue_url})
    assert Publishing(settings, publisher_clock).handle({"Records": records}, None) == {"batchItemFailures": []}
    published = Queue(settings, resources.events_queue_url).until(len(items))
    by_sequence = sorted(published, key=lambda e: e["detail"]["sequence"])
    assert [e["detail"]["sequence"] for e in by_sequence] == [1, 2, 3, 4, 5]
    assert len({e["detail"]["eventId"] for e in published}) == 5
    assert kinds(by_sequence) == [
        "Interaction Closed:superseded",
        "Interaction Closed:superseded",
        "Turn Settled:canceled",
        "Interaction Requested",
        "Interaction Requested",
    ], "numbered in the order the publisher saw them"
    by_time = sorted(published, key=lambda e: e["detail"]["occurredAt"])
    assert kinds(by_time)[:2] == ["Interaction Requested", "Interaction Requested"]
    assert kinds(by_time)[-1] == "Turn Settled:canceled"


def test_an_input_and_an_output_far_over_what_an_event_holds_are_published_cut_saying_so(
    make_service: Callable[..., Service], published: tuple[EventResources, Queue]
) -> None:
    """An EventBridge entry holds 256 KB (the embedded AWS refuses more, as AWS does): a 400 KB tool
    input is published as a preview, a 500 KB output cut at 64 KB with a note, and every event of the
    session is delivered."""
    _, queue = published
    service = make_service("oversized")
    started = service.start_turn("big", "delete everything")
    service.submit_approval("big", started.turn_id, started.interactions[0].request_id, APPROVE)

    events = by_session(queue.until(3))["big"]
    assert kinds(events) == ["Interaction Requested", "Interaction Answered:approve", "Turn Settled:completed"]
    assert all(len(json.dumps(e["detail"]).encode()) < 256 * 1024 for e in events)
    assert events[0]["detail"]["input"]["truncated"] is True
    output = events[2]["detail"]["output"]
    assert output.startswith("y" * 1000) and output.endswith("[cut at 65536 bytes; the whole text is in the snapshot]")


def _counted(made: Publishing) -> Counter[str]:
    """The AWS calls ``made``'s clients make, by operation."""
    calls: Counter[str] = Counter()

    def count(event_name: str, **_: Any) -> None:
        calls[event_name.rsplit(".", 1)[-1]] += 1

    for aws in (made.outbox.dynamodb, made.bus.client):
        aws.meta.events.register("before-call", count)
    return calls


def test_a_backlog_is_published_in_bulk_in_each_sessions_order(
    make_service: Callable[..., Service], events_settings: Settings, publisher_clock: FakeClock, store: DynamoDBStore
) -> None:
    """25 sessions' starts and cancels (75 events) in one batch: the counters read at once, numbered in
    one transaction (25 counters and 75 events: 100 items), PutEvents of 10 in three rounds (a
    session's next event only once the one before is on the bus), the marks in one transaction."""
    service = make_service("nested")
    sessions = [f"bulk-{n:02d}" for n in range(25)]
    for session in sessions:
        started = service.start_turn(session, "delete")
        service.cancel(session, started.turn_id)
    resources = create_event_resources(events_settings)
    settings = events_settings.model_copy(update={"dead_letter_queue_url": resources.dead_letter_queue_url})
    made = Publishing(settings, publisher_clock)
    calls = _counted(made)
    assert made.handle({"Records": outbox_records(store, sessions)}, None) == {"batchItemFailures": []}
    assert dict(calls) == {"BatchGetItem": 1, "TransactWriteItems": 1 + 1, "PutEvents": 3 * 3}
    published = Queue(settings, resources.events_queue_url).until(75)
    assert len(published) == 75, "each event once"
    canceled = ["Interaction Requested", "Interaction Closed:superseded", "Turn Settled:canceled"]
    assert {s: kinds(e) for s, e in by_session(published).items()} == dict.fromkeys(sessions, canceled)
    for session in sessions:
        arrived = [e["detail"]["sequence"] for e in published if e["detail"]["sessionId"] == session]
        assert arrived == [1, 2, 3], f"{session}'s events reached the queue in its order"
    items = store.dynamodb.scan(
        TableName=store.table, FilterExpression="entity = :e", ExpressionAttributeValues={":e": {"S": "event"}}
    )
    assert all("published_at" in i for i in items["Items"]), "every event marked published"


def test_an_entry_the_bus_refuses_is_put_again_by_itself_and_the_rest_of_the_call_goes_on(
    make_service: Callable[..., Service], events_settings: Settings, publisher_clock: FakeClock, store: DynamoDBStore
) -> None:
    """PutEvents answers a FailedEntryCount: only the refused entries are put again, in the same
    invocation; nothing fails, nothing is put twice. Refused past the attempts, its session is held back."""
    service = make_service("nested")
    sessions = ["flaky", "steady", "held"]
    for session in sessions:
        started = service.start_turn(session, "delete")
        service.cancel(session, started.turn_id)
    resources = create_event_resources(events_settings)
    settings = events_settings.model_copy(update={"dead_letter_queue_url": resources.dead_letter_queue_url})
    made = Publishing(settings, publisher_clock)
    calls = _counted(made)
    put_events = made.bus._put_events  # (one PutEvents: its FailedEntryCount, played here)
    refusals = {"flaky": ATTEMPTS - 1, "held": ATTEMPTS}

    asked: list[list[str]] = []

    def partly(source: str, entries: list[Entry]) -> list[str | None]:
        asked.append([f"{json.loads(e.detail)['sessionId']}:{json.loads(e.detail)['sequence']}" for e in entries])
        refused = []
        for entry in entries:
            detail = json.loads(entry.detail)
            refuse = detail["sequence"] == 2 and refusals.get(detail["sessionId"], 0) > 0
            refusals[detail["sessionId"]] = refusals.get(detail["sessionId"], 0) - refuse
            refused.append(refuse)
        taken = [e for e, r in zip(entries, refused, strict=True) if not r]
        outcome = iter(put_events(source, taken) if taken else [])
        return ["bus refused the event (InternalFailure: try again)" if r else next(outcome) for r in refused]

    made.bus._put_events = partly  # type: ignore[method-assign]
    records = outbox_records(store, sessions)
    failures = made.handle({"Records": records}, None)["batchItemFailures"]
    held = [r["dynamodb"]["SequenceNumber"] for r in records if r["dynamodb"]["Keys"]["pk"]["S"] == "SESSION#held"]
    assert [f["itemIdentifier"] for f in failures] == held[1:], "held's second and third are held back, not its first"
    published = Queue(settings, resources.events_queue_url).until(7)
    assert sorted((e["detail"]["sessionId"], e["detail"]["sequence"]) for e in published) == [
        *[("flaky", n) for n in (1, 2, 3)],
        ("held", 1),
        *[("steady", n) for n in (1, 2, 3)],
    ], "each once: an entry put again is the refused one alone"
    assert asked == [
        ["flaky:1", "steady:1", "held:1"],
        ["flaky:2", "steady:2", "held:2"],  # (ATTEMPTS is 3: refused twice, flaky's goes in the third)
        ["flaky:2", "held:2"],
        ["flaky:2", "held:2"],
        ["flaky:3", "steady:3"],
    ], "a round, a round whose refused entries are put again alone, the last round without the held session"
    assert calls["PutEvents"] == 4, "every PutEvents with an entry the bus could take"


def test_a_publisher_killed_between_putevents_and_its_marks_publishes_them_again_the_same_and_marks_them(
    make_service: Callable[..., Service], events_settings: Settings, publisher_clock: FakeClock, store: DynamoDBStore
) -> None:
    service = make_service("nested")
    for session in ("one", "two"):
        started = service.start_turn(session, "delete")
        service.submit_approval(session, started.turn_id, started.interactions[0].request_id, APPROVE)
    died = []

    def wrap(made: Publishing) -> Handler:
        mark = made.outbox.mark_all_published

        def dies(items: list[tuple[str, str]], now: float) -> list[Exception | None]:
            if not died:
                died.append(len(items))
                raise Killed
            return mark(items, now)

        made.outbox.mark_all_published = dies  # type: ignore[method-assign]
        return dying(made, "between PutEvents and the marks")

    with start_publishing(events_settings, publisher_clock, wrap) as (_, queue):
        deliveries = queue.until(6)

        def marked() -> bool | None:
            items = store.dynamodb.scan(
                TableName=store.table, FilterExpression="entity = :e", ExpressionAttributeValues={":e": {"S": "event"}}
            )["Items"]
            return all("published_at" in i for i in items) or None

        eventually(marked, "every event marked once published again")
        deliveries = queue.drain()
    assert died == [6], "it died with all six on the bus and none marked"
    once: dict[str, list[dict[str, Any]]] = {}
    for delivery in deliveries:
        once.setdefault(delivery["detail"]["eventId"], []).append(delivery["detail"])
    assert sorted(len(found) for found in once.values()) == [2] * 6, "all six put again"
    assert all(found[0] == found[1] for found in once.values()), "the same event: id, sequence, detail"


def test_a_redelivered_session_is_left_out_of_its_transaction_and_keeps_its_numbers_the_rest_are_numbered_together(
    make_service: Callable[..., Service], events_settings: Settings, publisher_clock: FakeClock, store: DynamoDBStore
) -> None:
    service = make_service("nested")
    for session in ("again", "first", "later"):
        started = service.start_turn(session, "delete")
        service.cancel(session, started.turn_id)
    resources = create_event_resources(events_settings)
    settings = events_settings.model_copy(update={"dead_letter_queue_url": resources.dead_letter_queue_url})
    assert Publishing(settings, publisher_clock).handle(
        {"Records": outbox_records(store, ["again", "first"])}, None
    ) == {"batchItemFailures": []}
    made = Publishing(settings, publisher_clock)  # (a new invocation: nothing remembered)
    calls = _counted(made)
    records = outbox_records(store, ["again", "later"])
    assert made.handle({"Records": records}, None) == {"batchItemFailures": []}
    assert calls["Query"] == 3, "the redelivered session's three events alone are looked up, one at a time"
    numbering = calls["TransactWriteItems"] - 1  # (and one that marks them)
    assert numbering == 2, "the transaction of both, refused for the one numbered before; then the other's alone"
    published = Queue(settings, resources.events_queue_url).until(9)
    sequences = {(e["detail"]["sessionId"], e["detail"]["eventId"]): e["detail"]["sequence"] for e in published}
    assert sorted(n for (s, _), n in sequences.items() if s == "later") == [1, 2, 3]
    again = [e["detail"] for e in published if e["detail"]["sessionId"] == "again"]
    assert len(again) == 6 and {d["eventId"]: d["sequence"] for d in again[:3]} == {
        d["eventId"]: d["sequence"] for d in again[3:]
    }, "the same numbers again"


def _redelivered(records: list[dict[str, Any]], failures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What Lambda delivers next: the batch from the lowest record reported failed on."""
    lowest = min(f["itemIdentifier"] for f in failures)
    return [r for r in records if r["dynamodb"]["SequenceNumber"] >= lowest]


def _resources(events_settings: Settings) -> tuple[Settings, EventResources]:
    resources = create_event_resources(events_settings)
    return events_settings.model_copy(update={"dead_letter_queue_url": resources.dead_letter_queue_url}), resources


def test_a_session_whose_numbering_fails_midway_is_delivered_again_whole_and_published_without_a_gap(
    make_service: Callable[..., Service], events_settings: Settings, publisher_clock: FakeClock, store: DynamoDBStore
) -> None:
    """Items written before commits said how many events they wrote are numbered one at a time; the
    second fails (throttled): none of the session's events is put, all are reported, and the batch
    delivered again publishes 1, 2, 3."""
    service = make_service("nested")
    started = service.start_turn("midway", "delete")
    service.cancel("midway", started.turn_id)
    settings, resources = _resources(events_settings)
    records = outbox_records(store, ["midway"])
    for record in records:
        record["dynamodb"]["NewImage"].pop("commit_events")
    made = Publishing(settings, publisher_clock)
    number_event, numbered = made.outbox.number_event, [0]

    def throttled_second(*args: Any) -> Any:
        numbered[0] += 1
        if numbered[0] == 2:
            raise AwsError("the AWS call behind number_event failed: ThrottlingException")
        return number_event(*args)

    made.outbox.number_event = throttled_second  # type: ignore[method-assign]
    failures = made.handle({"Records": records}, None)["batchItemFailures"]
    assert len(failures) == 3, "every event of the session is delivered again"
    again = Publishing(settings, publisher_clock).handle({"Records": _redelivered(records, failures)}, None)
    assert again == {"batchItemFailures": []}
    published = Queue(settings, resources.events_queue_url).until(3)
    assert [e["detail"]["sequence"] for e in published] == [1, 2, 3]


def test_an_event_of_a_commit_sent_to_the_dead_letter_queue_takes_no_number_from_its_sibling(
    make_service: Callable[..., Service], events_settings: Settings, publisher_clock: FakeClock, store: DynamoDBStore
) -> None:
    service = make_service("nested")
    started = service.start_turn("sibling", "delete")
    service.cancel("sibling", started.turn_id)
    settings, resources = _resources(events_settings)
    records = outbox_records(store, ["sibling"])
    [closed, _] = [r for r in records if r["dynamodb"]["NewImage"]["commit_events"]["N"] == "2"]
    closed["dynamodb"]["NewImage"]["type"] = {"S": "Turn Exploded"}  # never publishable
    assert Publishing(settings, publisher_clock).handle({"Records": records}, None) == {"batchItemFailures": []}
    published = Queue(settings, resources.events_queue_url).until(2)
    assert sorted(e["detail"]["sequence"] for e in published) == [1, 2], "no gap where the dead letter was"


def test_answers_and_other_events_outside_a_commit_are_numbered_in_bulk_too(
    make_service: Callable[..., Service], events_settings: Settings, publisher_clock: FakeClock, store: DynamoDBStore
) -> None:
    service = make_service("nested")
    sessions = [f"answered-{n}" for n in range(5)]
    for session in sessions:
        started = service.start_turn(session, "delete")
        service.submit_approval(session, started.turn_id, started.interactions[0].request_id, APPROVE)
    settings, resources = _resources(events_settings)
    made = Publishing(settings, publisher_clock)
    calls = _counted(made)
    written = ["Interaction Requested", "Interaction Answered", "Turn Settled"]  # (as the stream has them)
    records = sorted(
        outbox_records(store, sessions),
        key=lambda r: (r["dynamodb"]["Keys"]["pk"]["S"], written.index(r["dynamodb"]["NewImage"]["type"]["S"])),
    )
    assert made.handle({"Records": records}, None) == {"batchItemFailures": []}
    assert "Query" not in calls and calls["TransactWriteItems"] == 2, dict(calls)
    published = Queue(settings, resources.events_queue_url).until(15)
    approved = ["Interaction Requested", "Interaction Answered:approve", "Turn Settled:completed"]
    assert {s: kinds(e) for s, e in by_session(published).items()} == {s: approved for s in sessions}


def test_an_event_published_but_not_marked_is_delivered_again_even_when_a_later_one_was_refused(
    make_service: Callable[..., Service], events_settings: Settings, publisher_clock: FakeClock, store: DynamoDBStore
) -> None:
    service = make_service("nested")
    started = service.start_turn("unmarked", "delete")
    service.cancel("unmarked", started.turn_id)
    settings, _ = _resources(events_settings)
    made = Publishing(settings, publisher_clock)
    put_all, mark_all = made.bus.put_all, made.outbox.mark_all_published

    def third_refused(source: str, entries: list[Entry]) -> list[str | None]:
        third = [json.loads(e.detail)["sequence"] == 3 for e in entries]
        outcome = iter(put_all(source, [e for e, t in zip(entries, third, strict=True) if not t]))
        return ["bus refused the event (InternalFailure)" if t else next(outcome) for t in third]

    def first_unmarked(items: list[tuple[str, str]], now: float) -> list[Exception | None]:
        return [AwsError("throttled"), *mark_all(items[1:], now)]

    made.bus.put_all = third_refused  # type: ignore[method-assign]
    made.outbox.mark_all_published = first_unmarked  # type: ignore[method-assign]
    records = outbox_records(store, ["unmarked"])
    failures = made.handle({"Records": records}, None)["batchItemFailures"]
    assert len(failures) == 3, "the first (published, not marked) and all after it are delivered again"

"""Events and the inbox, for ``make bench`` (section 8): how long an event takes from its commit to the
bus, how many events per second the publisher puts on it, and what one inbox page costs for 1, 100 and
1,000 open questions across sessions.

On the embedded AWS, with the publisher as ``make run`` runs it (the stream read as Lambda's event
source mapping would, resumable.local.events); ``python -m bench.events`` runs this section alone.
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from typing import Any

from resumable.aws.clients import client
from resumable.aws.eventbridge import Entry
from resumable.config import Settings
from resumable.events.publisher import Publisher, Publishing
from resumable.events.schemas import SOURCE
from resumable.local.events import Handler, Mapping, publishing
from resumable.service import Service
from resumable.store import DynamoDBStore
from tests.inbox import open_questions
from tests.stream import outbox_records
from tests.trees import Shape, factory

APPROVER = "arn:aws:iam::000000000000:user/bench-approver"


class PutTimes:
    """When each event (by eventId) was on the bus: PutEvents returned."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}
        self.occurred: dict[str, float] = {}
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)

    def wrap(self, made: Publishing) -> Handler:
        put_all = made.bus.put_all

        def timed(source: str, entries: list[Entry]) -> list[str | None]:
            outcome = put_all(source, entries)
            with self.changed:
                for entry, refused in zip(entries, outcome, strict=True):
                    if refused is None:
                        event_id = json.loads(entry.detail)["eventId"]
                        self.at.setdefault(event_id, time.time())
                        self.occurred.setdefault(event_id, entry.occurred_at)
                self.changed.notify_all()
            return outcome

        made.bus.put_all = timed  # type: ignore[method-assign]
        return made.handle

    def wait_for(self, count: int) -> None:
        with self.changed:
            if not self.changed.wait_for(lambda: len(self.at) >= count, timeout=600):
                raise RuntimeError(f"only {len(self.at)} of {count} events reached the bus in 600 s")


class OneAtATime(Publishing):
    """The publisher as it was before it published in bulk, kept to measure against: each record
    numbered alone (its commit's events read with a Query), put with a ``PutEvents`` of its own and
    marked with an ``UpdateItem`` of its own, in the order the stream delivers them."""

    def handle(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        publisher = Publisher(self.settings, self.outbox, self.bus, self.dead_letters, self.clock)
        for record in event["Records"]:
            read = publisher._read(record)
            if read is None:
                continue
            read.detail.sequence = publisher._number_one(read.session_id, read.sk)
            entry = Entry(read.event.type, read.detail.model_dump_json(by_alias=True), read.event.created_at)
            [refused] = self.bus.put_all(SOURCE, [entry])
            if refused is not None:
                raise RuntimeError(refused)
            self.outbox.mark_published(read.session_id, read.sk, self.clock.now())
        return {"batchItemFailures": []}


def own_table(settings: Settings) -> Settings:
    """A table and bus of this measurement's own (the stream then holds only its events)."""
    name = f"bench-ev-{uuid.uuid4().hex[:8]}"
    own = settings.model_copy(update={"table_name": name, "event_bus_name": name})
    from resumable.store.resources import create_table_request, ttl_request

    dynamodb = client("dynamodb", own)
    dynamodb.create_table(**create_table_request(name))
    dynamodb.update_time_to_live(**ttl_request(name))
    return own


def _service(settings: Settings) -> Service:
    return Service(DynamoDBStore(settings), settings, factory=factory(Shape(fan_out=1, depth=1)))


def commit_to_bus(settings: Settings, runs: int) -> dict[str, Any]:
    """One turn started at a time (its commit writes an Interaction Requested); the time from the commit
    (the event's occurredAt) to PutEvents returning for it, with the publisher polling as make run's."""
    own = own_table(settings)
    times = PutTimes()
    service = _service(own)
    with publishing(own, lambda s: times.wrap(Publishing(s))):
        for n in range(runs):
            service.start_turn(f"latency-{n}", "go")
            times.wait_for(n + 1)
    latencies = sorted((times.at[e] - times.occurred[e]) * 1000 for e in times.at)
    return {
        "runs": runs,
        "p50_ms": statistics.median(latencies),
        "p95_ms": latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))],
    }


def publisher_throughput(settings: Settings, sessions: int = 100, *, bulk: bool = True) -> dict[str, Any]:
    """Events per second the publisher's handler publishes, and its AWS calls per event: a backlog of
    ``sessions`` paused turns and their cancels (three events each), handed to it as the event source
    mapping would, in batches of the template's size. ``bulk`` False: the publisher as it was
    (``OneAtATime``). The handler alone is timed: on the embedded AWS, reading the whole unfiltered
    stream (which Lambda filters for it) takes longer than publishing what it holds."""
    own = own_table(settings)
    service = _service(own)
    names = [f"throughput-{n}" for n in range(sessions)]
    for name in names:
        started = service.start_turn(name, "go")
        service.cancel(name, started.turn_id)
    records = outbox_records(DynamoDBStore(own), names)
    # A bus with no rule: on AWS a PutEvents costs the same whatever its targets; moto delivers to an SQS
    # target as it puts, in a time that grows with the queue's length.
    client("events", own).create_event_bus(Name=own.event_bus_name)
    made = (Publishing if bulk else OneAtATime)(own)
    calls: Counter[str] = Counter()

    def counted(event_name: str, **_: Any) -> None:
        calls[event_name.removeprefix("before-call.")] += 1

    for aws in (made.outbox.dynamodb, made.bus.client):
        aws.meta.events.register("before-call", counted)
    size = Mapping.of_template().batch_size
    began = time.perf_counter()
    for start in range(0, len(records), size):
        reply = made.handle({"Records": records[start : start + size]}, None)
        if reply["batchItemFailures"]:
            raise RuntimeError(f"the publisher failed records of the backlog: {reply}")
    seconds = time.perf_counter() - began
    return {
        "events": len(records),
        "sessions": sessions,
        "seconds": seconds,
        "events_per_second": len(records) / seconds,
        "calls": dict(sorted(calls.items())),
        "calls_per_event": sum(calls.values()) / len(records),
    }


def inbox_calls(settings: Settings, sizes: tuple[int, ...] = (1, 100, 1000), repeats: int = 20) -> list[dict[str, Any]]:
    """The AWS calls and time of the first inbox page (50) with ``n`` open questions, one per session."""
    rows = []
    for size in sizes:
        own = own_table(settings).model_copy(update={"approver_principals": (APPROVER,)})
        store = DynamoDBStore(own)
        open_questions(store, size, time.time(), "arn:aws:iam::000000000000:user/u", sooner_later=False)
        service = Service(store, own, factory=factory(Shape()))
        calls: list[str] = []

        def count(event_name: str, calls: list[str] = calls, **_: Any) -> None:
            calls.append(event_name)

        store.dynamodb.meta.events.register("before-call.dynamodb", count)
        elapsed = []
        for _ in range(repeats):
            calls.clear()
            began = time.perf_counter()
            page = service.inbox(APPROVER)
            elapsed.append((time.perf_counter() - began) * 1000)
        rows.append(
            {
                "open_questions": size,
                "listed": len(page.interactions),
                "calls": len(calls),
                "p50_ms": statistics.median(elapsed),
            }
        )
    return rows


PUBLISHER_ROUNDS = 7


def publisher_rounds(settings: Settings, rounds: int = PUBLISHER_ROUNDS) -> dict[str, Any]:
    """The publisher in bulk and one event at a time, in ``rounds`` rounds of one backlog each way
    (one run of 300 events takes under a second: one alone moved the ratio from 2.5x to 6.7x): the
    median run of each, and the median of the rounds' ratios with their range."""
    bulk, one = [], []
    for _ in range(rounds):
        bulk.append(publisher_throughput(settings))
        one.append(publisher_throughput(settings, bulk=False))
    ratios = sorted(b["events_per_second"] / o["events_per_second"] for b, o in zip(bulk, one, strict=True))

    def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
        return sorted(runs, key=lambda run: float(run["events_per_second"]))[len(runs) // 2]

    return {
        "publisher": median_run(bulk),
        "publisher_one_at_a_time": median_run(one),
        "publisher_ratio": {"median": ratios[len(ratios) // 2], "low": ratios[0], "high": ratios[-1], "rounds": rounds},
    }


def events_and_inbox(settings: Settings, runs: int) -> dict[str, Any]:
    return {
        "commit_to_bus": commit_to_bus(settings, runs),
        **publisher_rounds(settings),
        "inbox": inbox_calls(settings),
    }


def report(results: dict[str, Any]) -> list[str]:
    latency, publisher, before = results["commit_to_bus"], results["publisher"], results["publisher_one_at_a_time"]
    ratio = results["publisher_ratio"]
    lines = [
        "8. events and the inbox (embedded AWS; the publisher as make run runs it, woken by each stream record)",
        f"   commit to bus: p50 {latency['p50_ms']:.0f} ms, p95 {latency['p95_ms']:.0f} ms ({latency['runs']} events)",
        f"   publisher: {publisher['events_per_second']:.0f} events/s ({publisher['events']} events of "
        f"{publisher['sessions']} sessions in {publisher['seconds']:.2f} s), "
        f"{publisher['calls_per_event']:.2f} AWS calls an event ({_calls(publisher)})",
        f"   one event at a time, as it was: {before['events_per_second']:.0f} events/s, "
        f"{before['calls_per_event']:.2f} AWS calls an event ({_calls(before)})",
        f"   in bulk: {ratio['median']:.1f}x (the median of {ratio['rounds']} rounds' ratios, {ratio['low']:.1f}x to "
        f"{ratio['high']:.1f}x; each rate above is its median round)",
        f"   {'open questions':>15} {'listed':>6} {'calls':>5} {'p50 ms':>7}  (first inbox page, across sessions)",
    ]
    for row in results["inbox"]:
        lines.append(f"   {row['open_questions']:>15} {row['listed']:>6} {row['calls']:>5} {row['p50_ms']:7.1f}")
    return lines


def _calls(measured: dict[str, Any]) -> str:
    return ", ".join(f"{name} {n}" for name, n in measured["calls"].items())


def main() -> int:
    from resumable.local import embedded_aws

    with embedded_aws(table_name="bench", bucket_name="bench") as settings:
        results = events_and_inbox(settings, runs=int(sys.argv[1]) if len(sys.argv) > 1 else 50)
    print("\n".join(report(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

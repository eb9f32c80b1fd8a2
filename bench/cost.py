"""Section 12 of ``make bench``: the bill. What a million approval turns cost (start, pause, approve,
complete, and their events published), and a million turns that need no approval, at on-demand list
prices, from this run's own counts: the billed units of every AWS call (bench/capacity.py), the
handlers' and the publisher's time, the API requests and Lambda invocations each turn takes. Beside
them, approval turns a Lambda durable function waits for (bench/durable.py), and the same work as Step
Functions Standard's human-approval pattern and as plain Lambda and DynamoDB with no guarantees,
counted the same way (docs/scale.md says what each counts).

On the embedded AWS only (it measures on a table and bus of its own, as section 8 does).
``python -m bench.cost`` runs this section alone.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.capacity import Meter
from bench.durable import Waiting
from bench.events import own_table
from resumable.aws.clients import client
from resumable.clock import SystemClock
from resumable.config import Settings
from resumable.events.publisher import Publishing
from resumable.local.events import Mapping
from resumable.local.functions import load_template
from resumable.service import Service
from resumable.store import DynamoDBStore, S3Snapshots
from tests.stream import outbox_records
from tests.trees import Shape, factory

APPROVE = {"decision": "approve"}
DURABLE = "a durable function waiting with wait_for_turn"
# Every request through the API names who makes it: the turns here are started and answered by one.
OWNER = "arn:aws:iam::123456789012:user/bench-owner"


@dataclass(frozen=True)
class Price:
    dollars: float
    per: float  # units the price is for
    what: str
    source: str


# On-demand list prices, US East (N. Virginia), the first tier of each (read on 2026-12-04).
PRICES_READ = "2026-12-04"
REGION = "us-east-1"
PRICES = {
    "write_units": Price(0.625, 1e6, "DynamoDB write request units", "aws.amazon.com/dynamodb/pricing/on-demand/"),
    "read_units": Price(0.125, 1e6, "DynamoDB read request units", "aws.amazon.com/dynamodb/pricing/on-demand/"),
    "s3_put": Price(0.005, 1e3, "S3 Standard PUT, COPY, POST, LIST requests", "aws.amazon.com/s3/pricing/"),
    "s3_get": Price(0.0004, 1e3, "S3 Standard GET and other requests", "aws.amazon.com/s3/pricing/"),
    "lambda_requests": Price(0.20, 1e6, "Lambda requests", "aws.amazon.com/lambda/pricing/"),
    "lambda_gb_seconds": Price(
        0.0000133334, 1, "Lambda duration, Arm, per GB-second", "aws.amazon.com/lambda/pricing/"
    ),
    "events": Price(1.00, 1e6, "EventBridge custom events (64 KB each)", "aws.amazon.com/eventbridge/pricing/"),
    "api_requests": Price(1.00, 1e6, "API Gateway HTTP API requests", "aws.amazon.com/api-gateway/pricing/"),
    "state_transitions": Price(
        0.025, 1e3, "Step Functions Standard state transitions", "aws.amazon.com/step-functions/pricing/"
    ),
    "durable_operations": Price(8.00, 1e6, "Lambda durable functions operations", "aws.amazon.com/lambda/pricing/"),
}
SERVICES = {
    "DynamoDB": ("write_units", "read_units"),
    "S3": ("s3_put", "s3_get"),
    "Lambda": ("lambda_requests", "lambda_gb_seconds"),
    "EventBridge": ("events",),
    "API Gateway": ("api_requests",),
    "Step Functions": ("state_transitions",),
    "durable functions": ("durable_operations",),
}
# Default quotas a deployment meets (per account and region unless said): docs/scale.md cites each.
LAMBDA_CONCURRENCY = 1_000  # concurrent executions
LAMBDA_REQUESTS_PER_SECOND = 10 * LAMBDA_CONCURRENCY  # invocations a second: ten times the concurrency
NEW_TABLE_WRITES, NEW_TABLE_READS = 4_000, 12_000  # a new on-demand table's units a second, at first
TABLE_UNITS = 40_000  # an on-demand table's units a second, reads and writes each
PARTITION_WRITES = 1_000  # write units a second for one partition key (an index's shard, a principal)
PUT_EVENTS_PER_SECOND = 10_000  # PutEvents requests, us-east-1
GLUE_SECONDS = 0.02  # a Step Functions pattern's own small functions (store a token, send it back): assumed


def dollars_per_million(usage: dict[str, float]) -> dict[str, float]:
    """What a million of a unit of work using ``usage`` (units each) costs, by service, and in total."""
    bill = {
        service: sum(usage.get(unit, 0) * 1e6 * PRICES[unit].dollars / PRICES[unit].per for unit in units)
        for service, units in SERVICES.items()
    }
    return {**{s: d for s, d in bill.items() if d}, "total": sum(bill.values())}


def _memory_gb() -> float:
    function = load_template()["Globals"]["Function"]
    if function.get("Architectures") != ["arm64"]:
        raise RuntimeError(
            "the bill prices Arm functions but template.yaml's Globals name another architecture: "
            "give bench/cost.py's PRICES that architecture's Lambda duration price"
        )
    return int(function["MemorySize"]) / 1024


def _billed(seconds: float) -> float:
    """Lambda bills each invocation's duration rounded up to the millisecond."""
    return math.ceil(seconds * 1000) / 1000


# -- the measurement -------------------------------------------------------------------------------------


@dataclass
class Turns:
    """One kind of turn, run ``turns`` times: each step's median time, and the units of every run."""

    steps: dict[str, float]  # step -> median seconds (unmetered runs)
    units: dict[str, Counter[str]]  # step -> units over the metered runs ("publish": the publisher's)
    records: int  # outbox records (events) of the metered runs
    publisher_seconds: float  # the publisher's time for the timed runs' records
    turns: int

    def total(self) -> Counter[str]:
        return sum(self.units.values(), Counter())


Run = Callable[[Service, str, bool, Meter, dict[str, Counter[str]]], dict[str, float]]


def _run(
    service: Service, session: str, approve: bool, meter: Meter, units: dict[str, Counter[str]]
) -> dict[str, float]:
    """One turn, step by step: the time of each, and (while the meter is on) its units into ``units``."""
    times = {}
    began = time.perf_counter()
    turn = service.start_turn(session, "go", OWNER)
    times["start"] = time.perf_counter() - began
    units.setdefault("start", Counter()).update(meter.take())
    if approve:
        began = time.perf_counter()
        turn = service.submit_approval(session, turn.turn_id, turn.interactions[0].request_id, APPROVE, OWNER)
        times["approve"] = time.perf_counter() - began
        units.setdefault("approve", Counter()).update(meter.take())
    if turn.status != "completed":
        raise RuntimeError(f"a turn measured for the bill ended {turn.status}, not completed: the bill is not made")
    return times


def _publish(publishing: Publishing, records: list[dict[str, Any]], batch: int) -> float:
    began = time.perf_counter()
    for start in range(0, len(records), batch):
        reply = publishing.handle({"Records": records[start : start + batch]}, None)
        if reply["batchItemFailures"]:
            raise RuntimeError(f"the publisher failed records measured for the bill: {reply}")
    return time.perf_counter() - began


def _turns(settings: Settings, meter: Meter, approve: bool, turns: int, run: Run = _run) -> Turns:
    """``turns`` turns, each run by ``run`` (the start and approval themselves, by default)."""
    store, snapshots = DynamoDBStore(settings), S3Snapshots(settings)
    meter.attach(store.dynamodb, snapshots.s3)
    service = Service(store, settings, SystemClock(), factory(Shape(1, 1, guarded=approve)), snapshots=snapshots)
    publishing = Publishing(settings)
    meter.attach(publishing.outbox.dynamodb, publishing.bus.client)
    batch = Mapping.of_template().batch_size
    kind = "a" if approve else "n"

    meter.on = False  # timed: the meter's own reads would be inside the time
    warm = f"warm-{kind}-{uuid.uuid4().hex[:8]}"
    run(service, warm, approve, meter, {})
    _publish(publishing, outbox_records(store, [warm]), batch)
    timed = [f"t{kind}-{n}-{uuid.uuid4().hex[:8]}" for n in range(turns)]
    steps = [run(service, session, approve, meter, {}) for session in timed]
    publisher_seconds = _publish(publishing, outbox_records(store, timed), batch)

    metered = [f"m{kind}-{n}-{uuid.uuid4().hex[:8]}" for n in range(turns)]
    units: dict[str, Counter[str]] = {}
    meter.take()
    meter.on = True
    for session in metered:
        run(service, session, approve, meter, units)
    meter.on = False  # the stream's records, as Lambda's mapping reads them (a read not billed)
    records = outbox_records(store, metered)
    meter.on = True
    _publish(publishing, records, batch)
    units["publish"] = meter.take()
    meter.on = False
    return Turns(
        steps={step: statistics.median(s[step] for s in steps) for step in steps[0]},
        units=units,
        records=len(records),
        publisher_seconds=publisher_seconds,
        turns=turns,
    )


def usage(measured: Turns, memory_gb: float, batch: int) -> dict[str, float]:
    """Units one turn uses: its metered AWS units, a Lambda invocation and an API request for each
    step, and its share of the publisher's invocations (full batches, as at volume)."""
    n = measured.turns
    per_turn = {unit: count / n for unit, count in measured.total().items() if unit in PRICES}
    events_per_turn = measured.records / n
    seconds = sum(_billed(s) for s in measured.steps.values()) + measured.publisher_seconds / n
    return {
        **per_turn,
        "api_requests": len(measured.steps),
        "lambda_requests": len(measured.steps) + events_per_turn / batch,
        "lambda_gb_seconds": memory_gb * seconds,
    }


# -- what the same work costs elsewhere -----------------------------------------------------------------


def step_functions(steps: dict[str, float], memory_gb: float) -> dict[str, float]:
    """Step Functions Standard's human-approval pattern doing the same turn: a Task runs the agent to its
    question, a ``.waitForTaskToken`` Task hands the token to a function that stores it and tells people,
    an API request's function sends the answer back (SendTaskSuccess), a Choice, a Task runs the approved
    action, Succeed: five state transitions, two API requests, four functions. The agent's two runs take
    our steps' times; the two small functions ``GLUE_SECONDS`` each. The turn's state is the execution's
    input (256 KB at most), so no table or bucket."""
    runs = _billed(steps["start"]) + _billed(steps["approve"]) + 2 * GLUE_SECONDS
    return {"state_transitions": 5, "api_requests": 2, "lambda_requests": 4, "lambda_gb_seconds": memory_gb * runs}


def plain_lambda(steps: dict[str, float], memory_gb: float, state_bytes: float) -> dict[str, float]:
    """Plain Lambda and DynamoDB with no guarantees: the start's function writes the turn's state (its
    conversation, the size of our snapshot) as one item; the answer's function reads it (strongly) and
    writes it back. No lease, journal, index, event or snapshot: an answer can be lost or run twice."""
    write = max(1, math.ceil(state_bytes / 1024))
    read = max(1, math.ceil(state_bytes / 4096))
    seconds = _billed(steps["start"]) + _billed(steps["approve"])
    return {
        "write_units": 2 * write,
        "read_units": read,
        "api_requests": 2,
        "lambda_requests": 2,
        "lambda_gb_seconds": memory_gb * seconds,
    }


# -- the limits ---------------------------------------------------------------------------------------------


def _template_default(parameter: str) -> int:
    return int(load_template()["Parameters"][parameter]["Default"])


def limits(routes: dict[str, tuple[float, Counter[str]]], turns: int) -> dict[str, dict[str, float]]:
    """Requests a second each route takes before each limit, at the template's defaults: ``routes``
    maps a route to its median seconds and the units of ``turns`` requests. The table and each of its
    indexes have throughput of their own (a new table's and the quota); an index's shard and one
    principal's inbox are a partition key each."""
    api, shards = _template_default("ApiRateLimit"), _template_default("IndexShards")
    rows = {}
    for route, (seconds, units) in routes.items():
        per = {unit: n / turns for unit, n in units.items()}
        table_writes, reads = per.get("table_write_units", 0), per.get("read_units", 0)
        index_writes = max([n for unit, n in per.items() if unit.startswith("gsi")] or [0])
        sharded = max(per.get("gsi2_write_units", 0), per.get("gsi4_write_units", 0))
        principal = per.get("gsi3_write_units", 0)
        rows[route] = {
            "API stage": api,
            "Lambda": min(LAMBDA_CONCURRENCY / seconds, LAMBDA_REQUESTS_PER_SECOND),
            "new on-demand table": min(
                _rate(NEW_TABLE_WRITES, table_writes),
                _rate(NEW_TABLE_WRITES, index_writes),
                _rate(NEW_TABLE_READS, reads),
            ),
            "table quota": min(
                _rate(TABLE_UNITS, table_writes), _rate(TABLE_UNITS, index_writes), _rate(TABLE_UNITS, reads)
            ),
            f"{shards} index shards": _rate(shards * PARTITION_WRITES, sharded),
            "one principal's inbox": _rate(PARTITION_WRITES, principal),
        }
    return rows


def _rate(limit: float, units: float) -> float:
    return limit / units if units else math.inf


def bill(settings: Settings, turns: int = 20) -> dict[str, Any]:
    own = own_table(settings)
    client("events", own).create_event_bus(Name=own.event_bus_name)
    meter = Meter(own)
    memory_gb, batch = _memory_gb(), Mapping.of_template().batch_size
    approval = _turns(own, meter, True, turns)
    no_approval = _turns(own, meter, False, turns)
    durable = _turns(own, meter, True, turns, Waiting(OWNER, APPROVE).run)
    approval_usage = usage(approval, memory_gb, batch)
    total = approval.total()
    state_bytes = total["s3_object_bytes"] / total["s3_objects"] if total["s3_objects"] else 0
    rows = {
        "approval turn": approval_usage,
        "turn with no approval": usage(no_approval, memory_gb, batch),
        # (its start is StartTurn invoked directly by the durable function: only the approval is an API request)
        DURABLE: usage(durable, memory_gb, batch) | {"api_requests": 1},
        "Step Functions Standard, human-approval pattern": step_functions(approval.steps, memory_gb),
        "plain Lambda + DynamoDB, no guarantees": plain_lambda(approval.steps, memory_gb, state_bytes),
    }
    published = approval.units["publish"]
    routes = {
        "start-turn that pauses": (approval.steps["start"], approval.units["start"]),
        "submit-approval that completes": (approval.steps["approve"], approval.units["approve"]),
        "start-turn that completes": (no_approval.steps["start"], no_approval.units["start"]),
    }
    return {
        "region": REGION,
        "limits": limits(routes, turns),
        "units_per_request": {
            route: {unit: n / turns for unit, n in sorted(units.items()) if unit.endswith("_units")}
            for route, (_, units) in routes.items()
        },
        "events_per_put_events": published["events"] / published["put_events_calls"],
        "prices_read": PRICES_READ,
        "prices": {
            unit: {"dollars": p.dollars, "per": p.per, "what": p.what, "source": p.source} for unit, p in PRICES.items()
        },
        "memory_gb": memory_gb,
        "turns": turns,
        "steps_ms": {
            kind: {s: t * 1000 for s, t in m.steps.items()}
            for kind, m in (("approval turn", approval), ("turn with no approval", no_approval), (DURABLE, durable))
        },
        "events_per_turn": {
            "approval turn": approval.records / turns,
            "turn with no approval": no_approval.records / turns,
            DURABLE: durable.records / turns,
        },
        "snapshot_bytes": state_bytes,
        "approval_turn_write_units_by_item": {
            unit.removeprefix("item:"): n / turns for unit, n in total.most_common() if unit.startswith("item:")
        },
        "durable_operations_by_kind": {
            unit.removeprefix("durable:"): n / turns for unit, n in durable.units["durable"].items() if ":" in unit
        },
        "usage": rows,
        "per_million": {kind: dollars_per_million(u) for kind, u in rows.items()},
        "cost_per_million_approval_turns": dollars_per_million(approval_usage)["total"],
    }


def report(results: dict[str, Any]) -> list[str]:
    per_million, used = results["per_million"], results["usage"]
    lines = [
        f"12. the bill: on-demand list prices, {results['region']}, read {results['prices_read']}; units counted in "
        f"this run ({results['turns']} turns of each kind; Lambda time measured here, on the embedded AWS); the last "
        "two rows modelled from their calls (docs/scale.md)",
        f"   cost per million approval turns: ${results['cost_per_million_approval_turns']:.2f}",
        f"   {'per million':48} {'total':>8}  by service; units a turn",
    ]
    for kind, dollars in per_million.items():
        services = ", ".join(f"{s} {d:.2f}" for s, d in dollars.items() if s != "total")
        lines.append(f"   {kind:48} {dollars['total']:8.2f}  {services}")
        units = used[kind]
        lines.append("   " + " " * 58 + ", ".join(f"{unit} {units[unit]:.3g}" for unit in PRICES if units.get(unit)))
    by_item = ", ".join(f"{kind} {n:.0f}" for kind, n in results["approval_turn_write_units_by_item"].items())
    lines.append(f"   an approval turn's write units by item written (table and indexes): {by_item}")
    waited = ", ".join(f"{kind} {n:.0f}" for kind, n in results["durable_operations_by_kind"].items())
    lines.append(f"   a durable function's operations an approval turn, from its execution's history: {waited}")
    first = next(iter(results["limits"].values()))
    lines.append("   requests a second a route takes before each limit, at the template's defaults (the lowest *):")
    lines.append("   " + " " * 32 + "".join(f"{name:>22}" for name in first))
    for route, row in results["limits"].items():
        lowest = min(row.values())
        cells = "".join(f"{_rate_cell(rate) + ('*' if rate == lowest else ' '):>22}" for rate in row.values())
        lines.append(f"   {route:32}{cells}")
    per_call = results["events_per_put_events"]
    lines.append(
        f"   the publisher: {PUT_EVENTS_PER_SECOND * per_call:,.0f} events a second before PutEvents' "
        f"{PUT_EVENTS_PER_SECOND:,} requests a second, at this run's {per_call:.1f} events a call"
    )
    return lines


def _rate_cell(rate: float) -> str:
    return "none" if rate == math.inf else f"{rate:,.0f}"


def main() -> int:
    from resumable.local import embedded_aws

    with embedded_aws(table_name="bench", bucket_name="bench") as settings:
        results = bill(settings, turns=int(sys.argv[1]) if len(sys.argv) > 1 else 20)
    print("\n".join(report(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

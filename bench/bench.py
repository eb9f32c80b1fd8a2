"""``make bench``: what resumable costs, measured, printed as a table and written to bench/results.json.

Against the embedded AWS by default; with ``BENCH_AWS=1`` against the AWS the environment names
(``RESUMABLE_TABLE``, ``RESUMABLE_BUCKET``, ``AWS_REGION``, credentials; the table and bucket must
exist). The machine is shared and noisy, so every time is a median (and p95) over many runs, shown
beside a baseline measured in the same run, interleaved with it: the same AWS calls made directly
with boto3. ``BENCH_RUNS`` (default 200) sets the runs per operation.

Sections 1-3 and 6 are in bench/operations.py; every section that measures the service counts its AWS
calls with bench/aws_calls.py.

1. AWS calls per operation (exact, from botocore events).
2. Latency: p50/p95 of each operation, and of its baseline; goal: at most 1.5x. Then each operation
   again with AWS-like latency (bench/latency.py: each call held until its kind's published median):
   its time over the time inside its calls, goal at most 1.10x.
3. Throughput: approvals settled and resumed per second by 8 concurrent clients on distinct turns;
   50 concurrent duplicates of one approval (time to settle; the action must run exactly once).
4. Cold start: each handler's import and first request (and a warm one) in a fresh interpreter,
   traced as deployed and untraced (what tracing costs), beside a bare boto3 handler and Powertools'
   floor making the same first AWS calls: ``cold_start_vs_bare``, goal at most 1.5x (bench/cold_start.py).
5. Snapshot growth: bytes and serialise+restore time for 10, 100 and 1,000 messages (fitted exponent).
6. Fan-out and depth: one turn pausing in 1, 10 and 50 concurrent sub-agent calls, and nesting depth 1
   to 5: calls and time per operation (50 calls need more than one TransactWriteItems: shown here).
7. Layer size (``make layer`` builds it): goal under 10 MB zipped.
8. Events and the inbox (bench/events.py): commit to bus (p50, p95), publisher events per second, and
   one inbox page's AWS calls for 1, 100 and 1,000 open questions across sessions.
9. Agents in production (bench/agents.py): the tools of one reply run at once and one after another,
   and the cold start with and without the optional providers (openai, MCP) imported.
10. Bounded context (bench/context.py): a 1,000-turn session with no conversation manager, a sliding
    window and a summarising one: the model's input (messages, bytes) and the snapshot's bytes at
    turns 10, 100 and 1,000.
11. Strands agents (bench/strands.py): a Strands Agents SDK tree under the service beside the same tree in
    our runtime (cold start, layer sizes, time and calls per operation), and two resumes of one approval
    at once, ``strands.RACES`` times: with Strands alone, and under the service.
12. The bill (bench/cost.py): the cost per million approval turns (start, pause, approve, complete, their
    events published) and per million turns with no approval, at on-demand list prices, from this run's
    own counts of billed units (bench/capacity.py); beside them, approval turns a Lambda durable function
    waits for (bench/durable.py), and the same work as Step Functions Standard's human-approval pattern
    and as plain Lambda and DynamoDB with no guarantees.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import agents, context, cost, events, operations, strands
from bench.aws_calls import Baseline
from bench.aws_like import report as aws_like_report
from bench.cold_start import cold_start
from bench.cold_start import report as cold_start_report
from bench.latency import AWS_LIKE
from resumable.config import Settings
from resumable.local import embedded_aws
from resumable.runtime.agent import Agent
from resumable.runtime.models import ScriptedModel

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results.json"
RUNS = int(os.environ.get("BENCH_RUNS", "200"))


@contextmanager
def target() -> Iterator[Settings]:
    if os.environ.get("BENCH_AWS"):
        yield Settings.from_env()
    else:
        with embedded_aws(table_name="bench", bucket_name="bench") as settings:
            yield settings


# -- 5: snapshot growth ----------------------------------------------------------------------------------


def _fitted_exponent(xs: list[float], ys: list[float]) -> float:
    """The slope of log(y) over log(x): 1 is linear growth."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum((a - mx) ** 2 for a in lx)


def snapshot_growth(sizes: tuple[int, ...] = (10, 100, 1000), repeats: int = 30) -> dict[str, Any]:
    """Bytes and serialise+restore time of an agent's snapshot with ``sizes`` messages of history."""
    rows = []
    for size in sizes:
        agent = Agent(name="chatty", model=ScriptedModel([]))
        agent.messages = [
            {
                "role": "user" if n % 2 == 0 else "assistant",
                "content": [{"text": f"message {n}: " + "lorem ipsum dolor sit amet " * 8}],
            }
            for n in range(size)
        ]
        timings = []
        for _ in range(repeats):
            started = time.perf_counter()
            text = json.dumps(agent.snapshot(), separators=(",", ":"))
            Agent(name="chatty", model=ScriptedModel([])).restore(json.loads(text))
            timings.append(time.perf_counter() - started)
        rows.append({"messages": size, "bytes": len(text.encode()), "ms": statistics.median(timings) * 1000})
    xs = [float(r["messages"]) for r in rows]
    return {
        "rows": rows,
        "bytes_exponent": _fitted_exponent(xs, [float(r["bytes"]) for r in rows]),
        "time_exponent": _fitted_exponent(xs, [float(r["ms"]) for r in rows]),
    }


# -- 7: the layer ----------------------------------------------------------------------------------------


def layer() -> dict[str, Any]:
    archive = ROOT / "layers" / "layer.zip"
    if not archive.exists():
        subprocess.run([sys.executable, str(ROOT / "layers" / "build.py")], check=True)
    with zipfile.ZipFile(archive) as opened:
        unzipped = sum(i.file_size for i in opened.infolist())
    zipped = archive.stat().st_size
    return {"zipped_bytes": zipped, "unzipped_bytes": unzipped, "goal_zipped_bytes": 10 * 1024 * 1024}


# -- the report ------------------------------------------------------------------------------------------


def _machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "target": "AWS" if os.environ.get("BENCH_AWS") else "embedded AWS (moto on loopback)",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def report(results: dict[str, Any]) -> str:
    lines = [f"resumable bench: {results['machine']['target']}, {results['machine']['cpus']} CPUs, "
             f"Python {results['machine']['python']}, {results['machine']['date']}", ""]  # fmt: skip
    lines.append("1-2. calls and latency per operation, ms. base: the same AWS calls replayed directly with boto3;")
    lines.append("     own: time outside the operation's own AWS calls; /calls: total over the time inside them")
    header = ("operation", "calls", "p50", "base", "x", "p95", "base", "x", "own p50", "/calls")
    lines.append("  {:44} {:>5} {:>7} {:>7} {:>5} {:>7} {:>7} {:>5} {:>8} {:>6}".format(*header))
    for row in results["operations"]:
        lines.append(
            f"  {row['operation']:44} {row['calls']:>5} {row['p50_ms']:7.1f} {row['baseline_p50_ms']:7.1f} "
            f"{row['ratio_p50']:5.2f} {row['p95_ms']:7.1f} {row['baseline_p95_ms']:7.1f} {row['ratio_p95']:5.2f} "
            f"{row['own_p50_ms']:8.1f} {row['in_calls_ratio_p50']:6.2f}"
        )
    lines += ["", *aws_like_report(results["operations_aws_like"])]
    t, d = results["throughput"], results["duplicates"]
    lines += [
        "",
        f"3. throughput: {t['approvals_per_second']:.1f} approvals settled and resumed per second ({t['approvals']} "
        f"by {t['clients']} concurrent clients in {t['seconds']:.2f} s; actions run {t['actions_run']})",
        f"   {d['deliveries']} concurrent duplicates of one approval: settled in {d['seconds_to_settle']:.2f} s, "
        f"replies {d['replies']}, action ran {d['executions']} time(s)",
    ]
    lines += ["", *cold_start_report(results["cold_start"])]
    g = results["snapshot_growth"]
    lines += ["", "5. snapshot growth"]
    for row in g["rows"]:
        lines.append(
            f"   {row['messages']:>5} messages: {row['bytes']:>9,} bytes, serialise+restore {row['ms']:.2f} ms"
        )
    lines.append(f"   fitted exponent: bytes {g['bytes_exponent']:.2f}, time {g['time_exponent']:.2f} (1 = linear)")
    lines += ["", "6. fan-out and depth (start-turn that pauses; then every approval until it completes)"]
    lines.append(
        f"   {'fan-out':>7} {'depth':>5} {'calls':>5} {'txns':>4} {'ms':>8} {'answers':>7} {'calls':>5} {'ms':>8}"
    )
    for row in results["tree_scaling"]:
        lines.append(
            f"   {row['fan_out']:>7} {row['depth']:>5} {row['start_calls']:>5} {row['start_transactions']:>4} "
            f"{row['start_ms']:8.1f} {row['interactions']:>7} {row['answer_all_calls']:>5} {row['answer_all_ms']:8.1f}"
        )
    lay = results["layer"]
    lines += [
        "",
        f"7. layer: {lay['zipped_bytes'] / 1e6:.2f} MB zipped, {lay['unzipped_bytes'] / 1e6:.2f} MB unzipped "
        f"(goal: under {lay['goal_zipped_bytes'] / 2**20:.0f} MB zipped)",
    ]
    if "events" in results:
        lines += ["", *events.report(results["events"])]
    lines += ["", *agents.report(results["agents"])]
    lines += ["", *context.report(results["bounded_context"])]
    lines += ["", *strands.report(results["strands"])]
    if "cost" in results:
        lines += ["", *cost.report(results["cost"])]
    return "\n".join(lines)


def main() -> int:
    results: dict[str, Any] = {"machine": _machine(), "runs": RUNS}
    with target() as settings:
        baseline = Baseline(settings)
        results["operations"] = []
        for operation in operations.OPERATIONS:
            print(f"measuring {operation.name} ({RUNS} runs)...", file=sys.stderr, flush=True)
            results["operations"].append(operations.measure(settings, operation, baseline, RUNS))
        results["operations_aws_like"] = []
        if not os.environ.get("BENCH_AWS"):  # (on AWS the calls take what they take)
            for operation in operations.OPERATIONS:
                print(f"measuring {operation.name} with AWS-like latency ({RUNS} runs)...", file=sys.stderr, flush=True)
                results["operations_aws_like"].append(operations.measure_under(settings, operation, AWS_LIKE, RUNS))
        print("measuring throughput...", file=sys.stderr, flush=True)
        results["throughput"] = operations.throughput(settings)
        results["duplicates"] = operations.duplicates(settings)
        print("measuring fan-out and depth...", file=sys.stderr, flush=True)
        results["tree_scaling"] = operations.tree_scaling(settings)
        print("measuring cold starts...", file=sys.stderr, flush=True)
        results["cold_start"] = cold_start(settings)
        results["cold_start_vs_bare"] = results["cold_start"]["cold_start_vs_bare"]
        if not os.environ.get("BENCH_AWS"):  # the publisher runs as make run's: on the embedded AWS only
            print("measuring events and the inbox...", file=sys.stderr, flush=True)
            results["events"] = events.events_and_inbox(settings, runs=min(RUNS, 100))
            print("measuring the bill...", file=sys.stderr, flush=True)
            results["cost"] = cost.bill(settings)
        print("measuring agents: concurrent tools, optional providers...", file=sys.stderr, flush=True)
        results["agents"] = agents.agents(settings)
        print("measuring Strands agents: cold start, overhead, races...", file=sys.stderr, flush=True)
        results["strands"] = strands.strands_agents(settings, runs=min(RUNS, 20))
    print("measuring snapshots...", file=sys.stderr, flush=True)
    results["snapshot_growth"] = snapshot_growth()
    print("measuring a 1,000-turn session's context...", file=sys.stderr, flush=True)
    results["bounded_context"] = context.bounded_context()
    results["layer"] = layer()
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(report(results))
    print(f"\n(written to {RESULTS.relative_to(ROOT)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

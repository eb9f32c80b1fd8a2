"""Section 2b of ``make bench``: the service's operations with AWS-like latency (bench/latency.py), and
its table. ``python -m bench.aws_like [runs]`` (default 100) runs it alone, on the embedded AWS, and
writes its rows to bench/results.json (``operations_aws_like``), the rest of which it leaves as it is."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.latency import AWS_LIKE
from bench.operations import OPERATIONS, measure_under
from resumable.local import embedded_aws

GOAL = 1.10


def report(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "2b. the same operations with AWS-like latency (each call held until its kind's median: bench/latency.py),",
        "    ms; in calls: the calls' time under that model; own: time outside them;",
        f"    goal: total / in calls at most {GOAL:.2f}",
    ]
    header = ("operation", "calls", "p50", "in calls", "own p50", "own p95", "/calls", "p95", "met?")
    lines.append("  {:44} {:>5} {:>7} {:>8} {:>8} {:>8} {:>6} {:>6} {:>5}".format(*header))
    for row in rows:
        met = "yes" if row["in_calls_ratio_p50"] <= GOAL else "no"
        lines.append(
            f"  {row['operation']:44} {row['calls']:>5} {row['p50_ms']:7.1f} {row['in_calls_p50_ms']:8.1f} "
            f"{row['own_p50_ms']:8.2f} {row['own_p95_ms']:8.2f} {row['in_calls_ratio_p50']:6.3f} "
            f"{row['in_calls_ratio_p95']:6.3f} {met:>5}"
        )
    return lines


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    with embedded_aws(table_name="bench", bucket_name="bench") as settings:
        rows = [measure_under(settings, operation, AWS_LIKE, runs) for operation in OPERATIONS]
    print("\n".join(report(rows)))
    results = Path(__file__).resolve().parent / "results.json"
    kept = json.loads(results.read_text()) if results.exists() else {}
    results.write_text(json.dumps({**kept, "operations_aws_like": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

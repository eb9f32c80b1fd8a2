"""Section 4 of ``make bench``: each handler's cold start, in fresh interpreters.

What a cold start costs is the handler's import (Lambda's init) and then its first request, which
builds the resolver and the service, makes the AWS clients and makes its AWS calls. Both are
measured, in a fresh interpreter per run, beside a second request in the same process (a warm one),
and held against two yardsticks making the same AWS calls as the handler's first request (recorded
in the uncounted warm-up run): a bare boto3 handler (bench/bare_handler.py: clients made at init, no
framework), and the same calls under Powertools (bench/powertools_handler.py: Logger, Tracer, a
validating resolver, pydantic), the floor any handler on this stack stands on. The goal is the whole
cold start (import + first request), traced, at most 1.5x the bare handler's: ``cold_start_vs_bare``.
Every run is interleaved with the others: in each round, a handler's four runs (traced, untraced,
bare, floor) one after another, handlers and runs in an order shuffled each time. The machine is
shared: a slow second must not land on one side only, and ``cold_start_vs_bare`` is the median of
each round's ratio of the two runs, seconds apart (a 95% confidence interval of that median beside
it, and the ratios of the medians and of the best runs); a fresh ``import boto3`` is timed beside them.

Each handler runs as in Lambda (``LAMBDA_TASK_ROOT``, a trace id), traced as deployed (``Tracing:
Active``: Powertools' Tracer imports the X-Ray SDK and patches botocore at init, and sends its
segments to the daemon's address) and untraced (``POWERTOOLS_TRACE_DISABLED``), so that tracing's
cost shows.

Modules load from bytecode, as from the layer (which ships it, see layers/build.py): a private
bytecode cache (``PYTHONPYCACHEPREFIX``) filled by one warm-up run, whatever ``PYTHONDONTWRITEBYTECODE``
the machine sets.
"""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from resumable.aws.clients import client
from resumable.config import Settings
from resumable.local.authorizers import iam_identity
from resumable.local.embedded_aws import create_resources
from resumable.local.functions import LambdaContext, api_event, function_arn, load_template, routes
from resumable.service import Service
from resumable.store.resources import TTL_ATTRIBUTE

ROOT = Path(__file__).resolve().parents[1]
PRINCIPAL = "arn:aws:iam::000000000000:user/bench"
GOAL = 1.5  # a handler's whole cold start (init + first request), traced, over the bare handler's
BARE_OBJECT = "bare/seed.json"

_RUN = """
import importlib.util, json, sys, time
from types import SimpleNamespace
class Context(SimpleNamespace):
    def get_remaining_time_in_millis(self):
        return 29_000
calls = []
if {record}:  # (the uncounted warm-up run only: importing botocore first would move it out of the timed init)
    from botocore.handlers import BUILTIN_HANDLERS
    def record(model, **kwargs):
        calls[-1].append(f"{{model.service_model.service_name}}.{{model.name}}")
    BUILTIN_HANDLERS.append(("before-call", record))
started = time.perf_counter()
spec = importlib.util.spec_from_file_location("app", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
imported = time.perf_counter()
replies = []
for event in json.loads(sys.argv[1]):
    calls.append([])
    begun = time.perf_counter()
    reply = module.lambda_handler(event, Context(**json.loads(sys.argv[2])))
    replies.append({{"status": reply["statusCode"], "seconds": time.perf_counter() - begun, "calls": calls[-1]}})
print(json.dumps({{"import": imported - started, "requests": replies}}))
"""

_BOTO3 = """
import time
started = time.perf_counter()
import boto3
print(time.perf_counter() - started)
"""


class _Requests:
    """Two requests of each handler's route (a first and a warm one) on records made for them."""

    def __init__(self, settings: Settings) -> None:
        self.service = Service.from_settings(settings)
        self.routes = routes(load_template())

    def _event(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        route = next(r for r in self.routes if r.method == method and r.pattern.match(path))
        raw = json.dumps(body).encode() if body is not None else b""
        headers = {"content-type": "application/json"}
        return api_event(route, method, path, "", headers, raw, iam_identity(PRINCIPAL))

    def _paused(self) -> tuple[str, str, str]:
        session = f"cold-{uuid.uuid4().hex[:12]}"
        turn = self.service.start_turn(session, "delete staging-db", PRINCIPAL)
        return session, turn.turn_id, turn.interactions[0].request_id

    def start_turn(self) -> dict[str, Any]:
        return self._event("POST", f"/sessions/cold-{uuid.uuid4().hex[:12]}/turns", {"prompt": "delete test-db"})

    def get_turn(self) -> dict[str, Any]:
        session, turn, _ = self._paused()
        return self._event("GET", f"/sessions/{session}/turns/{turn}")

    def submit_approval(self) -> dict[str, Any]:
        session, turn, request = self._paused()
        path = f"/sessions/{session}/turns/{turn}/interactions/{request}"
        return self._event("POST", path, {"response": {"decision": "approve"}})

    def cancel(self) -> dict[str, Any]:
        session, turn, _ = self._paused()
        return self._event("POST", f"/sessions/{session}/turns/{turn}/cancel")


def _environment(settings: Settings, cache: str) -> dict[str, str]:
    # What template.yaml gives every function (PYDANTIC_DISABLE_PLUGINS) and the stack's resources.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **settings.environment(), "PYDANTIC_DISABLE_PLUGINS": "__all__", "PYTHONPYCACHEPREFIX": cache}


# As Lambda runs a function with active tracing: its task root, the invocation's trace id, the X-Ray
# daemon's address (nothing listens there: the SDK sends its segments over UDP and does not wait).
TRACED = {
    "LAMBDA_TASK_ROOT": str(ROOT),
    "_X_AMZN_TRACE_ID": "Root=1-674d0000-0123456789abcdef01234567;Parent=0123456789abcdef;Sampled=1",
    "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
    "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
}
VARIANTS = {"traced": TRACED, "untraced": {**TRACED, "POWERTOOLS_TRACE_DISABLED": "true"}}
# What a handler's cold start is held against, making the same AWS calls as its first request: a bare
# boto3 handler, and the same calls under Powertools (Logger, Tracer, a validating resolver, pydantic):
# the framework's floor, traced as deployed.
YARDSTICKS = {"bare": "bare_handler.py", "floor": "powertools_handler.py"}


def _python(code: str, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"a cold start run failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1]


def _median(results: list[dict[str, Any]]) -> dict[str, float]:
    imported = statistics.median(r["import"] for r in results)
    first = statistics.median(r["requests"][0]["seconds"] for r in results)
    warm = statistics.median(r["requests"][1]["seconds"] for r in results)
    return {"import": imported, "first": first, "warm": warm, "cold": statistics.median(map(_cold, results))}


def _median_interval(values: list[float]) -> list[float]:
    """A 95% confidence interval of the median of ``values`` (distribution-free: the order statistics
    the binomial distribution gives; with 21 values, the 6th and 16th)."""
    ordered, n = sorted(values), len(values)
    spread = 1.96 * math.sqrt(n) / 2
    low, high = max(math.floor(n / 2 - spread), 1), min(math.ceil(1 + n / 2 + spread), n)
    return [ordered[low - 1], ordered[high - 1]]


def _cold(result: dict[str, Any]) -> float:
    """One run's cold start: its import and its first request, in seconds."""
    return float(result["import"] + result["requests"][0]["seconds"])


def _paired_ratios(handler: list[dict[str, Any]], bare: list[dict[str, Any]]) -> list[float]:
    """Each round's handler cold start over that round's bare handler's: the two ran seconds apart, so
    that a slow stretch of the shared machine lands on both sides of a ratio."""
    return [_cold(ours) / _cold(theirs) for ours, theirs in zip(handler, bare, strict=True)]


def _fresh(settings: Settings, run: int) -> Settings:
    """A table and bucket of their own for one run, on the embedded AWS: moto's Query reads every item
    of a table and its transactions copy the tables, so its calls slow as a table fills, and slow
    calls would flatter a handler against the yardsticks (each makes the same calls). On AWS (``BENCH_AWS``),
    the table and bucket the environment names."""
    if os.environ.get("BENCH_AWS"):
        return settings
    fresh = settings.model_copy(update={"table_name": f"cold-start-{run}", "bucket_name": f"cold-start-{run}"})
    create_resources(fresh)
    return fresh


def _drop(fresh: Settings, settings: Settings) -> None:
    """The run's table and bucket gone; on AWS, the bare handler's objects (its items expire by TTL)."""
    s3 = client("s3", fresh)
    listed = s3.list_objects_v2(Bucket=fresh.bucket_name, Prefix="" if fresh is not settings else "bare/")
    for item in listed.get("Contents", []):
        s3.delete_object(Bucket=fresh.bucket_name, Key=item["Key"])
    if fresh is not settings:
        s3.delete_bucket(Bucket=fresh.bucket_name)
        client("dynamodb", fresh).delete_table(TableName=fresh.table_name)


def _row(
    calls: list[str], measured: dict[tuple[str, str], list[dict[str, Any]]], name: str, boto3_import: float
) -> dict[str, Any]:
    """One handler's line of the section: medians of each of its runs, and its ratios to the bare handler."""
    row: dict[str, Any] = {"first_request_calls": calls}
    for variant in (*VARIANTS, *YARDSTICKS):
        median = _median(measured[(name, variant)])
        prefix = {"traced": "", "untraced": "untraced_", "bare": "bare_", "floor": "floor_"}[variant]
        row |= {
            f"{prefix}import_ms": median["import"] * 1000,
            f"{prefix}first_request_ms": median["first"] * 1000,
            f"{prefix}warm_request_ms": median["warm"] * 1000,
            f"{prefix}cold_start_ms": median["cold"] * 1000,
        }
    ours, floor, bare = (measured[(name, variant)] for variant in ("traced", "floor", "bare"))
    paired = _paired_ratios(ours, bare)
    row["ratio_to_boto3"] = row["import_ms"] / (boto3_import * 1000)
    row["ratio_to_bare"] = statistics.median(paired)
    row["ratio_to_bare_interval"] = _median_interval(paired)
    row["ratio_of_medians"] = row["cold_start_ms"] / row["bare_cold_start_ms"]
    row["ratio_of_best"] = min(map(_cold, ours)) / min(map(_cold, bare))
    row["floor_ratio_to_bare"] = statistics.median(_paired_ratios(floor, bare))
    row["tracing_cost_ms"] = row["cold_start_ms"] - row["untraced_cold_start_ms"]
    row["cold_start_runs_ms"] = {
        variant: [round(_cold(result) * 1000, 1) for result in measured[(name, variant)]]
        for variant in (*VARIANTS, *YARDSTICKS)
    }
    return row


def cold_start(settings: Settings, runs: int = 21) -> dict[str, Any]:
    """Median import and first-request time of each handler, beside a bare boto3 handler and Powertools'
    floor making the same first AWS calls, and a fresh ``import boto3``."""
    # functions/<folder>: (the template's function, the requests of its route)
    handlers_of = {
        "start_turn": ("StartTurnFunction", _Requests.start_turn),
        "get_turn": ("GetTurnFunction", _Requests.get_turn),
        "submit_approval": ("SubmitApprovalFunction", _Requests.submit_approval),
        "cancel": ("CancelFunction", _Requests.cancel),
    }
    calls_of: dict[str, list[str]] = {}  # each handler's first request's AWS calls, from the warm-up run
    with tempfile.TemporaryDirectory(prefix="bytecode-") as cache:
        boto3_runs: list[float] = []
        measured: dict[tuple[str, str], list[dict[str, Any]]] = {
            (name, variant): [] for name in handlers_of for variant in (*VARIANTS, *YARDSTICKS)
        }
        for run in range(runs + 1):  # the first run fills the bytecode cache and is not counted
            fresh = _fresh(settings, run)
            requests = _Requests(fresh)
            client("s3", fresh).put_object(Bucket=fresh.bucket_name, Key=BARE_OBJECT, Body=b'{"bare": true}')
            env = _environment(fresh, cache)
            seconds = float(_python(_BOTO3, env))
            if run:
                boto3_runs.append(seconds)
            order = [(name, variant) for name in handlers_of for variant in VARIANTS]
            # (in the warm-up run, the yardsticks last: they make the calls the handlers' first requests made)
            order += [(name, yardstick) for name in handlers_of for yardstick in YARDSTICKS]
            if run:  # each handler's runs one after another, beside its yardsticks; in a shuffled order
                shuffle = random.Random(run)
                names = shuffle.sample(list(handlers_of), len(handlers_of))
                variants = (*VARIANTS, *YARDSTICKS)
                order = [(name, variant) for name in names for variant in shuffle.sample(variants, len(variants))]
            for name, variant in order:
                function, request = handlers_of[name]
                context = LambdaContext(function, uuid.uuid4().hex, invoked_function_arn=function_arn(function))
                time.sleep(0.2)  # the embedded AWS finishes what the last run asked of it before this one
                if variant in YARDSTICKS:
                    path = ROOT / "bench" / YARDSTICKS[variant]
                    calls = {
                        "BARE_CALLS": ",".join(calls_of[name]),
                        "BARE_OBJECT": BARE_OBJECT,
                        "BARE_TTL_ATTRIBUTE": TTL_ATTRIBUTE,
                    }
                    lambda_env = {**env, **TRACED, **calls, "AWS_LAMBDA_FUNCTION_NAME": function}
                    # (the floor's one route takes any request: one that asks the embedded AWS nothing)
                    events = json.dumps(
                        [requests.start_turn(), requests.start_turn()] if variant == "floor" else [{}, {}]
                    )
                else:
                    path = ROOT / "functions" / name / "app.py"
                    lambda_env = {**env, **VARIANTS[variant], "AWS_LAMBDA_FUNCTION_NAME": function}
                    events = json.dumps([request(requests), request(requests)])
                code = _RUN.format(path=str(path), record=not run and variant == "traced")
                result = json.loads(_python(code, lambda_env, events, json.dumps(vars(context))))
                statuses = [r["status"] for r in result["requests"]]
                if any(status >= 300 for status in statuses):
                    raise RuntimeError(f"functions/{name}: a cold start request was refused: {statuses}")
                if not run and variant == "traced":
                    calls_of[name] = result["requests"][0]["calls"]
                if run:
                    measured[(name, variant)].append(result)
            _drop(fresh, settings)
    boto3_import = statistics.median(boto3_runs)
    handlers = {name: _row(calls_of[name], measured, name, boto3_import) for name in handlers_of}
    return {
        "boto3_import_ms": boto3_import * 1000,
        "handlers": handlers,
        "cold_start_vs_bare": {name: row["ratio_to_bare"] for name, row in handlers.items()},
        "runs": runs,
        "goal": GOAL,
    }


def report(section: dict[str, Any]) -> list[str]:
    """Section 4's lines of the ``make bench`` report."""
    lines = [
        f"4. cold start, ms (medians of {section['runs']} fresh interpreters): each handler traced as deployed "
        "(Tracing: Active), beside a bare boto3 handler",
        "   and Powertools' floor making the same AWS calls as its first request (bench/bare_handler.py, "
        "powertools_handler.py);",
        f"   goal: cold start (import + 1st request) at most {section['goal']}x the bare handler's (x bare: the "
        "median of each round's ratio,",
        "   and its 95% confidence interval; x med: the ratio of the medians; x best: of the best runs)",
        f"   import boto3 alone {section['boto3_import_ms']:.0f}",
        f"   {'handler':34} {'calls':>5} {'import':>6} {'1st':>5} {'cold':>5} {'warm':>4} {'bare':>5} {'1st':>4}"
        f" {'cold':>5} {'floor':>5} {'x':>5} {'x bare':>6} {'95% CI':>11} {'x med':>5} {'x best':>6} {'untraced':>8}"
        f" {'tracing':>7}",
    ]
    for name, row in section["handlers"].items():
        low, high = row["ratio_to_bare_interval"]
        lines.append(
            f"   functions/{name + '/app.py':24} {len(row['first_request_calls']):5} {row['import_ms']:6.0f} "
            f"{row['first_request_ms']:5.0f} {row['cold_start_ms']:5.0f} {row['warm_request_ms']:4.0f} "
            f"{row['bare_import_ms']:5.0f} {row['bare_first_request_ms']:4.0f} {row['bare_cold_start_ms']:5.0f} "
            f"{row['floor_cold_start_ms']:5.0f} {row['floor_ratio_to_bare']:5.2f} {row['ratio_to_bare']:6.2f} "
            f"{low:5.2f}-{high:<5.2f} {row['ratio_of_medians']:5.2f} {row['ratio_of_best']:6.2f} "
            f"{row['untraced_cold_start_ms']:8.0f} "
            f"{row['tracing_cost_ms']:+7.0f}"
        )
    return lines

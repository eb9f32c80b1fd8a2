"""``make load``: many simulated people on the local API (or a deployed stack's), then what must hold.

Locust (tools/locustfile.py, run from its own environment, .venv/load) drives the API headless: each
simulated person starts turns that pause for a destructive step's approval, approves, denies or
cancels them, and reads the inbox and its turns, a few seconds apart. Its statistics give the
throughput, p50/p95/p99 per route and the errors by code.

Locally it serves its own stack first (the embedded AWS, the handlers, the publisher and the sweeper,
as ``make run``; the agents of tools/load_agents.py, whose approved action writes a ledger line) and
checks, from the store and the ledger, once the sweeper has had a period to move everything on:

- every approved action ran exactly once (no fault is injected), and no denied or canceled one ran;
  every two-person question (the load test's approval rule) approved has two approvals;
- no question is lost: every question a person was shown is in the table, and every one still open is
  in the approvers' inbox;
- no turn is stuck: each is settled, or waits on an open question.

With ``--url`` it drives that API instead, signed with the standard AWS credentials, and checks through
the API that every turn it started is settled or waits on an open question.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LOCUST = ROOT / ".venv" / "load" / "bin" / "locust"
APPROVER = "arn:aws:iam::000000000000:user/alice"
"""One of the approvers the people answer as (tools/locustfile.py)."""
SWEEP_SECONDS = 5.0
"""How often the sweeper runs on the local stack during a load test (the template's is a minute)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make load ARGS=", description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=20, help="simulated people at once (default 20)")
    parser.add_argument("--spawn-rate", type=float, default=5, help="people started a second (default 5)")
    parser.add_argument("--seconds", type=int, default=60, help="how long the load runs (default 60)")
    parser.add_argument("--url", help="a deployed stack's API URL (signed with your AWS credentials)")
    parser.add_argument("--out", type=Path, help="where Locust's CSV statistics go (default: a temporary folder)")
    args = parser.parse_args(argv)
    if not LOCUST.exists():
        _say(f"{LOCUST} is missing: make load installs it (make load ARGS=...)", error=True)
        return 2
    with ExitStack() as stack:
        out = args.out or Path(tempfile.mkdtemp(prefix="resumable-load-"))  # (kept: what it read from)
        out.mkdir(parents=True, exist_ok=True)
        made = out / "made.jsonl"
        made.write_text("")
        if args.url:
            url, check = args.url.rstrip("/"), _RemoteCheck(args.url.rstrip("/"))
        else:
            url, check = stack.enter_context(_local_stack(out))
        _say(f"make load: {args.users} people for {args.seconds} s against {url}")
        _locust(url, args, out, made, signed=bool(args.url))
        _say("\n".join(_report(out)))
        _say(f"Locust's statistics and output, and the local API's log: {out}")
        problems = check(_read_made(made))
    for problem in problems:
        _say(f"NOT HELD: {problem}")
    _say("invariants: " + ("every one held" if not problems else f"{len(problems)} not held"))
    return 1 if problems else 0


def _say(*said: Any, error: bool = False) -> None:
    """What make load tells its user, whatever the local stack's handlers print meanwhile."""
    print(*said, file=sys.__stderr__ if error else sys.__stdout__, flush=True)


def _locust(url: str, args: argparse.Namespace, out: Path, made: Path, *, signed: bool) -> None:
    environment = {**os.environ, "RESUMABLE_LOAD_MADE": str(made), "RESUMABLE_LOAD_SIGN": "1" if signed else "0"}
    command = [
        str(LOCUST),
        "-f",
        str(ROOT / "tools" / "locustfile.py"),
        "--headless",
        "--users",
        str(args.users),
        "--spawn-rate",
        str(args.spawn_rate),
        "--run-time",
        f"{args.seconds}s",
        "--host",
        url,
        "--csv",
        str(out / "load"),
        "--only-summary",
        "--loglevel",
        "WARNING",
        "--exit-code-on-error",
        "0",  # (errors are reported, and the invariants decide)
    ]
    with open(out / "locust.log", "w") as log:
        ran = subprocess.run(command, env=environment, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=False)
    if ran.returncode != 0:
        raise SystemExit(
            f"make load: Locust stopped with exit status {ran.returncode}; its output is in {out / 'locust.log'}"
        )


def _report(out: Path) -> list[str]:
    """Throughput and latency per route, and the errors by code, from Locust's CSV files."""
    with open(out / "load_stats.csv") as stats:
        rows = list(csv.DictReader(stats))
    lines = [f"{'route':<52} {'requests':>8} {'failed':>6} {'per s':>6} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7}"]
    for row in rows:
        name = row["Name"] if row["Type"] else "all routes"
        lines.append(
            f"{name:<52} {row['Request Count']:>8} {row['Failure Count']:>6} "
            f"{float(row['Requests/s']):>6.1f} {row['50%']:>7} {row['95%']:>7} {row['99%']:>7}"
        )
    with open(out / "load_failures.csv") as failures:
        errors: Counter[str] = Counter()
        for row in csv.DictReader(failures):
            errors[f"{row['Name']}: {row['Error']}"] += int(row["Occurrences"])
    lines.append("errors: " + ("none" if not errors else ""))
    lines += [f"  {n:>6}  {error}" for error, n in errors.most_common()]
    return lines


def _read_made(made: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in made.read_text().splitlines() if line.strip()]


@contextmanager
def _local_stack(out: Path) -> Iterator[tuple[str, Any]]:
    """The local stack, as make run serves it, with the load test's agents; its URL and its check."""
    sys.path.insert(0, str(ROOT))
    from resumable.local.server import DEFAULT_PRINCIPAL
    from tools.load_agents import RULES

    ledger = out / "actions.log"
    ledger.write_text("")
    os.environ.update(
        AGENT_FACTORY="tools.load_agents:build",
        RESUMABLE_LOAD_LEDGER=str(ledger),
        APPROVAL_RULES=RULES,  # (dropping a table takes two people's approval)
        APPROVER_PRINCIPALS=f"{DEFAULT_PRINCIPAL},arn:aws:iam::000000000000:user/*",
        POWERTOOLS_LOG_LEVEL="WARNING",  # (a line a request is the server's log: below)
        POWERTOOLS_METRICS_DISABLED="true",
    )
    from resumable.config import Settings
    from resumable.local.embedded_aws import embedded_aws
    from resumable.local.events import publishing
    from resumable.local.functions import function_arn
    from resumable.local.schedules import running_schedules
    from resumable.local.server import make_server
    from resumable.local.template import functions_in_process

    with ExitStack() as stack:
        log = stack.enter_context(open(out / "server.log", "w"))
        stack.enter_context(redirect_stderr(log))  # (the local API's line a request, and what goes wrong)
        stack.enter_context(redirect_stdout(log))  # (the handlers' logs; what make load says goes to _say)
        settings = stack.enter_context(embedded_aws())
        stack.enter_context(functions_in_process())
        os.environ.update(settings.environment())
        os.environ.setdefault("CONTINUE_FUNCTION", function_arn("SubmitApprovalFunction"))
        server = make_server(port=0)
        url = f"http://127.0.0.1:{server.server_address[1]}"
        os.environ["API_URL"] = url
        threading.Thread(target=server.serve_forever, name="load-api", daemon=True).start()
        stack.callback(server.server_close)
        stack.enter_context(publishing(settings))
        stack.enter_context(running_schedules(every=SWEEP_SECONDS))

        def stop_serving() -> None:
            server.shutdown()
            server.server_close()

        yield url, _LocalCheck(Settings.from_env(), ledger, stop_serving)


class _LocalCheck:
    """The invariants, read from the store and the actions' ledger."""

    def __init__(self, settings: Any, ledger: Path, stop_serving: Any) -> None:
        self.settings, self.ledger, self.stop_serving = settings, ledger, stop_serving

    def __call__(self, made: list[dict[str, str]]) -> list[str]:
        from resumable.service import Service
        from resumable.store import DynamoDBStore

        self.stop_serving()  # (Locust stopped its people; requests they left under way still finish)
        service = Service.from_settings(self.settings)
        store: DynamoDBStore = service.store  # type: ignore[assignment]
        items = _settled(store)
        turns = {(i["pk"]["S"].removeprefix("SESSION#"), i["turn_id"]["S"]): i for i in items if _root_turn(i)}
        questions = {i["request_id"]["S"]: i for i in items if i["entity"]["S"] == "interaction"}
        ran = Counter(tuple(line.split()[:2]) for line in self.ledger.read_text().splitlines() if line.strip())
        problems: list[str] = []
        approved = {
            (q["pk"]["S"].removeprefix("SESSION#"), q["root_turn_id"]["S"])
            for q in questions.values()
            if _decision(q) == "approve"
        }
        for key in approved:
            if ran[key] != 1:
                problems.append(f"the approved action of turn {key} ran {ran[key]} times")
        two_person = [q for q in questions.values() if q.get("rule", {}).get("S", "null") != "null"]
        for question in two_person:
            votes = json.loads(question.get("votes", {}).get("S", "{}") or "{}")
            if _decision(question) == "approve" and len(votes) < 2:
                problems.append(f"two-person question {question['request_id']['S']} approved with {len(votes)} vote(s)")
        for key, times in ran.items():
            if key not in approved:
                problems.append(f"turn {key}'s action ran {times} times without an approval")
        for entry in made:
            if entry["request"] not in questions:
                problems.append(f"question {entry['request']} of session {entry['session']} is not in the table")
        listed = {i.request_id for i in _inbox(service)}
        open_questions = {r for r, q in questions.items() if q["status"]["S"] == "requested"}
        for request in open_questions - listed:
            question = questions[request]
            index = {k: question[k].get("S") for k in ("gsi2pk", "gsi2sk") if k in question}
            problems.append(
                f"open question {request} of session {question['pk']['S']} is not in the approvers' inbox "
                f"(expires at {question['expires_at']['N']}; inbox keys {index or 'none'})"
            )
        for key, turn in turns.items():
            status = turn["status"]["S"]
            waiting_on_one = status == "waiting" and int(turn.get("open_interactions", {}).get("N", "0")) > 0
            if status not in ("completed", "failed", "canceled", "expired", "interrupted") and not waiting_on_one:
                problems.append(f"turn {key} is stuck: {status}, {turn.get('open_interactions', {}).get('N')} open")
        _say(
            f"checked: {len(turns)} turns, {len(questions)} questions ({len(open_questions)} still open), "
            f"{len(approved)} approved ({sum(_decision(q) == 'approve' for q in two_person)} by two people), "
            f"{sum(ran.values())} actions run"
        )
        return problems


def _settled(store: Any) -> list[dict[str, Any]]:
    """The turns and questions once nothing has changed them for two sweeper periods (what the people
    left under way has finished, and the sweeper has moved on what it moves), or after 5 minutes."""
    deadline, last, quiet_since = time.monotonic() + 300, None, time.monotonic()
    while True:
        items = [item for item in _scan(store) if item.get("entity", {}).get("S") in ("turn", "interaction")]
        seen = sorted(json.dumps(item, sort_keys=True) for item in items)
        if seen != last:
            last, quiet_since = seen, time.monotonic()
        elif time.monotonic() - quiet_since >= 2 * SWEEP_SECONDS or time.monotonic() > deadline:
            return items
        time.sleep(1)


def _scan(store: Any) -> Iterator[dict[str, Any]]:
    request: dict[str, Any] = {"TableName": store.table, "ConsistentRead": True}
    while True:
        page = store.dynamodb.scan(**request)
        yield from page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _root_turn(item: dict[str, Any]) -> bool:
    return item["entity"]["S"] == "turn" and item.get("parent_turn_id", {"NULL": True}).get("NULL") is True


def _decision(question: dict[str, Any]) -> str | None:
    response = question.get("response", {}).get("S")
    if response is None:
        return None
    decided = json.loads(response)
    return decided.get("decision") if isinstance(decided, dict) else None


def _inbox(service: Any) -> list[Any]:
    """The inbox of an approver who started none of the turns (so a two-person question, which its
    starter may not approve, is in it)."""
    found, cursor = [], None
    while True:
        page = service.inbox(APPROVER, limit=200, cursor=cursor)
        found += page.interactions
        if page.cursor is None:
            return found
        cursor = page.cursor


class _RemoteCheck:
    """The invariant a deployed stack's API can show: every turn started is settled or waits on a question."""

    def __init__(self, url: str) -> None:
        self.url = url

    def __call__(self, made: list[dict[str, str]]) -> list[str]:
        from resumable.cli.client import Api, part

        api = Api(self.url, sign=True)
        problems = []
        for entry in [m for m in made if m["kind"] == "asked"]:
            reply = api.call("GET", f"/sessions/{part(entry['session'])}/turns/{part(entry['turn'])}")
            status = reply.body.get("status") if isinstance(reply.body, dict) else None
            if reply.status != 200 or status not in (
                "completed",
                "failed",
                "canceled",
                "expired",
                "interrupted",
                "waiting",
            ):
                problems.append(f"turn {entry['session']}/{entry['turn']}: {reply.status} {status}")
        _say(f"checked: {len(made)} ids the people made, through the API")
        return problems


if __name__ == "__main__":
    sys.exit(main())

"""``resumable admin audit verify --from --to``: the delivered audit trail checked a day at a time
(GET /audit/verify), with progress on stderr, every problem found, and the first named."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from resumable.cli.client import Api

STEP = timedelta(hours=24)  # (the most hours one request checks)


def moment(name: str, text: str) -> datetime:
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{name} {text!r} is not an ISO 8601 date or time, such as 2026-12-01 or 2026-12-01T08:00Z"
        ) from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def verify(api: Api, options: argparse.Namespace, exit_codes: dict[int, int]) -> int:
    """0: every hour asked for was delivered and is intact (or not delivered yet, said so); 1: a record
    or file was changed, deleted or inserted (each named, the first first); else the API's refusal."""
    if not options.since_:
        raise ValueError("resumable admin audit verify needs --from (an ISO 8601 date or time), and --to (default now)")
    start = moment("--from", options.since_)
    end = moment("--to", options.until_) if options.until_ else datetime.now(UTC)
    if start >= end:
        raise ValueError(f"--from {start.isoformat()} is not before --to {end.isoformat()}")
    problems: list[dict[str, Any]] = []
    hours = records = undelivered = before = 0
    at = start
    while at < end:
        until = min(at + STEP, end)
        reply = api.call("GET", "/audit/verify?" + urlencode({"since": at.isoformat(), "until": until.isoformat()}))
        if reply.status >= 300:
            body = reply.body if isinstance(reply.body, dict) else {}
            print(f"{reply.status} {body.get('code') or 'error'}: {body.get('message')}", file=sys.stderr)
            return exit_codes.get(reply.status, 1)
        checked = reply.body
        hours, records = hours + checked["hoursChecked"], records + checked["recordsChecked"]
        undelivered += checked["undeliveredHours"]
        before += checked["beforeFirstDelivery"]
        problems += checked["problems"]
        print(
            f"checked {checked['since']} to {checked['until']}: {checked['hoursChecked']} hours, "
            f"{checked['recordsChecked']} records, {len(checked['problems'])} problems",
            file=sys.stderr,
        )
        at = until
    if options.format == "jsonl":
        for problem in problems:
            print(json.dumps(problem, ensure_ascii=False))
    else:
        for problem in problems:
            print(_line(problem))
    said = f"{hours} hours and {records} records checked"
    if before:
        said += f"; {before} hours before the first delivery: not covered"
    if undelivered:
        said += (
            f"; {undelivered} hours not delivered yet (an hour is delivered 15 minutes after it ends), not vouched for"
        )
    if problems:
        print(f"NOT INTACT: {len(problems)} problems; the first: {_line(problems[0])}; {said}", file=sys.stderr)
        return 1
    print(f"intact: {said}", file=sys.stderr)
    return 0


def _line(problem: dict[str, Any]) -> str:
    record = f" record {problem['sortKey']}" if problem.get("sortKey") else ""
    return f"{problem['hour']}  {problem['kind']} in {problem['where']}:{record} {problem['detail']}"

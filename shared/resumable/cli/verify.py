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

STEP = timedelta(hours=24)  # (the most hours one request checks, counted in whole hours)
NOT_COVERED = 3
"""The exit status when nothing was found wrong but some hours of the range could not be checked (not
delivered yet, or before the first delivery): not vouched for."""


def moment(name: str, text: str) -> datetime:
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{name} {text!r} is not an ISO 8601 date or time, such as 2026-12-01 or 2026-12-01T08:00Z"
        ) from None
    return (at if at.tzinfo is not None else at.replace(tzinfo=UTC)).astimezone(UTC)  # (hours are UTC's)


def verify(api: Api, options: argparse.Namespace, exit_codes: dict[int, int]) -> int:
    """0: every hour asked for was delivered and is intact; 1: a record or file was changed, deleted or
    inserted (each named, the first first); 3 (``NOT_COVERED``): nothing wrong in the hours checked, but
    some could not be (not delivered yet, or before the first delivery); else the API's refusal."""
    given = [
        f"--{o.replace('_', '-')}" for o in ("since", "until", "principal", "tool", "outcome") if getattr(options, o)
    ]
    given += ["--check-separation"] if options.check_separation else []
    if given:
        raise ValueError(f"resumable admin audit verify takes --from and --to only, not {', '.join(given)}")
    end = moment("--to", options.until_) if options.until_ else datetime.now(UTC)
    start = moment("--from", options.since_) if options.since_ else end - STEP
    if start >= end:
        raise ValueError(f"--from {start.isoformat()} is not before --to {end.isoformat()}")
    problems: list[dict[str, Any]] = []
    hours = records = undelivered = before = 0
    at = start
    while at < end:
        # (pieces of whole hours, as the API counts them: from the hour ``at`` falls in, 24 hours on)
        until = min(at.replace(minute=0, second=0, microsecond=0) + STEP, end)
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
            f"checked {checked['since']} to {checked['until']}: {_count(checked['hoursChecked'], 'hour')}, "
            f"{_count(checked['recordsChecked'], 'record')}, {_count(len(checked['problems']), 'problem')}",
            file=sys.stderr,
        )
        at = until
    if options.format == "jsonl":
        for problem in problems:
            print(json.dumps(problem, ensure_ascii=False))
    else:
        for problem in problems:
            print(_line(problem))
    said = f"{_count(hours, 'hour')} and {_count(records, 'record')} checked"
    if before:
        said += f"; {_count(before, 'hour')} before the first delivery: not covered"
    if undelivered:
        said += f"; {_count(undelivered, 'hour')} not delivered yet (each is delivered 15 minutes after it ends)"
    if problems:
        print(
            f"NOT INTACT: {_count(len(problems), 'problem')}; the first: {_line(problems[0])}; {said}", file=sys.stderr
        )
        return 1
    if before or undelivered:
        print(f"not vouched for: nothing wrong found, but {said}", file=sys.stderr)
        return NOT_COVERED
    print(f"intact: {said}", file=sys.stderr)
    return 0


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _line(problem: dict[str, Any]) -> str:
    record = f" record {problem['sortKey']}" if problem.get("sortKey") else ""
    return f"{problem['hour']}  {problem['kind']} in {problem['where']}:{record} {problem['detail']}"

"""GET /audit/verify (``resumable admin audit verify``): the delivered trail checked, hour by hour, against
its signed, chained digests, and the table's records against what was delivered (``delivery``).

For each hour: its digest is there and its signature is the digest key's (else ``digest_missing``,
``digest_changed``); it names the previous hour's digest by the SHA-256 that digest has now (else
``chain_broken``: a digest replaced or removed); its records file is there and has the SHA-256 the
digest gives (else ``records_file_missing``, ``records_file_changed``); then each record: in the table
and not delivered (``inserted``), delivered and not in the table while its retention lasts
(``deleted``), or both but not the same (``changed``). ``where`` says which copy was touched: the
table's (the file matches its digest) or S3's (it does not).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from resumable.clock import iso
from resumable.exceptions import ForbiddenError, ValidationFailedError
from resumable.service.access import is_approver
from resumable.service.audit.delivery import (
    DIGESTS,
    HOUR,
    SETTLE_SECONDS,
    digest_key,
    hour_of,
    hour_of_digest,
    sha256,
    unsigned,
)
from resumable.service.audit.trail import moment
from resumable.service.caller import Caller
from resumable.service.views import View
from resumable.store.trail_files import TrailFiles

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

MAX_HOURS = 24
"""The most hours one request checks (the CLI asks a day at a time)."""
MAX_PROBLEMS = 100
LATE_SECONDS = 3600
"""How late the Sweeper may deliver an hour (it was not running, or catching up) before a missing digest
is a problem rather than an hour not delivered yet."""

ProblemKind = Literal[
    "digest_missing",
    "digest_changed",
    "chain_broken",
    "records_file_missing",
    "records_file_changed",
    "inserted",
    "deleted",
    "changed",
]


class TrailProblem(View):
    kind: ProblemKind
    hour: str = Field(description="The hour (its start, UTC) whose delivery shows it.")
    where: Literal["table", "s3"] = Field(description="Which copy was touched: the table's records, or S3's files.")
    sort_key: str | None = Field(default=None, description="The record's sort key (its time, request id, kind).")
    request_id: str | None = None
    detail: str


class TrailCheck(View):
    since: str
    until: str
    intact: bool = Field(
        description="Every hour checked was delivered and nothing was found changed, deleted or added."
    )
    hours_checked: int
    records_checked: int
    first_delivered: str | None = Field(
        description="The first hour ever delivered (null: none); the hours before it are not covered."
    )
    before_first_delivery: int = Field(description="Hours of the range before the first delivery: not covered.")
    undelivered_hours: int = Field(
        description="Hours of the range not delivered yet (an hour is delivered 15 minutes after it ends, and is a "
        "problem when still missing an hour later)."
    )
    problems: list[TrailProblem] = Field(description=f"In order, the first {MAX_PROBLEMS}; the first is the earliest.")


def verify(deps: Dependencies, caller: Caller | None, since: str | None, until: str | None) -> TrailCheck:
    """Check the hours from the one ``since`` falls in to the one ``until`` ends (ISO 8601; at most
    ``MAX_HOURS``; default: the last ``MAX_HOURS`` hours)."""
    if caller is not None and not is_approver(deps.settings, caller):
        raise ForbiddenError(
            "the audit trail is for approvers only (APPROVER_PRINCIPALS, APPROVER_GROUPS); nothing was checked"
        )
    last_moment = moment("until", until) if until is not None else deps.clock.now()
    first_moment = moment("since", since) if since is not None else last_moment - (MAX_HOURS - 1) * HOUR
    first, end = first_moment // HOUR * HOUR, -(-last_moment // HOUR) * HOUR
    if not first < end <= first + MAX_HOURS * HOUR:
        raise ValidationFailedError(
            f"check 1 to {MAX_HOURS} hours at a time (since before until); this asks for {(end - first) / HOUR:g}: "
            "nothing was checked"
        )
    if not deps.settings.audit_bucket or not deps.settings.audit_digest_key:
        raise ValidationFailedError(
            "no audit bucket or digest key is configured (AUDIT_BUCKET, AUDIT_DIGEST_KEY: the template makes both): "
            "the trail is not delivered, so there is nothing to check against"
        )
    files, now = TrailFiles(deps.settings), deps.clock.now()
    start = _first_delivered(deps, files)
    due_before = (now - SETTLE_SECONDS - LATE_SECONDS) // HOUR * HOUR  # (an hour before it is overdue if missing)
    problems: list[TrailProblem] = []
    checked = records = before = undelivered = 0
    for hour in range(int(first), int(end), HOUR):
        if start is None or hour < start:
            before += 1
            continue
        stored = files.get(digest_key(hour))
        if stored is None and hour >= due_before:
            undelivered += 1
            continue
        said, count = _hour(deps, files, hour, now, stored)
        problems += said
        checked, records = checked + 1, records + count
    return TrailCheck(
        since=iso(first) or "",
        until=iso(end) or "",
        intact=not problems and checked == (end - first) // HOUR,
        hours_checked=checked,
        records_checked=records,
        first_delivered=iso(start),
        before_first_delivery=before,
        undelivered_hours=undelivered,
        problems=problems[:MAX_PROBLEMS],
    )


def _first_delivered(deps: Dependencies, files: TrailFiles) -> float | None:
    """The first hour delivered: the earlier of the bucket's first digest and the one the table's head
    item names (each a witness should the other be deleted); None: nothing was delivered."""
    found = [hour_of_digest(key)] if (key := files.first_key(DIGESTS)) is not None else []
    head = deps.store.delivery_head()
    found += [hour_of(head["first_hour"])] if head is not None and "first_hour" in head else []
    return min(found) if found else None


def _hour(
    deps: Dependencies, files: TrailFiles, hour: float, now: float, stored: bytes | None
) -> tuple[list[TrailProblem], int]:
    """The problems of one hour that should be delivered (its digest ``stored``), and how many records
    it checked."""
    at = iso(hour) or ""
    if stored is None:
        detail = (
            f"{digest_key(hour)} is not there, though the hour ended long enough ago: deleted, or never delivered "
            "(the Sweeper's log says why)"
        )
        return [TrailProblem(kind="digest_missing", hour=at, where="s3", detail=detail)], 0
    try:
        digest: dict[str, Any] = json.loads(stored)
        signature = base64.b64decode(digest["signature"], validate=True)
        signed = deps.keys.digest.verified(unsigned(digest), signature)
    except (ValueError, KeyError, TypeError, binascii.Error):
        signed = False
    if not signed or digest.get("hour") != at:
        detail = f"{digest_key(hour)} is not as the digest key signed it (or is another hour's)"
        return [TrailProblem(kind="digest_changed", hour=at, where="s3", detail=detail)], 0
    problems = _chain(files, digest, at)
    table = {(pk, sk): (record, purge) for pk, sk, record, purge in deps.store.audit_items(hour, hour + HOUR)}
    body = files.get(digest["records"]["key"])
    where: Literal["table", "s3"] = "table"
    if body is None:
        problems.append(
            TrailProblem(kind="records_file_missing", hour=at, where="s3", detail=f"{digest['records']['key']} is gone")
        )
        return problems, len(table)
    if sha256(body) != digest["records"]["sha256"]:
        where = "s3"
        problems.append(
            TrailProblem(
                kind="records_file_changed",
                hour=at,
                where="s3",
                detail=f"{digest['records']['key']} does not have the SHA-256 its digest gives",
            )
        )
    delivered = _lines(body)
    for key in sorted(table.keys() | delivered.keys(), key=lambda k: (k[1], k[0])):
        problem = _record(key, table.get(key), delivered.get(key), where, now)
        if problem is not None:
            problems.append(problem.model_copy(update={"hour": at}))
    return problems, len(table.keys() | delivered.keys())


def _chain(files: TrailFiles, digest: dict[str, Any], at: str) -> list[TrailProblem]:
    previous = digest.get("previous")
    if previous is None:
        return []
    held = files.get(previous["key"])
    if held is not None and sha256(held) == previous["sha256"]:
        return []
    said = "is gone" if held is None else "is not the digest this one chains to"
    detail = f"the previous digest, {previous['key']}, {said}"
    return [TrailProblem(kind="chain_broken", hour=at, where="s3", detail=detail)]


def _lines(body: bytes) -> dict[tuple[str, str], tuple[str, float]]:
    found: dict[tuple[str, str], tuple[str, float]] = {}
    for line in body.splitlines():
        try:
            item = json.loads(line)
            found[(str(item["pk"]), str(item["sk"]))] = (str(item["record"]), float(item["purgeAt"]))
        except (ValueError, KeyError, TypeError):
            continue  # (a line that is not one: the file's hash says it was changed)
    return found


def _record(
    key: tuple[str, str],
    table: tuple[str, float] | None,
    delivered: tuple[str, float] | None,
    where: Literal["table", "s3"],
    now: float,
) -> TrailProblem | None:
    """What is wrong with one record (None: nothing): the table's copy against the delivered one."""
    sk = key[1]
    request = sk.split("#")[1] if sk.count("#") >= 1 else None
    if table == delivered:
        return None
    if delivered is None:  # (in the table only: added there, or, the file being changed, taken out of it)
        kind: ProblemKind = "inserted" if where == "table" else "deleted"
        detail = "in the table, and not in what was delivered" if where == "table" else "taken out of the records file"
    elif table is None:
        if where == "table" and delivered[1] <= now:
            return None  # (its retention ended: DynamoDB's TTL took it, as it should)
        kind = "deleted" if where == "table" else "inserted"
        detail = "delivered, and not in the table" if where == "table" else "in the records file, and not in the table"
    else:
        kind, detail = "changed", "the table's record differs from the delivered one"
    return TrailProblem(kind=kind, hour="", where=where, sort_key=sk, request_id=request, detail=detail)

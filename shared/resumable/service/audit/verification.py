"""GET /audit/verify (``resumable admin audit verify``): the delivered trail checked, hour by hour, against
its signed, chained digests, and the table's records against what was delivered (``delivery``).

For each hour from the first delivered (the earliest digest the versioned bucket ever held, or the one
the table's head names): its digest is there and its signature is the digest key's, for that hour
(else ``digest_missing``, ``digest_changed``); it names the hour before's digest by the SHA-256 that
digest has now, and only the first hour names none (else ``chain_broken``); neither of its files was
deleted or overwritten after delivery, as the bucket's versions show (else ``replaced``); its records
file is there and has the SHA-256 the digest gives (else ``records_file_missing``,
``records_file_changed``); then each record: in the table and not delivered (``inserted``), delivered
and not in the table while its retention lasts (``deleted``), or both but not the same (``changed``).
``where`` says which copy was touched: the table's (the file matches its digest) or S3's (it does not).
"""

from __future__ import annotations

import base64
import binascii
import json
from contextlib import suppress
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
    is_digest_key,
    records_key,
    sha256,
    unsigned,
)
from resumable.service.audit.trail import LATEST, moment
from resumable.service.caller import Caller
from resumable.service.views import View
from resumable.store.trail_files import TrailFiles

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

MAX_HOURS = 24
"""The most hours one request checks (the CLI asks a day at a time)."""
MAX_PROBLEMS = 100
MAX_DIGEST_BYTES = 4096
"""What kms:Verify takes as a message; a digest as delivered is well under it (about 600 bytes)."""
LATE_SECONDS = 3600
"""How late the Sweeper may deliver an hour (it was not running, or catching up) before a missing digest
is a problem rather than an hour not delivered yet."""

ProblemKind = Literal[
    "digest_missing",
    "digest_changed",
    "chain_broken",
    "replaced",
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
    undone = "nothing was checked"
    end = -(-(moment("until", until, undone) if until is not None else deps.clock.now()) // HOUR) * HOUR
    end = min(end, LATEST // HOUR * HOUR)  # (no hour ends after 9999)
    first = moment("since", since, undone) // HOUR * HOUR if since is not None else end - MAX_HOURS * HOUR
    if not first < end <= first + MAX_HOURS * HOUR:
        raise ValidationFailedError(
            f"check 1 to {MAX_HOURS} hours at a time, since before until: this asks for the hours from {iso(first)} "
            f"to {iso(end)} (a time before 1970 counts as 1970); {undone}"
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
        replaced = _replaced(files, hour)
        if stored is None and hour >= due_before and not replaced:
            undelivered += 1
            continue
        said, count = _hour(deps, files, hour, now, stored, start)
        problems += replaced + said
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
    key = files.first_ever(DIGESTS, is_digest_key)  # (a digest deleted since counts: its versions stay)
    found = [hour_of_digest(key)] if key is not None else []
    head = deps.store.delivery_head()
    with suppress(ValueError):  # (a head item written by hand: the bucket's witness stands alone)
        found += [hour_of(head["first_hour"])] if head is not None and "first_hour" in head else []
    return min(found) if found else None


def _replaced(files: TrailFiles, hour: float) -> list[TrailProblem]:
    """The hour's files that were deleted or overwritten after delivery: each is written once, so a
    second version, or a delete marker, is a change (the bucket is versioned; under Object Lock no one
    can take those versions away)."""
    problems = []
    for key in (digest_key(hour), records_key(hour)):
        versions, deleted = files.history(key)
        if deleted or versions > 1:
            detail = f"{key} was deleted or overwritten after delivery ({versions} versions, {deleted} deletions)"
            problems.append(TrailProblem(kind="replaced", hour=iso(hour) or "", where="s3", detail=detail))
    return problems


def _hour(
    deps: Dependencies, files: TrailFiles, hour: float, now: float, stored: bytes | None, first: float
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
    digest: dict[str, Any] = {}
    try:  # (whatever the bytes: one that is not a digest as delivered is a changed one, never a failure)
        digest = json.loads(stored) if len(stored) <= MAX_DIGEST_BYTES else {}
        signature = base64.b64decode(digest["signature"], validate=True)
        message = unsigned(digest)
        signed = len(message) <= MAX_DIGEST_BYTES and deps.keys.digest.verified(message, signature)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, binascii.Error):
        signed = False
    if not signed or digest.get("hour") != at:
        detail = f"{digest_key(hour)} is not as the digest key signed it (or is another hour's)"
        return [TrailProblem(kind="digest_changed", hour=at, where="s3", detail=detail)], 0
    problems = _chain(files, digest, hour, first)
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


def _chain(files: TrailFiles, digest: dict[str, Any], hour: float, first: float) -> list[TrailProblem]:
    """The chain's break at ``hour``: its digest names no previous one though it is not the first hour
    delivered, names another than the hour before's, or one that is gone or not as it was."""
    at, previous = iso(hour) or "", digest.get("previous")
    if previous is None:
        if hour == first:
            return []
        detail = f"{digest_key(hour)} starts a new chain, though hours were delivered from {iso(first)}"
        return [TrailProblem(kind="chain_broken", hour=at, where="s3", detail=detail)]
    if previous.get("key") != digest_key(hour - HOUR):
        detail = f"{digest_key(hour)} chains to {previous.get('key')}, not to the hour before's digest"
        return [TrailProblem(kind="chain_broken", hour=at, where="s3", detail=detail)]
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
        except (ValueError, KeyError, TypeError, OverflowError, RecursionError):
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

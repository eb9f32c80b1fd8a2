"""Delivering the audit trail to its bucket, an hour at a time, each hour with a digest chained to the
previous hour's and signed by the digest key, after CloudTrail's digest files (its log file integrity
validation). The Sweeper delivers (it alone may sign); ``service.audit.verification`` checks.

For the hour that begins at ``H`` (UTC), two objects, each written once (``If-None-Match``):

- ``audit/records/YYYY/MM/DD/HH.jsonl``: every record made in [H, H + 1 h), one line each, as stored
  (its partition key, sort key, record text and ``purge_at``), in sort key order: canonical JSON
  (keys sorted, no spaces, UTF-8);
- ``audit/digests/YYYY/MM/DD/HH.json``: ``{"version", "hour", "end", "records": {"key", "sha256",
  "count"}, "previous": {"key", "sha256"} or null, "keyId", "algorithm", "signature"}``: the SHA-256 of
  the records file, of the previous hour's digest file (null for the first digest), and the signature
  (base64) of the digest's canonical JSON without ``signature``, by ``keyId`` (``kms:Sign``,
  RSASSA_PKCS1_V1_5_SHA_256).

An hour is delivered ``SETTLE_SECONDS`` after it ends (a record's time is taken moments before the
transaction that writes it commits), and the hours in order: the table's head item (``AUDIT#DELIVERY``)
says which was last (and which first), and moves on by a conditional write, so two deliveries at once
cannot fork the chain. A file already there (an earlier attempt that stopped before moving the head) is what counts:
its content is hashed, never replaced.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from resumable.aws.keys import SIGNING_ALGORITHM
from resumable.clock import iso
from resumable.metrics import count
from resumable.store.trail_files import TrailFiles

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)

HOUR = 3600
SETTLE_SECONDS = 900
MOST_HOURS_A_RUN = 24
"""How many hours one delivery run catches up at most (a Sweeper that was off delivers the rest in its
next runs, oldest first)."""
VERSION = 1


def canonical(value: Any) -> bytes:
    """``value`` as canonical JSON: keys sorted, no spaces, UTF-8 (what is hashed and signed)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def _path(hour: float) -> str:
    return datetime.fromtimestamp(hour, UTC).strftime("%Y/%m/%d/%H")


def records_key(hour: float) -> str:
    return f"audit/records/{_path(hour)}.jsonl"


DIGESTS = "audit/digests/"


def digest_key(hour: float) -> str:
    return f"{DIGESTS}{_path(hour)}.json"


def is_digest_key(key: str) -> bool:
    """Whether ``key`` is a digest's: ``audit/digests/`` and an hour that exists (``YYYY/MM/DD/HH.json``)."""
    if not _DIGEST_KEY.fullmatch(key):
        return False
    try:
        hour_of_digest(key)
    except ValueError:
        return False
    return True


_DIGEST_KEY = re.compile(r"audit/digests/\d{4}/\d\d/\d\d/\d\d\.json")


def hour_of_digest(key: str) -> float:
    """The hour a digest's key is of (``audit/digests/YYYY/MM/DD/HH.json``)."""
    return (
        datetime.strptime(key.removeprefix(DIGESTS).removesuffix(".json"), "%Y/%m/%d/%H")
        .replace(tzinfo=UTC)
        .timestamp()
    )


def hour_of(text: str) -> float:
    """The start of an hour, from its ISO 8601 form (``2026-12-07T01:00:00.000Z``)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def records_file(items: list[tuple[str, str, str, float]]) -> bytes:
    return b"".join(
        canonical({"pk": pk, "sk": sk, "record": record, "purgeAt": purge}) + b"\n" for pk, sk, record, purge in items
    )


def unsigned(digest: dict[str, Any]) -> bytes:
    """What a digest's signature signs: the digest without its signature, as canonical JSON."""
    return canonical({k: v for k, v in digest.items() if k != "signature"})


def deliver(deps: Dependencies, now: float) -> int:
    """Deliver every hour that ended ``SETTLE_SECONDS`` before ``now`` and is not delivered yet (at most
    ``MOST_HOURS_A_RUN``), oldest first; the first delivery starts with the last such hour. How many
    were delivered (0 where no bucket or key is configured, or where the trail shows tampering: then
    nothing is signed, and the Sweeper's log says why)."""
    settings = deps.settings
    if not settings.audit_bucket or not settings.audit_digest_key:
        return 0
    files = TrailFiles(settings)
    last_complete = (now - SETTLE_SECONDS) // HOUR * HOUR - HOUR
    head = deps.store.delivery_head() or _begin(deps, files, last_complete)
    if head is None:
        return 0
    start, delivered = hour_of(head["hour"]) + HOUR, 0
    while start <= last_complete and delivered < MOST_HOURS_A_RUN:
        refused = _tampered(files, head, start)
        if refused is not None:
            _refuse(start, refused)
            break
        records = records_file(deps.store.audit_items(start, start + HOUR))
        digest: dict[str, Any] = {
            "version": VERSION,
            "hour": iso(start),
            "end": iso(start + HOUR),
            "records": {"key": records_key(start), "sha256": sha256(records), "count": records.count(b"\n")},
            "previous": {"key": head["digest_key"], "sha256": head["digest_sha256"]} if head["digest_key"] else None,
            "keyId": settings.audit_digest_key,
            "algorithm": SIGNING_ALGORITHM,
        }
        # (RSASSA-PKCS1-v1_5 signs the same bytes the same way: an attempt again writes the same digest)
        _, signature = deps.keys.digest.sign(unsigned(digest))
        stored = canonical(digest | {"signature": base64.b64encode(signature).decode()})
        for key, body, kind in (
            (records_key(start), records, "application/x-ndjson"),
            (digest_key(start), stored, "application/json"),
        ):
            if not files.put_once(key, body, kind):
                refused = f"{key} holds an object the Sweeper did not write (or the table changed since it did)"
                break
        if refused is not None:
            _refuse(start, refused)
            break
        moved = {"hour": str(iso(start)), "digest_key": digest_key(start), "digest_sha256": sha256(stored)}
        moved["first_hour"] = head["first_hour"]
        if not deps.store.advance_delivery(head["hour"], moved):
            logger.info("hour=<%s> | another delivery moved the trail's head first", iso(start))
            break
        head, start, delivered = moved, start + HOUR, delivered + 1
    if delivered:
        logger.info("hours=<%d>, until=<%s> | audit trail delivered", delivered, iso(start))
    return delivered


def _refuse(hour: float, why: str) -> None:
    logger.error("hour=<%s> | the audit trail is not delivered, nor signed: %s", iso(hour), why)
    count("AuditDeliveryRefused")


def _begin(deps: Dependencies, files: TrailFiles, first: float) -> dict[str, str] | None:
    """The chain's beginning, claimed once (a conditional write: of two first deliveries, both go on from
    the one that won): its head before the first hour, which has no digest. None where the bucket holds
    digests already (or held them: deleted ones count): the head item was deleted, and a new chain
    would hide the old one."""
    if files.first_ever(DIGESTS, is_digest_key) is not None:
        logger.error(
            "the audit trail's head item (AUDIT#DELIVERY) is gone from the table while its bucket holds digests: "
            "nothing is delivered nor signed until it is put back as it was (docs/audit.md#integrity)"
        )
        count("AuditDeliveryRefused")
        return None
    genesis = {"hour": str(iso(first - HOUR)), "digest_key": "", "digest_sha256": "", "first_hour": str(iso(first))}
    return genesis if deps.store.advance_delivery(None, genesis) else deps.store.delivery_head()


def _tampered(files: TrailFiles, head: dict[str, str], hour: float) -> str | None:
    """Why delivering ``hour`` would sign over tampering (None: it would not): the head's digest is not
    in the bucket as the head says, or the hour's files were delivered, and deleted or overwritten, before
    (a head rolled back to have them signed again)."""
    if head["digest_key"]:
        held = files.get(head["digest_key"])
        if held is None or sha256(held) != head["digest_sha256"]:
            return f"the last digest delivered, {head['digest_key']}, is not in the bucket as the table's head says"
    for key in (records_key(hour), digest_key(hour)):
        versions, deleted = files.history(key)
        if deleted or versions > 1:
            return (
                f"{key} was delivered before, and deleted or overwritten since ({versions} versions, {deleted} deleted)"
            )
    return None

"""The audit trail delivered to its bucket an hour at a time, each hour with a digest chained to the
previous one and signed by the digest key (the Sweeper's alone), and the check that names the first
record changed, deleted or inserted, in the table or in S3 (docs/audit.md#integrity)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from resumable.config import Settings
from resumable.exceptions import ForbiddenError, ValidationFailedError
from resumable.runtime.rules import parse_rules
from resumable.service import Service
from resumable.service.audit.delivery import (
    HOUR,
    SETTLE_SECONDS,
    canonical,
    digest_key,
    records_key,
    sha256,
)
from resumable.service.audit.verification import LATE_SECONDS
from resumable.store import DynamoDBStore
from resumable.store.trail_files import TrailFiles
from tests.clock import FakeClock
from tests.integration.helpers import APPROVE, at_once

APPROVER = "arn:aws:iam::111122223333:user/approver"
ALICE = "arn:aws:iam::111122223333:user/alice"
DENY = {"decision": "deny", "message": "not today"}


@pytest.fixture
def audited(make_service: Callable[..., Service], aws_server: Settings) -> Callable[[], Service]:
    """Services of a deployment whose trail is delivered to a bucket of this test's own."""
    bucket = f"trail-{uuid.uuid4().hex[:12]}"
    TrailFiles(aws_server).client.create_bucket(Bucket=bucket)
    rules = parse_rules([{"tools": ["delete_*"], "required": 1, "approvers": [APPROVER]}])
    return lambda: make_service(
        "nested",
        approver_principals=(APPROVER,),
        approval_rules=rules,
        audit_bucket=bucket,
        audit_digest_key=aws_server.audit_digest_key,
    )


def _hour_start(clock: FakeClock) -> float:
    return clock.now() // HOUR * HOUR


def _decided_hour(audited: Callable[[], Service], clock: FakeClock) -> tuple[Service, float]:
    """A delivery before anything is decided (it starts the chain), then an hour with three decisions and
    a vote-less deny, then the sweeps that deliver it: the hour's start."""
    service = audited()
    clock.advance(SETTLE_SECONDS)
    assert service.sweep().delivered == 1  # (the hour before, settled: the chain's first link, empty)
    hour = _hour_start(clock)
    for n, answer in enumerate([APPROVE, DENY, APPROVE]):
        clock.advance(60)
        started = service.start_turn(f"trail-{n}", "delete the prod-db record", ALICE)
        service.submit_approval(f"trail-{n}", started.turn_id, started.interactions[0].request_id, answer, APPROVER)
    clock.current = hour + HOUR + SETTLE_SECONDS - 1
    assert service.sweep().delivered == 0, "an hour is delivered once it has settled, not before"
    clock.advance(1)
    assert service.sweep().delivered == 1
    return service, hour


def _check(service: Service, hour: float) -> Any:
    return service.verify_audit(_iso(hour - HOUR), _iso(hour + HOUR - 1), APPROVER)


def _iso(at: float) -> str:
    from resumable.clock import iso

    return str(iso(at))


def test_each_hour_is_delivered_with_a_signed_digest_chained_to_the_last_and_checks_intact(
    audited: Callable[[], Service], clock: FakeClock
) -> None:
    service, hour = _decided_hour(audited, clock)
    files = TrailFiles(service.settings)
    lines = [json.loads(line) for line in (files.get(records_key(hour)) or b"").splitlines()]
    outcomes = [json.loads(line["record"])["outcome"] for line in lines]
    assert outcomes == ["approved", "ran", "denied", "approved", "ran"]
    digest = json.loads(files.get(digest_key(hour)) or b"{}")
    assert digest["previous"] == {
        "key": digest_key(hour - HOUR),
        "sha256": sha256(files.get(digest_key(hour - HOUR)) or b""),
    }
    assert digest["records"]["count"] == 5 and digest["algorithm"] == "RSASSA_PKCS1_V1_5_SHA_256"

    checked = _check(service, hour)
    assert (checked.intact, checked.hours_checked, checked.records_checked, checked.problems) == (True, 2, 5, [])
    later = service.verify_audit(_iso(hour), _iso(hour + 3 * HOUR), APPROVER)
    assert (later.intact, later.hours_checked, later.undelivered_hours) == (False, 1, 2), "not delivered: not vouched"


def _records(store: DynamoDBStore) -> list[dict[str, Any]]:
    items = [i for i in store.dynamodb.scan(TableName=store.table)["Items"] if i.get("entity", {}).get("S") == "audit"]
    return sorted(items, key=lambda i: i["sk"]["S"])


def _denied(store: DynamoDBStore) -> dict[str, Any]:
    [item] = [i for i in _records(store) if json.loads(i["record"]["S"])["outcome"] == "denied"]
    return item


@pytest.mark.parametrize("tampering", ["changed", "deleted", "inserted"])
def test_a_record_changed_deleted_or_inserted_in_the_table_is_named(
    audited: Callable[[], Service], clock: FakeClock, tampering: str
) -> None:
    service, hour = _decided_hour(audited, clock)
    store = service.store
    assert isinstance(store, DynamoDBStore)
    second = _denied(store)
    if tampering == "changed":  # (the deny made an approval)
        record = json.loads(second["record"]["S"]) | {"outcome": "approved"}
        store.dynamodb.put_item(TableName=store.table, Item={**second, "record": {"S": json.dumps(record)}})
    elif tampering == "deleted":
        store.dynamodb.delete_item(TableName=store.table, Key={"pk": second["pk"], "sk": second["sk"]})
    else:
        forged = {**second, "sk": {"S": second["sk"]["S"].replace("#2decision#", "#1vote#")}}
        store.dynamodb.put_item(TableName=store.table, Item=forged)
        second = forged
    checked = _check(service, hour)
    assert not checked.intact
    [problem] = checked.problems
    assert (problem.kind, problem.where, problem.sort_key) == (tampering, "table", second["sk"]["S"])
    assert problem.request_id == json.loads(second["record"]["S"])["request_id"]


def test_a_record_whose_retention_ended_may_go_without_a_word(audited: Callable[[], Service], clock: FakeClock) -> None:
    service, hour = _decided_hour(audited, clock)
    store = service.store
    assert isinstance(store, DynamoDBStore)
    first = _records(store)[0]
    store.dynamodb.delete_item(TableName=store.table, Key={"pk": first["pk"], "sk": first["sk"]})
    clock.current = float(first["purge_at"]["N"]) + 1  # (DynamoDB's TTL took it, as it should)
    assert _check(service, hour).problems == []


def _tamper(files: TrailFiles, key: str, change: Callable[[bytes], bytes | None]) -> None:
    held = files.get(key) or b""
    changed = change(held)
    if changed is None:
        files.s3.delete_object(Bucket=files.bucket, Key=key)
    else:
        files.s3.put_object(Bucket=files.bucket, Key=key, Body=changed)


def _reworded(body: bytes) -> bytes:
    """The deny made an approval."""
    lines = [json.loads(line) for line in body.splitlines()]
    for line in lines:
        record = json.loads(line["record"])
        if record["outcome"] == "denied":
            line["record"] = json.dumps(record | {"outcome": "approved"})
    return b"".join(canonical(line) + b"\n" for line in lines)


def _without_the_second(body: bytes) -> bytes:
    return b"\n".join(body.splitlines()[:1] + body.splitlines()[2:]) + b"\n"


@pytest.mark.parametrize(
    ("change", "kinds"),
    [
        (_reworded, ["records_file_changed", "changed"]),
        (
            lambda body: b"\n".join(body.splitlines()[:1] + body.splitlines()[2:]) + b"\n",
            ["records_file_changed", "deleted"],
        ),
        (
            lambda body: body + body.splitlines()[0].replace(b"#2decision#", b"#3action#") + b"\n",
            ["records_file_changed", "inserted"],
        ),
        (lambda body: None, ["records_file_missing"]),
    ],
    ids=["changed", "deleted", "inserted", "removed"],
)
def test_a_record_changed_deleted_or_inserted_in_the_delivered_file_is_named(
    audited: Callable[[], Service], clock: FakeClock, change: Callable[[bytes], bytes | None], kinds: list[str]
) -> None:
    service, hour = _decided_hour(audited, clock)
    files = TrailFiles(service.settings)
    _tamper(files, records_key(hour), change)
    checked = _check(service, hour)
    assert [(p.kind, p.where) for p in checked.problems] == [(kind, "s3") for kind in kinds]
    if len(kinds) == 2:  # (the record named: the second of the hour's, or the one added after the first)
        assert checked.problems[1].sort_key is not None and checked.problems[1].request_id is not None


def test_a_digest_changed_or_removed_breaks_its_signature_or_the_chain(
    audited: Callable[[], Service], clock: FakeClock
) -> None:
    service, hour = _decided_hour(audited, clock)
    files = TrailFiles(service.settings)
    delivered = files.get(digest_key(hour))
    # Its records file rewritten, and the digest made to match it: the signature no longer does.
    forged = json.loads(delivered or b"{}")
    forged["records"]["count"] = 2
    _tamper(files, digest_key(hour), lambda _: json.dumps(forged).encode())
    assert [(p.kind, p.hour) for p in _check(service, hour).problems] == [("digest_changed", _iso(hour))]
    # The first hour's digest taken away: it is missing (the table's head says the chain began there),
    # and the next one's chain is broken.
    _tamper(files, digest_key(hour), lambda _: delivered)  # (back as delivered)
    _tamper(files, digest_key(hour - HOUR), lambda _: None)
    kinds = [(p.kind, p.hour) for p in _check(service, hour).problems]
    assert kinds == [("digest_missing", _iso(hour - HOUR)), ("chain_broken", _iso(hour))]
    # Every digest taken away: each hour that should be delivered by now is named, the last only once
    # the Sweeper is late (till then, it may not have been delivered yet).
    _tamper(files, digest_key(hour), lambda _: None)
    assert [p.kind for p in _check(service, hour).problems] == ["digest_missing"]
    assert _check(service, hour).undelivered_hours == 1
    clock.advance(LATE_SECONDS)
    assert [p.kind for p in _check(service, hour).problems] == ["digest_missing", "digest_missing"]


def test_a_replaced_previous_digest_breaks_the_chain_of_the_next(
    audited: Callable[[], Service], clock: FakeClock
) -> None:
    service, hour = _decided_hour(audited, clock)
    files = TrailFiles(service.settings)
    _tamper(files, digest_key(hour - HOUR), lambda body: body.replace(b'"count":0', b'"count":1'))
    kinds = [(p.kind, p.hour) for p in _check(service, hour).problems]
    assert kinds == [("digest_changed", _iso(hour - HOUR)), ("chain_broken", _iso(hour))]


def test_two_deliveries_at_once_deliver_each_hour_once_and_one_chain(
    audited: Callable[[], Service], clock: FakeClock
) -> None:
    first = audited()
    first.sweep()
    clock.advance(5 * HOUR)
    services = [audited() for _ in range(4)]
    swept = at_once([s.sweep for s in services])
    assert sum(r.delivered for r in swept if not isinstance(r, Exception)) == 5, swept
    checked = first.verify_audit(_iso(clock.now() - 6 * HOUR), _iso(clock.now() - HOUR), APPROVER)
    assert (checked.intact, checked.hours_checked) == (True, 5), checked.problems


def test_only_approvers_check_at_most_a_day_at_a_time(audited: Callable[[], Service]) -> None:
    service = audited()
    with pytest.raises(ForbiddenError, match="approvers only"):
        service.verify_audit("2027-01-01", "2027-01-01T01:00:00Z", ALICE)
    with pytest.raises(ValidationFailedError, match="1 to 24 hours at a time"):
        service.verify_audit("2027-01-01", "2027-01-02T00:00:01Z", APPROVER)
    with pytest.raises(ValidationFailedError, match="since before until"):
        service.verify_audit("2027-01-02", "2027-01-01", APPROVER)

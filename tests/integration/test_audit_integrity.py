"""The audit trail delivered to its bucket an hour at a time, each hour with a digest chained to the
previous one and signed by the digest key (the Sweeper's alone), and the check that names the first
record changed, deleted or inserted, in the table or in S3 (docs/audit.md#integrity)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from resumable.config import Settings
from resumable.exceptions import ForbiddenError, ValidationFailedError
from resumable.local.permissions.calls import acting_as
from resumable.runtime.rules import parse_rules
from resumable.service import Service
from resumable.service.audit.delivery import (
    HOUR,
    SETTLE_SECONDS,
    canonical,
    deliver,
    digest_key,
    records_file,
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
    files = TrailFiles(aws_server).client
    files.create_bucket(Bucket=bucket)
    files.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})  # (as the template's)
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
    # The Sweeper (its calls recorded as the deployed function's: the sweep of a service that runs turns
    # itself is not) delivers the next hour, after it reads the last digest back.
    clock.advance(HOUR)
    with acting_as("SweeperFunction", service.settings.environment()):
        assert deliver(service.deps, clock.now()) == 1
    assert service.verify_audit(_iso(hour), _iso(hour + 2 * HOUR - 1), APPROVER).intact


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
    # (the file written again: a second version, or a delete marker, in the versioned bucket)
    assert [(p.kind, p.where) for p in checked.problems] == [(kind, "s3") for kind in ["replaced", *kinds]]
    if len(kinds) == 2:  # (the record named: the second of the hour's, or the one added after the first)
        assert checked.problems[2].sort_key is not None and checked.problems[2].request_id is not None


def test_a_digest_forged_to_match_a_changed_file_breaks_its_signature(
    audited: Callable[[], Service], clock: FakeClock
) -> None:
    service, hour = _decided_hour(audited, clock)
    files = TrailFiles(service.settings)
    forged = json.loads(files.get(digest_key(hour)) or b"{}")
    forged["records"]["count"] = 2
    _tamper(files, digest_key(hour), lambda _: canonical(forged))
    at = _iso(hour)
    assert [(p.kind, p.hour) for p in _check(service, hour).problems] == [("replaced", at), ("digest_changed", at)]


def test_another_hours_digest_put_in_its_place_is_named(audited: Callable[[], Service], clock: FakeClock) -> None:
    service, hour = _decided_hour(audited, clock)
    files = TrailFiles(service.settings)
    earlier = files.get(digest_key(hour - HOUR))
    _tamper(files, digest_key(hour), lambda _: earlier)  # (signed by the key, but for another hour)
    kinds = [p.kind for p in _check(service, hour).problems]
    assert kinds == ["replaced", "digest_changed"]


@pytest.mark.parametrize("which", ["first", "last"])
def test_a_digest_taken_away_is_named_at_once_and_breaks_the_chain_after_it(
    audited: Callable[[], Service], clock: FakeClock, which: str
) -> None:
    service, hour = _decided_hour(audited, clock)
    files = TrailFiles(service.settings)
    gone = hour - HOUR if which == "first" else hour
    _tamper(files, digest_key(gone), lambda _: None)
    named = [(p.kind, p.hour) for p in _check(service, hour).problems]
    expected = [("replaced", _iso(gone)), ("digest_missing", _iso(gone))]
    assert named == expected + ([("chain_broken", _iso(hour))] if which == "first" else [])


def test_a_digest_never_delivered_is_named_once_the_sweeper_is_late(
    audited: Callable[[], Service], clock: FakeClock
) -> None:
    service, hour = _decided_hour(audited, clock)
    clock.advance(HOUR)  # (the next hour has ended and settled: not delivered, as no sweep ran)
    later = service.verify_audit(_iso(hour + HOUR), _iso(hour + 2 * HOUR - 1), APPROVER)
    assert (later.undelivered_hours, later.problems) == (1, [])
    clock.advance(LATE_SECONDS)
    [missing] = service.verify_audit(_iso(hour + HOUR), _iso(hour + 2 * HOUR - 1), APPROVER).problems
    assert (missing.kind, missing.hour) == ("digest_missing", _iso(hour + HOUR))


def test_a_replaced_previous_digest_breaks_the_chain_of_the_next(
    audited: Callable[[], Service], clock: FakeClock
) -> None:
    service, hour = _decided_hour(audited, clock)
    files = TrailFiles(service.settings)
    _tamper(files, digest_key(hour - HOUR), lambda body: body.replace(b'"count":0', b'"count":1'))
    kinds = [(p.kind, p.hour) for p in _check(service, hour).problems]
    before = _iso(hour - HOUR)
    assert kinds == [("replaced", before), ("digest_changed", before), ("chain_broken", _iso(hour))]


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
    with pytest.raises(ValidationFailedError, match="since before until: this asks for the hours from 2027-01-02"):
        service.verify_audit("2027-01-02", "2027-01-01", APPROVER)
    with pytest.raises(ValidationFailedError, match=r"ISO 8601 date or time.*; nothing was checked"):
        service.verify_audit("yesterday", None, APPROVER)
    # By default the last 24 hours, to the end of the hour until falls in.
    checked = service.verify_audit(None, "2027-01-02", APPROVER)
    assert (checked.since, checked.until) == ("2027-01-01T00:00:00.000Z", "2027-01-02T00:00:00.000Z")


def test_a_head_rolled_back_over_deleted_files_is_never_signed_again(
    audited: Callable[[], Service], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A record changed in the table, the hour's files deleted, the head put back an hour: the next
    sweep would sign the changed hour anew. It signs nothing, and the check names what was done."""
    service, hour = _decided_hour(audited, clock)
    store, files = service.store, TrailFiles(service.settings)
    assert isinstance(store, DynamoDBStore)
    denied = _denied(store)
    record = json.loads(denied["record"]["S"]) | {"outcome": "approved"}
    store.dynamodb.put_item(TableName=store.table, Item={**denied, "record": {"S": json.dumps(record)}})
    for key in (digest_key(hour), records_key(hour)):
        _tamper(files, key, lambda _: None)
    earlier = files.get(digest_key(hour - HOUR)) or b""
    rolled_back = {"hour": _iso(hour - HOUR), "digest_key": digest_key(hour - HOUR), "digest_sha256": sha256(earlier)}
    store.dynamodb.put_item(
        TableName=store.table,
        Item={"pk": {"S": "AUDIT#DELIVERY"}, "sk": {"S": "HEAD"}, "entity": {"S": "audit_delivery"}}
        | {k: {"S": v} for k, v in (rolled_back | {"first_hour": _iso(hour - HOUR)}).items()},
    )
    assert service.sweep().delivered == 0
    assert "was delivered before, and deleted or overwritten since" in caplog.text
    assert files.get(digest_key(hour)) is None, "nothing signed over the change"
    kinds = [p.kind for p in _check(service, hour).problems]
    assert kinds == ["replaced", "replaced", "digest_missing"]


def test_a_deleted_head_starts_no_new_chain_beside_the_old(
    audited: Callable[[], Service], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    service, hour = _decided_hour(audited, clock)
    store, files = service.store, TrailFiles(service.settings)
    assert isinstance(store, DynamoDBStore)
    store.dynamodb.delete_item(TableName=store.table, Key={"pk": {"S": "AUDIT#DELIVERY"}, "sk": {"S": "HEAD"}})
    _tamper(files, digest_key(hour), lambda _: None)  # (so that a new chain would sign the hour again)
    clock.advance(HOUR)
    assert service.sweep().delivered == 0
    assert "head item (AUDIT#DELIVERY) is gone from the table while its bucket holds digests" in caplog.text
    # Even every digest deleted, the first delivered is known from the bucket's versions: each is named.
    _tamper(files, digest_key(hour - HOUR), lambda _: None)
    kinds = [(p.kind, p.hour) for p in _check(service, hour).problems]
    assert [k for k, _ in kinds] == ["replaced", "digest_missing", "replaced", "digest_missing"]


def test_a_record_put_in_another_days_partition_is_neither_listed_nor_delivered(
    audited: Callable[[], Service], clock: FakeClock
) -> None:
    service, hour = _decided_hour(audited, clock)
    store = service.store
    assert isinstance(store, DynamoDBStore)
    denied = _denied(store)
    day, next_day = (datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d") for at in (hour, hour + 86_400))
    forged = {**denied, "pk": {"S": denied["pk"]["S"].replace(day, next_day)}}
    store.dynamodb.put_item(TableName=store.table, Item=forged)
    clock.advance(2 * 86_400)  # (so that the next day is read too)
    listed = service.audit(APPROVER, since=_iso(hour), until=_iso(hour + 2 * 86_400)).records
    assert [r.outcome for r in listed] == ["approved", "ran", "denied", "approved", "ran"]


def test_first_deliveries_at_once_make_one_chain_and_a_stray_key_breaks_nothing(
    audited: Callable[[], Service], clock: FakeClock
) -> None:
    clock.advance(SETTLE_SECONDS)
    services = [audited() for _ in range(4)]
    swept = at_once([s.sweep for s in services])
    assert sum(r.delivered for r in swept if not isinstance(r, Exception)) == 1, swept
    files = TrailFiles(services[0].settings)
    files.s3.put_object(Bucket=files.bucket, Key="audit/digests/0-not-a-digest", Body=b"x")
    hour = clock.now() // HOUR * HOUR - HOUR
    checked = services[0].verify_audit(_iso(hour), _iso(hour + HOUR - 1), APPROVER)
    assert (checked.intact, checked.first_delivered) == (True, _iso(hour))


def test_a_file_put_before_the_sweeper_delivers_its_hour_is_never_signed(
    audited: Callable[[], Service], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Someone who may put objects (not sign, not write the table) writes the next hour's records file
    first, with a made-up approval: the Sweeper takes no file it did not write for its own."""
    service, hour = _decided_hour(audited, clock)
    store, files = service.store, TrailFiles(service.settings)
    assert isinstance(store, DynamoDBStore)
    target = hour + HOUR
    line = json.loads((files.get(records_key(hour)) or b"").splitlines()[0])
    made_up = (line["pk"], f"{line['sk'][:27]}#r{'f' * 24}#2decision#0", line["record"], clock.now())
    files.s3.put_object(Bucket=files.bucket, Key=records_key(target), Body=records_file([made_up]))
    clock.current = target + HOUR + SETTLE_SECONDS
    assert service.sweep().delivered == 0
    assert "holds an object the Sweeper did not write" in caplog.text
    assert files.get(digest_key(target)) is None


@pytest.mark.parametrize(
    "stray",
    [
        ("audit/digests/1999/02/30/00.json", b"{}"),  # (shaped like a digest's key, of no hour there is)
        ("audit/digests/9/x.json", b"{}"),
    ],
)
def test_stray_or_malformed_objects_are_named_never_a_failure(
    audited: Callable[[], Service], clock: FakeClock, stray: tuple[str, bytes]
) -> None:
    service, hour = _decided_hour(audited, clock)
    files = TrailFiles(service.settings)
    files.s3.put_object(Bucket=files.bucket, Key=stray[0], Body=stray[1])
    assert _check(service, hour).intact
    # A digest or a records line no parser can take is a changed file, named, not a 500.
    _tamper(files, digest_key(hour), lambda _: b"[" * 2_000 + b"]" * 2_000)  # (under 4 KB, too deep to parse)
    _tamper(
        files,
        records_key(hour - HOUR),
        lambda _: b'{"pk": "p", "sk": "s", "record": "r", "purgeAt": 1' + b"0" * 400 + b"}\n",
    )
    kinds = [p.kind for p in _check(service, hour).problems]
    assert kinds == ["replaced", "records_file_changed", "replaced", "digest_changed"]

"""What the integration tests share: an approval, threads released together, the stored state read
directly, and the turns a vanished runner leaves behind."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple, TypeVar
from urllib.parse import quote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from boto3.dynamodb.types import TypeDeserializer

from resumable.api.app import as_json
from resumable.config import Settings
from resumable.service import Service, TurnView
from resumable.store import Commit, DynamoDBStore, S3Snapshots, Store
from resumable.store.codec import decode, encode
from resumable.store.records import InteractionRecord, TurnRecord, TurnStatus
from tests.clock import FakeClock
from tests.patience import HANG_SECONDS

T = TypeVar("T")

APPROVE: dict[str, str] = {"decision": "approve"}
DEAD_RUNNER = "dead-runner"
"""The lease owner of a runner that took a turn's lease and vanished."""


SHARDS = 4
"""The shards (``INDEX_SHARDS``) of the tables the integration tier makes, and of the e2e tier's in-process
handlers' table. A sharded read is a Query of every shard (the inbox, the audit trail's days, the
sweeper), and these tests' time is their AWS calls: at the default's 16 the integration tier spent 290
CPU-s, at 4 210 CPU-s (5 workers on 2 cores). How many shards makes no other difference to what is read:
test_shards and the property tests of the sharded reads choose their own counts (1 to 16), a bound that
counts the default's Queries sets 16, and what ``make run`` serves (the e2e tier's processes) runs the
default."""


ALICE = "arn:aws:iam::111122223333:user/alice"
ACCESS_KEY = "ASIAEXAMPLEKEY"
"""The access key ``http``'s IAM requests are signed with (API Gateway hands it on)."""
"""The principal that signs ``http``'s requests unless told otherwise."""


# -- the HTTP API, through Powertools' resolver --------------------------------------------------------------


def http(
    app: APIGatewayHttpResolver,
    method: str,
    path: str,
    body: Any = None,
    *,
    query: str = "",
    raw: str | None = None,
    headers: dict[str, str] | None = None,
    principal: str = ALICE,
    claims: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """The status and JSON body of ``app``'s reply to an API Gateway HTTP API (v2) event, as the
    functions' shared handler would pass it on (``handle`` reads every body as JSON): signed by
    ``principal`` (IAM), or with ``claims``, by a sign-in token API Gateway's JWT authorizer checked
    (the claims as strings, as it hands them on)."""
    signed = {"iam": {"userArn": principal, "accountId": "111122223333", "userId": "AIDA", "callerId": "c"}}
    signed["iam"]["accessKey"] = ACCESS_KEY
    event = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "queryStringParameters": dict(p.split("=", 1) for p in query.split("&")) if query else None,
        "headers": headers if headers is not None else {"content-type": "application/json"},
        "requestContext": {
            "accountId": "111122223333",
            "apiId": "api",
            "authorizer": signed if claims is None else {"jwt": {"claims": claims, "scopes": None}},
            "domainName": "api.example.com",
            "domainPrefix": "api",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "t"},
            "requestId": "req",
            "routeKey": "$default",
            "stage": "$default",
            "time": "30/Nov/2026:00:00:00 +0000",
            "timeEpoch": 0,
        },
        "body": raw if raw is not None else (json.dumps(body) if body is not None else None),
        "isBase64Encoded": False,
    }
    reply = app.resolve(as_json(event), None)
    return int(reply["statusCode"]), json.loads(reply["body"])


# -- threads ---------------------------------------------------------------------------------------------


def at_once(calls: Sequence[Callable[[], T]]) -> list[T | Exception]:
    """Run every call in its own thread, all released together by a barrier; each one's result or error."""
    barrier = threading.Barrier(len(calls))
    outcomes: list[T | Exception | None] = [None] * len(calls)

    def run(index: int, call: Callable[[], T]) -> None:
        barrier.wait()
        try:
            outcomes[index] = call()
        except Exception as error:
            outcomes[index] = error

    threads = [threading.Thread(target=run, args=(n, call)) for n, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=HANG_SECONDS)
    assert not any(thread.is_alive() for thread in threads), "a thread never finished (a hang)"
    return [outcome for outcome in outcomes if outcome is not None]


def meet_after_first(services: Sequence[Service], operation: str) -> None:
    """Each service, after its first DynamoDB ``operation`` call, waits until every other has made its
    own: calls run ``at_once`` then really overlap from there (both have read before either writes)."""
    barrier, lock = threading.Barrier(len(services), timeout=HANG_SECONDS), threading.Lock()
    for service in services:
        met = [False]

        def meet(met: list[bool] = met, **_: Any) -> None:
            with lock:  # (a service's calls can be made at once: a sharded read's, on several threads)
                first, met[0] = not met[0], True
            if first:
                barrier.wait()

        store_of(service).dynamodb.meta.events.register(f"after-call.dynamodb.{operation}", meet)


# -- the stored state, read directly -----------------------------------------------------------------------


def store_of(service: Service) -> DynamoDBStore:
    """The service's store, as the DynamoDB store it is in these tests (for its clients)."""
    assert isinstance(service.store, DynamoDBStore)
    return service.store


def root_record(store: Store, session_id: str, turn_id: str) -> TurnRecord:
    """The root turn ``turn_id`` as stored."""
    tree = store.load_tree(session_id, turn_id)
    assert tree is not None
    return tree.root


def _session_query(store: DynamoDBStore, session_id: str) -> list[dict[str, Any]]:
    """Every item of the session's partition as DynamoDB returns it, in key order."""
    request: dict[str, Any] = {
        "TableName": store.table,
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": f"SESSION#{session_id}"}},
        "ConsistentRead": True,
    }
    items: list[dict[str, Any]] = []
    while True:
        page = store.dynamodb.query(**request)
        items += page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return items
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def session_items(store: DynamoDBStore, session_id: str) -> list[dict[str, Any]]:
    """Every item of the session's partition (turns, interactions, the action journal, the outbox),
    decoded to plain values, in key order: what only the store itself reads otherwise."""
    deserialize = TypeDeserializer().deserialize
    return [{k: deserialize(v) for k, v in item.items()} for item in _session_query(store, session_id)]


class Stored(NamedTuple):
    """Items (as JSON) and objects (key, ETag, size), each sorted: equal before and after means untouched."""

    items: list[str]
    objects: list[tuple[str, str, int]]


def table_and_bucket(store: DynamoDBStore, session_id: str | None = None) -> Stored:
    """Every item of the table and every object of the bucket; with ``session_id``, only that session's
    partition and its objects (its snapshots and its agents' sessions)."""
    if session_id is None:
        raw: list[dict[str, Any]] = []
        scan: dict[str, Any] = {"TableName": store.table, "ConsistentRead": True}
        while True:
            scanned = store.dynamodb.scan(**scan)
            raw += scanned.get("Items", [])
            if "LastEvaluatedKey" not in scanned:
                break
            scan["ExclusiveStartKey"] = scanned["LastEvaluatedKey"]
        prefixes = [""]
    else:
        raw = _session_query(store, session_id)
        quoted = quote(session_id, safe="")
        prefixes = [f"snapshots/{quoted}/", f"sessions/{quoted}/"]
    objects: list[tuple[str, str, int]] = []
    s3 = _lister(store.settings)
    for prefix in prefixes:
        listing: dict[str, Any] = {"Bucket": store.settings.bucket_name, "Prefix": prefix}
        while True:
            listed = s3.list_objects_v2(**listing)
            objects += [(o["Key"], o["ETag"], o["Size"]) for o in listed.get("Contents", [])]
            if not listed.get("IsTruncated"):
                break
            listing["ContinuationToken"] = listed["NextContinuationToken"]
    return Stored(sorted(json.dumps(item, sort_keys=True) for item in raw), sorted(objects))


_listers: dict[tuple[str | None, str, str | None, str | None], Any] = {}
_listers_lock = threading.Lock()


def _lister(settings: Settings) -> Any:
    """The S3 client ``table_and_bucket`` lists with, one per AWS it reaches (the bucket is named in
    each call): it only reads, and a client is some milliseconds to make (a property test lists the
    bucket twice per example)."""
    key = (settings.endpoint_url, settings.region, settings.access_key_id, settings.secret_access_key)
    with _listers_lock:
        if key not in _listers:
            _listers[key] = S3Snapshots(settings).s3
        return _listers[key]


@contextmanager
def own_bucket(aws: Settings) -> Iterator[Settings]:
    """``aws`` with a bucket of its own, emptied and deleted afterwards: a test that lists the whole
    bucket (to see that nothing was written) then lists only what it wrote."""
    own = aws.model_copy(update={"bucket_name": f"own-{uuid.uuid4().hex[:12]}"})
    s3 = S3Snapshots(own).s3
    s3.create_bucket(Bucket=own.bucket_name)
    try:
        yield own
    finally:
        for found in s3.list_objects_v2(Bucket=own.bucket_name).get("Contents", []):
            s3.delete_object(Bucket=own.bucket_name, Key=found["Key"])
        s3.delete_bucket(Bucket=own.bucket_name)


# -- what a vanished runner leaves behind ------------------------------------------------------------------


def answered_but_not_resumed(service: Service, session_id: str, clock: FakeClock) -> TurnView:
    """A turn paused on one approval whose answer is recorded, but which nobody resumed: the invocation
    that settled the answer died before it took the lease. ``service``'s factory asks one approval."""
    started = service.start_turn(session_id, "delete the prod-db record")
    [interaction] = started.interactions
    answered = service.store.answer_interaction(
        session_id, started.turn_id, interaction.request_id, APPROVE, "alice", clock.now(), approval_shaped=True
    )
    assert answered.outcome == "answered"
    assert service.get_turn(session_id, started.turn_id).status == "waiting"
    return started


def leased_by_a_dead_runner(service: Service, session_id: str, clock: FakeClock) -> tuple[TurnView, TurnRecord]:
    """A turn whose approval is recorded and whose resume was begun by a runner that then vanished: it is
    ``running`` under ``DEAD_RUNNER``'s lease, which expires ``lease_seconds`` from now. Returns the turn as
    it was started and its root as the dead runner leased it."""
    started = answered_but_not_resumed(service, session_id, clock)
    now = clock.now()
    leased = service.store.acquire_lease(
        session_id, started.turn_id, DEAD_RUNNER, now, now + service.settings.lease_seconds, takeover=False
    )
    assert leased is not None
    assert (leased.status, leased.lease_owner) == ("running", DEAD_RUNNER)
    return started, leased


def late_commit(leased: TurnRecord, now: float, status: TurnStatus = "completed") -> Commit:
    """What the runner that held ``leased`` would commit if it woke up at ``now``: the turn ``completed``
    (which also frees the session), or e.g. ``waiting`` again (which touches only the turn)."""
    return Commit(
        root=leased.model_copy(
            update={
                "status": status,
                "version": leased.version + 1,
                "output": "a late answer" if status == "completed" else None,
                "lease_owner": None,
                "lease_expires_at": None,
                "open_interactions": 0,
                "updated_at": now,
            }
        ),
        expected_version=leased.version,
        expected_status="running",
        expected_lease_owner=leased.lease_owner,
        settle_session=status == "completed",
    )


# -- what DynamoDB's TTL does ----------------------------------------------------------------------------


def ttl_deletes_expired(store: DynamoDBStore, now: float) -> int:
    """Delete every item of the table whose ``purge_at`` has passed at ``now``, as DynamoDB's TTL does
    (some time after it passed: the embedded AWS has no TTL process); how many."""
    deleted = 0
    scan: dict[str, Any] = {"TableName": store.table, "ConsistentRead": True}
    while True:
        page = store.dynamodb.scan(**scan)
        for item in page.get("Items", []):
            purge_at = item.get("purge_at", {}).get("N")
            if purge_at is not None and float(purge_at) <= now:
                store.dynamodb.delete_item(TableName=store.table, Key={"pk": item["pk"], "sk": item["sk"]})
                deleted += 1
        if "LastEvaluatedKey" not in page:
            return deleted
        scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def as_written_before(store: DynamoDBStore, session_id: str) -> None:
    """Rewrite the session's turns and questions as the release before wrote them: every attribute of
    the record, NULL where it is None and the default where it holds one (a root turn's lease apart: a
    commit removed it)."""
    for item in _session_query(store, session_id):
        if item.get("entity", {}).get("S") not in ("turn", "interaction"):
            continue
        fields = decode(item)
        if fields["entity"] == "turn":
            record: Any = TurnRecord.model_validate(fields)
            callback = {"callback_id", "callback_told", "callback_heartbeat"}  # (where a durable function waits)
            everything = record.model_dump(exclude=callback if record.callback_id is None else None)
            if record.parent_turn_id is None and record.lease_owner is None:
                del everything["lease_owner"], everything["lease_expires_at"]
        else:
            everything = InteractionRecord.model_validate(fields).model_dump()
        old = {**item, **encode(everything)}
        assert {"NULL": True} in old.values()
        store.dynamodb.put_item(TableName=store.table, Item=old)

"""The AWS calls of a bench run, for every section that measures the service: a ``Recorder`` counts and
times each call as botocore sends it, a ``Baseline`` makes the same calls directly with boto3,
``service_for`` makes a service (a rebuilt process) whose calls a recorder counts, and ``forget_session``
deletes a measured session's items, untimed."""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from bench.latency import Latency
from resumable.aws.clients import client
from resumable.clock import SystemClock
from resumable.config import Settings
from resumable.service import Service
from resumable.service.agent_factory import AgentFactory
from resumable.store import DynamoDBStore, S3Snapshots


@dataclass
class Call:
    name: str  # e.g. dynamodb.Query
    body: Any  # the request's API parameters (DynamoDB) or payload size (S3 PutObject)
    path: str


@dataclass
class Recorder:
    """Every AWS call of a service's clients, as botocore is about to send it, and the time spent
    inside them (from the request being sent to its reply being parsed: signing it and reading the
    reply are botocore's, the rest is the embedded AWS's own, where AWS's would be).

    With ``latency``, the embedded AWS's part of each call is held until its kind's median has passed,
    and ``modeled`` adds the calls' times up under that model: botocore's part as measured, AWS's as
    the longer of its median and the emulator's time (the sleep's own overshoot is not counted)."""

    calls: list[Call] = field(default_factory=list)
    on: bool = True
    latency: Latency | None = None
    in_calls: float = 0.0
    modeled: float = 0.0
    _started: dict[int, float] = field(default_factory=dict)
    _sent: dict[int, float] = field(default_factory=dict)
    _overshot: dict[int, float] = field(default_factory=dict)

    def attach(self, *clients: Any) -> None:
        for aws in clients:
            aws.meta.events.register("before-call.*.*", self._record)
            aws.meta.events.register("before-call.*.*", self._start)
            aws.meta.events.register_first("before-send.*.*", self._send)
            aws.meta.events.register("before-parse.*.*", self._answered)
            aws.meta.events.register("after-call.*.*", self._stop)

    def _start(self, **_: Any) -> None:
        self._started[threading.get_ident()] = time.perf_counter()

    def _send(self, **_: Any) -> None:
        self._sent[threading.get_ident()] = time.perf_counter()

    def _answered(self, operation_model: Any, **_: Any) -> None:
        sent = self._sent.pop(threading.get_ident(), None)
        if sent is None or self.latency is None or not self.on:
            return
        median = self.latency.of(f"{operation_model.service_model.service_name}.{operation_model.name}")
        if (wait := median - (time.perf_counter() - sent)) > 0:
            time.sleep(wait)
            self._overshot[threading.get_ident()] = time.perf_counter() - sent - median

    def _stop(self, **_: Any) -> None:
        ident = threading.get_ident()
        started, overshot = self._started.pop(ident, None), self._overshot.pop(ident, 0.0)
        if started is None or not self.on:
            return
        took = time.perf_counter() - started
        self.in_calls += took
        self.modeled += took - overshot

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if not self.on:
            return
        service = model.service_model.service_name
        raw: Any = params.get("body") or b""
        if service == "dynamodb":
            body: Any = json.loads(raw or b"{}")
        elif isinstance(raw, bytes | str):
            body = len(raw)
        else:  # a file-like body (botocore wraps S3 payloads)
            body = len(raw.getvalue()) if hasattr(raw, "getvalue") else 0
        self.calls.append(Call(f"{service}.{model.name}", body, params.get("url_path", "")))

    def take(self) -> list[Call]:
        taken, self.calls = self.calls, []
        self.in_calls = self.modeled = 0.0
        return taken


class Baseline:
    """The same calls made directly with boto3: reads repeated as they were made, writes made to
    scratch items and objects of the same shape."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.dynamodb = client("dynamodb", settings)
        self.s3 = client("s3", settings)
        self.scratch = f"BENCH#{uuid.uuid4().hex}"
        self.s3.put_object(Bucket=settings.bucket_name, Key="bench/scratch", Body=b"{}")

    def _item(self, n: int) -> dict[str, Any]:
        return {"pk": {"S": self.scratch}, "sk": {"S": f"item-{n}"}, "v": {"S": uuid.uuid4().hex}}

    def replay(self, calls: list[Call]) -> float:
        """Seconds the raw calls take."""
        started = time.perf_counter()
        for call in calls:
            self._one(call)
        return time.perf_counter() - started

    def _one(self, call: Call) -> None:
        table, bucket = self.settings.table_name, self.settings.bucket_name
        body = call.body
        match call.name:
            case "dynamodb.GetItem" | "dynamodb.Query":
                method = self.dynamodb.get_item if call.name.endswith("GetItem") else self.dynamodb.query
                method(**body)
            case "dynamodb.UpdateItem":
                self.dynamodb.update_item(
                    TableName=table,
                    Key={"pk": {"S": self.scratch}, "sk": {"S": "item-0"}},
                    UpdateExpression="SET v = :v",
                    ExpressionAttributeValues={":v": {"S": uuid.uuid4().hex}},
                )
            case "dynamodb.PutItem":
                self.dynamodb.put_item(TableName=table, Item=self._item(0))
            case "dynamodb.TransactWriteItems":
                items = len(body.get("TransactItems", [])) or 1
                self.dynamodb.transact_write_items(
                    TransactItems=[{"Put": {"TableName": table, "Item": self._item(n)}} for n in range(items)]
                )
            case "s3.PutObject":
                self.s3.put_object(Bucket=bucket, Key="bench/scratch", Body=b"x" * int(body))
            case "s3.GetObject":
                self.s3.get_object(Bucket=bucket, Key="bench/scratch")
            case "s3.PutObjectTagging":
                self.s3.put_object_tagging(
                    Bucket=bucket,
                    Key="bench/scratch",
                    Tagging={"TagSet": [{"Key": "resumable-snapshot", "Value": "superseded"}]},
                )
            case other:
                raise ValueError(f"the baseline cannot replay {other}")


def service_for(settings: Settings, factory: AgentFactory, recorder: Recorder | None = None) -> Service:
    """A new Service (its own clients: a rebuilt process) running ``factory``'s agents; ``recorder``
    counts its AWS calls."""
    store = DynamoDBStore(settings)
    snapshots = S3Snapshots(settings)
    if recorder is not None:
        recorder.attach(store.dynamodb, snapshots.s3)
    return Service(store, settings, SystemClock(), factory, snapshots=snapshots)


def forget_session(settings: Settings, session: str) -> None:
    """Delete a session's items (untimed): moto copies a whole table for every item of a transaction,
    so a table that grows run after run would make each run slower than the last; AWS does not."""
    dynamodb = client("dynamodb", settings)
    items = dynamodb.query(
        TableName=settings.table_name,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"SESSION#{session}"}},
        ProjectionExpression="pk, sk",
    )["Items"]
    for start in range(0, len(items), 25):
        dynamodb.batch_write_item(
            RequestItems={settings.table_name: [{"DeleteRequest": {"Key": k}} for k in items[start : start + 25]]}
        )

"""What AWS bills for the calls a service makes, counted as AWS counts it: a ``Meter`` watches a
service's clients (botocore's before-call and after-call events) and adds up DynamoDB's write and
read request units, S3's PUT- and GET-class requests and EventBridge's events.

DynamoDB's units follow its documented rules. A write costs one unit per KB of the larger of the
item before and after it (at least one), twice that inside a transaction, and one more write per KB
in each global secondary index the item is in before or after (a write that moves it within an index
is a delete and a put there; every index here projects the whole item). A read costs one unit per
4 KB read (strongly consistent), half of that eventually consistent, twice inside a transaction; a
Query sums the items it returns before rounding up. To see the items as DynamoDB does, the meter reads
every item a write names before and after the call, with a client of its own that it does not count;
it sizes an item by DynamoDB's item-size rules (``item_size``).

What it does not count: items a Query's filter drops (DynamoDB charges them, the reply does not show
them); a write refused by its condition is counted at the item's size before it (as DynamoDB charges
it), a transaction canceled is not counted.
"""

from __future__ import annotations

import base64
import json
import math
import threading
from collections import Counter
from decimal import Decimal
from typing import Any

from resumable.aws.clients import client
from resumable.config import Settings

KEYS = ("pk", "sk")
INDEXES = tuple((f"gsi{n}pk", f"gsi{n}sk") for n in range(1, 5))
WRITE_UNIT = 1024
READ_UNIT = 4096
EVENT_CHUNK = 64 * 1024  # EventBridge bills an event per 64 KB of its entry
S3_PUT_CLASS = {"PutObject", "CopyObject", "PostObject", "ListObjects", "ListObjectsV2", "PutObjectTagging"}
S3_GET_CLASS = {"GetObject", "HeadObject", "GetObjectTagging"}


def value_size(value: dict[str, Any]) -> int:
    """The bytes DynamoDB counts for one attribute value (its name aside)."""
    [(kind, v)] = value.items()
    match kind:
        case "S":
            return len(v.encode())
        case "N":
            digits = Decimal(v).normalize().as_tuple().digits
            return math.ceil(len(digits) / 2) + 1
        case "B":  # bytes in a reply, base64 in a request's JSON
            return len(v) if isinstance(v, bytes) else len(base64.b64decode(v))
        case "BOOL" | "NULL":
            return 1
        case "SS":
            return sum(len(s.encode()) for s in v)
        case "NS":
            return sum(value_size({"N": n}) for n in v)
        case "BS":
            return sum(value_size({"B": b}) for b in v)
        case "L":
            return 3 + sum(value_size(e) + 1 for e in v)
        case "M":
            return 3 + sum(len(k.encode()) + value_size(e) + 1 for k, e in v.items())
    raise ValueError(f"not a DynamoDB attribute value: {value!r}")


def item_size(item: dict[str, Any]) -> int:
    """An item's size as DynamoDB counts it: each attribute's name in UTF-8 and its value."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def _write_units(size: int) -> int:
    return max(1, math.ceil(size / WRITE_UNIT))


def _read_units(size: int, consistent: bool) -> float:
    units = max(1, math.ceil(size / READ_UNIT))
    return units if consistent else units / 2


def index_writes(before: dict[str, Any] | None, after: dict[str, Any] | None) -> Counter[str]:
    """Write units a change of an item costs in each index (each projects the whole item), by index."""
    units: Counter[str] = Counter()
    for pk, sk in INDEXES:
        index = pk.removesuffix("pk")
        old = (before[pk], before[sk]) if before and pk in before and sk in before else None
        new = (after[pk], after[sk]) if after and pk in after and sk in after else None
        if old is not None and new is not None and old == new:
            units[index] += _write_units(item_size(after)) if before != after else 0  # type: ignore[arg-type]
            continue
        if old is not None:
            units[index] += _write_units(item_size(before))  # type: ignore[arg-type]
        if new is not None:
            units[index] += _write_units(item_size(after))  # type: ignore[arg-type]
    return +units


class Meter:
    """Billed units of every call the attached clients make, while ``on``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.units: Counter[str] = Counter()
        self.by_item: Counter[str] = Counter()  # write units by the kind of item written (its entity)
        self.on = True
        self._lock = threading.Lock()
        self._reader = client("dynamodb", settings)  # not attached: its reads are the meter's own

    def attach(self, *clients: Any) -> None:
        for aws in clients:
            aws.meta.events.register("before-call.*.*", self._before)
            aws.meta.events.register("after-call.*.*", self._after)

    def take(self) -> Counter[str]:
        with self._lock:
            taken, self.units = self.units, Counter()
        return taken

    def _add_to(self, kind: str, units: int) -> None:
        with self._lock:
            self.by_item[kind] += units

    def _add(self, **units: float) -> None:
        with self._lock:
            self.units.update(units)

    # -- the calls ---------------------------------------------------------------------------------------

    def _before(self, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if not self.on:
            return
        service = model.service_model.service_name
        if service == "dynamodb":
            request = json.loads(params.get("body") or b"{}")
            context["meter"] = (request, [(key, self._get(key)) for key, _ in _writes(model.name, request)])
        elif service == "s3" and model.name == "PutObject":
            body: Any = params.get("body") or b""
            context["meter"] = len(body) if isinstance(body, bytes | str) else len(getattr(body, "getvalue", bytes)())
        elif service == "events" and model.name == "PutEvents":
            entries = json.loads(params.get("body") or b"{}").get("Entries", [])
            context["meter"] = sum(max(1, math.ceil(len(json.dumps(e).encode()) / EVENT_CHUNK)) for e in entries)

    def _after(self, model: Any, http_response: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        noted = context.pop("meter", None)
        service, name, ok = model.service_model.service_name, model.name, http_response.status_code < 300
        if not self.on:
            return
        if service == "s3":
            self._add(s3_put=name in S3_PUT_CLASS, s3_get=name in S3_GET_CLASS, s3_bytes=noted or 0)
        elif service == "events" and noted is not None and ok:
            refused = len([e for e in parsed.get("Entries", []) if e.get("ErrorCode")])
            self._add(events=noted - refused, put_events_calls=1)
        elif service == "dynamodb" and noted is not None:
            request, befores = noted
            self._add(dynamodb_calls=1)
            self._dynamodb(name, request, befores, parsed, ok)

    def _dynamodb(
        self, name: str, request: dict[str, Any], befores: list[Any], parsed: dict[str, Any], ok: bool
    ) -> None:
        if befores:  # a write
            if not ok and name == "TransactWriteItems":
                return
            transactional = 2 if name == "TransactWriteItems" else 1
            kinds = dict(_writes(name, request))
            for key, before in befores:
                after = self._get(key) if ok else before
                size = max(item_size(before or {}), item_size(after or {}))
                self._add(write_units=transactional * _write_units(size))
                self._add_to(_kind(after or before, key), transactional * _write_units(size))
                if ok and kinds[key] != "ConditionCheck":
                    indexes = index_writes(before, after)
                    self._add(
                        write_units=indexes.total(), **{f"{index}_write_units": n for index, n in indexes.items()}
                    )
                    self._add_to(_kind(after or before, key), indexes.total())
            return
        if not ok:
            return
        consistent = bool(request.get("ConsistentRead")) and "IndexName" not in request
        if name == "GetItem":
            self._add(read_units=_read_units(self._full_size(parsed.get("Item"), request), consistent))
        elif name == "Query":
            total = sum(self._full_size(i, request) for i in parsed.get("Items", []))
            self._add(read_units=_read_units(total, consistent))
        elif name == "BatchGetItem":
            for table, items in parsed.get("Responses", {}).items():
                asked = request["RequestItems"][table]
                for item in items:
                    self._add(read_units=_read_units(self._full_size(item, asked), bool(asked.get("ConsistentRead"))))
        elif name == "TransactGetItems":
            for response in parsed.get("Responses", []):
                self._add(read_units=2 * _read_units(item_size(response.get("Item") or {}), True))

    def _full_size(self, item: dict[str, Any] | None, request: dict[str, Any]) -> int:
        """What DynamoDB charges a read of ``item`` for: the whole item, though a projection returned less."""
        if not item:
            return 0
        if "ProjectionExpression" in request and all(k in item for k in KEYS):
            item = self._get(json.dumps(_key(item))) or item
        return item_size(item)

    def _get(self, key: str) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self._reader.get_item(
            TableName=self.settings.table_name, Key=json.loads(key), ConsistentRead=True
        ).get("Item")
        return item


def _key(item: dict[str, Any]) -> dict[str, Any]:
    return {k: item[k] for k in KEYS}


def _kind(item: dict[str, Any] | None, key: str) -> str:
    """The kind of an item: its entity, or (an item with none, such as the session's) its sort key's head."""
    if item and "entity" in item:
        return str(item["entity"]["S"])
    return str(json.loads(key)["sk"]["S"]).split("#")[0].lower()


def _writes(name: str, request: dict[str, Any]) -> list[tuple[str, str]]:
    """The items a write names, each as its key (JSON, so it can be a dict key) and the kind of write."""
    if name == "PutItem":
        return [(json.dumps(_key(request["Item"]), sort_keys=True), "Put")]
    if name in ("UpdateItem", "DeleteItem"):
        return [(json.dumps(request["Key"], sort_keys=True), name)]
    if name == "TransactWriteItems":
        written = []
        for entry in request.get("TransactItems", []):
            [(kind, body)] = entry.items()
            key = _key(body["Item"]) if kind == "Put" else body["Key"]
            written.append((json.dumps(key, sort_keys=True), kind))
        return written
    if name == "BatchWriteItem":
        return [
            (
                json.dumps(
                    _key(r["PutRequest"]["Item"]) if "PutRequest" in r else r["DeleteRequest"]["Key"], sort_keys=True
                ),
                "Batch",
            )
            for requests in request.get("RequestItems", {}).values()
            for r in requests
        ]
    return []

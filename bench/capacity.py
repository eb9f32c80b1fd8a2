"""What AWS bills for the calls a service makes, counted as AWS counts it: a ``Meter`` watches a
service's clients (botocore's before-call and after-call events) and adds up DynamoDB's write and
read request units, S3's PUT- and GET-class requests and EventBridge's events.

DynamoDB's units follow its documented rules. A write costs one unit per KB of the larger of the
item before and after it (at least one), twice that inside a transaction, and one more write per KB
in each global secondary index the item is in before or after (a write that moves it within an index
is a delete and a put there; an index that holds the whole item is written by any change of it, one
that holds keys only when the item enters, leaves or moves in it). A read costs one unit per
4 KB read (strongly consistent), half of that eventually consistent, twice inside a transaction; a
Query sums the items it returns before rounding up. To see the items as DynamoDB does, the meter reads
every item a write names before and after the call, with a client of its own that it does not count;
it sizes an item by DynamoDB's item-size rules (``item_size``).

A read is charged for whole items though a projection returns less: the meter reads again what a
projected read (or a ``Select=COUNT`` Query) left out. A write refused by its condition is counted at
the item's size before it, as DynamoDB charges it. What it does not count: items a Query's filter
drops (DynamoDB charges them, the reply does not show them), and a canceled transaction (whether
DynamoDB charges one is not documented). A call it cannot count (a Scan) is an error.
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
from resumable.store.resources import TABLE_INDEXES

KEYS = ("pk", "sk")
INDEXES = tuple(
    (
        index["IndexName"],
        tuple(k["AttributeName"] for k in index["KeySchema"]),
        index["Projection"]["ProjectionType"] == "KEYS_ONLY",
    )
    for index in TABLE_INDEXES
)
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
    """Write units a change of an item costs in each index, by index: a put where it enters, a delete
    where it leaves, both where it moves, one write where what the index holds of it changes (the whole
    item, or, keys only, its keys: which never change in place)."""
    old_item, new_item = before or {}, after or {}
    units: Counter[str] = Counter()
    for index, attributes, keys_only in INDEXES:
        old = tuple(old_item[a] for a in attributes) if all(a in old_item for a in attributes) else None
        new = tuple(new_item[a] for a in attributes) if all(a in new_item for a in attributes) else None
        if old is not None and old == new:  # (in place: keys only, nothing it holds changed)
            changed = not keys_only and old_item != new_item
            units[index] += _write_units(item_size(new_item)) if changed else 0
            continue
        if old is not None:
            units[index] += _write_units(item_size(_held(old_item, attributes, keys_only)))
        if new is not None:
            units[index] += _write_units(item_size(_held(new_item, attributes, keys_only)))
    return +units


def _held(item: dict[str, Any], attributes: tuple[str, ...], keys_only: bool) -> dict[str, Any]:
    return {k: item[k] for k in (*KEYS, *attributes)} if keys_only else item


class Meter:
    """Billed units of every call the attached clients make, while ``on``: ``take()`` hands them over.

    Units are counted under names: ``write_units`` (table and indexes), ``table_write_units``,
    ``gsiN_write_units``, ``read_units``, ``s3_put``, ``s3_get``, ``s3_objects`` and ``s3_object_bytes``
    (what PutObject wrote), ``events``, ``put_events_calls``; and ``item:<kind>``, the write units of
    each kind of item written (its entity), table and indexes together."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.units: Counter[str] = Counter()
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

    def _add(self, units: dict[str, float]) -> None:
        with self._lock:
            self.units.update(units)

    # -- the calls ---------------------------------------------------------------------------------------

    def _before(self, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if not self.on:
            return
        service = model.service_model.service_name
        if service == "dynamodb":
            request = json.loads(params.get("body") or b"{}")
            context["meter"] = (request, [(key, self._get(key)) for key in _keys_written(model.name, request)])
        elif service == "s3" and model.name == "PutObject":
            context["meter"] = _payload_size(params.get("body"))
        elif service == "events" and model.name == "PutEvents":
            entries = json.loads(params.get("body") or b"{}").get("Entries", [])
            context["meter"] = sum(max(1, math.ceil(len(json.dumps(e).encode()) / EVENT_CHUNK)) for e in entries)

    def _after(self, model: Any, http_response: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        noted = context.pop("meter", None)
        service, name, ok = model.service_model.service_name, model.name, http_response.status_code < 300
        if not self.on:
            return
        if service == "s3":
            units = {"s3_put": int(name in S3_PUT_CLASS), "s3_get": int(name in S3_GET_CLASS)}
            if name == "PutObject":
                units |= {"s3_objects": 1, "s3_object_bytes": noted or 0}
            self._add(units)
        elif service == "events" and noted is not None and ok:
            refused = len([e for e in parsed.get("Entries", []) if e.get("ErrorCode")])
            self._add({"events": noted - refused, "put_events_calls": 1})
        elif service == "dynamodb" and noted is not None:
            request, befores = noted
            if befores:
                self._writes(name, request, befores, ok)
            elif ok:
                self._reads(name, request, parsed)

    def _writes(self, name: str, request: dict[str, Any], befores: list[Any], ok: bool) -> None:
        if not ok and name == "TransactWriteItems":
            return  # a canceled transaction: not counted (see the module's docstring)
        transactional = 2 if name == "TransactWriteItems" else 1
        for key, before in befores:
            after = self._get(key) if ok else before  # refused by its condition: charged at its size before
            table = transactional * _write_units(max(item_size(before or {}), item_size(after or {})))
            indexes = index_writes(before, after)  # none for a condition check or a refused write: nothing changed
            self._add(
                {
                    "write_units": table + indexes.total(),
                    "table_write_units": table,
                    **{f"{index}_write_units": n for index, n in indexes.items()},
                    f"item:{_kind(after or before, key)}": table + indexes.total(),
                }
            )

    def _reads(self, name: str, request: dict[str, Any], parsed: dict[str, Any]) -> None:
        """Reads are charged for whole items, though a projection (or ``Select=COUNT``) returns less: the
        meter reads what a projected read left out again, with its own client."""
        consistent = bool(request.get("ConsistentRead")) and "IndexName" not in request
        if name == "GetItem":
            self._add({"read_units": _read_units(self._size_of(request["Key"]), consistent)})
        elif name == "Query":
            items = parsed.get("Items", [])
            if "ProjectionExpression" in request or request.get("Select") == "COUNT":
                whole = {k: v for k, v in request.items() if k not in ("ProjectionExpression", "Select")}
                whole["ExpressionAttributeNames"] = request.get("ExpressionAttributeNames")
                if not whole["ExpressionAttributeNames"]:
                    del whole["ExpressionAttributeNames"]
                items = self._reader.query(**whole).get("Items", [])
            self._add({"read_units": _read_units(sum(item_size(i) for i in items), consistent)})
        elif name in ("BatchGetItem", "TransactGetItems"):
            # each key a GetItem of its own (one that finds nothing still costs the least a read costs)
            for table, keys, consistent, factor in _keys_read(name, request, parsed):
                for key in keys:
                    size = self._size_of(key, table)
                    self._add({"read_units": factor * _read_units(size, consistent)})
        else:
            raise NotImplementedError(f"the meter does not count DynamoDB's {name}: teach bench/capacity.py it")

    def _size_of(self, key: dict[str, Any], table: str | None = None) -> int:
        return item_size(self._get(json.dumps(key, sort_keys=True), table) or {})

    def _get(self, key: str, table: str | None = None) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self._reader.get_item(
            TableName=table or self.settings.table_name, Key=json.loads(key), ConsistentRead=True
        ).get("Item")
        return item


def _payload_size(body: Any) -> int:
    """The bytes of an S3 request's payload (botocore may wrap it in a file-like object)."""
    if body is None:
        return 0
    if isinstance(body, bytes | str):
        return len(body)
    return len(body.getvalue()) if hasattr(body, "getvalue") else 0


def _keys_read(name: str, request: dict[str, Any], parsed: dict[str, Any]) -> list[tuple[str, list[Any], bool, int]]:
    """The keys a BatchGetItem (those it did not leave unprocessed) or a TransactGetItems read: by table,
    with whether strongly consistent and the factor (transactions read twice)."""
    if name == "TransactGetItems":
        gets = [entry["Get"] for entry in request.get("TransactItems", [])]
        return [(get["TableName"], [get["Key"]], True, 2) for get in gets]
    read = []
    left = parsed.get("UnprocessedKeys") or {}
    for table, asked in request.get("RequestItems", {}).items():
        unread = {json.dumps(k, sort_keys=True) for k in (left.get(table) or {}).get("Keys", [])}
        keys = [k for k in asked["Keys"] if json.dumps(k, sort_keys=True) not in unread]
        read.append((table, keys, bool(asked.get("ConsistentRead")), 1))
    return read


def _key(item: dict[str, Any]) -> dict[str, Any]:
    return {k: item[k] for k in KEYS}


def _kind(item: dict[str, Any] | None, key: str) -> str:
    """The kind of an item: its entity, or (an item with none, such as the session's) its sort key's head."""
    if item and "entity" in item:
        return str(item["entity"]["S"])
    return str(json.loads(key)["sk"]["S"]).split("#")[0].lower()


def _keys_written(name: str, request: dict[str, Any]) -> list[str]:
    """The items a write names, each by its key as JSON (so it can be compared and kept)."""
    if name == "PutItem":
        keys = [_key(request["Item"])]
    elif name in ("UpdateItem", "DeleteItem"):
        keys = [request["Key"]]
    elif name == "TransactWriteItems":
        keys = [
            _key(body["Item"]) if kind == "Put" else body["Key"]
            for entry in request.get("TransactItems", [])
            for kind, body in entry.items()
        ]
    elif name == "BatchWriteItem":
        keys = [
            _key(r["PutRequest"]["Item"]) if "PutRequest" in r else r["DeleteRequest"]["Key"]
            for requests in request.get("RequestItems", {}).values()
            for r in requests
        ]
    else:
        keys = []
    return [json.dumps(key, sort_keys=True) for key in keys]

"""What the embedded AWS changes in moto 5.2.5: one fix (a failed task keeps its cause, as in Step
Functions), AWS's hard limits moto does not apply (so every test meets them: ``LIMITS``), and
shortcuts that give the same result as moto's own code at a fraction of its cost (a transaction's
rollback, routing, responses; what it parses, in moto_parsing.py; what it imports only when used, in
moto_imports.py; the keys it makes that nothing reads, in moto_keys.py). Each is applied once per
process, before the server serves its first request, and each is pinned to this moto version by the
constraints."""

from __future__ import annotations

import base64
import functools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from resumable.local import lag, moto_imports, moto_keys, moto_parsing


class OneRequestAtATime:
    """The lock every request to moto's backends holds while it runs (they are the process's, and not
    thread-safe), let go of only while a long poll of an empty SQS queue waits for a message."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holder = threading.local()

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            self._holder.holds = True
            try:
                yield
            finally:
                self._holder.holds = False

    @contextmanager
    def let_go(self) -> Iterator[None]:
        """Without the lock for a while, if this thread holds it; with it again afterwards."""
        if not getattr(self._holder, "holds", False):
            yield
            return
        self._holder.holds = False
        self._lock.release()
        try:
            yield
        finally:
            self._lock.acquire()
            self._holder.holds = True


REQUESTS = OneRequestAtATime()


LIMITS = {
    "TransactWriteItems": 4 * 1024 * 1024,  # bytes of the items a transaction writes, all together
    "PutEvents": 256 * 1024,  # bytes of a request's entries, all together
    "SendTaskSuccess": 256 * 1024,  # characters of a task's output
}
"""AWS's hard limits the embedded AWS applies where moto 5.2.5 does not (it does apply DynamoDB's
400 KB item and 100 items a transaction, and SQS's 256 KB message)."""


_APPLIED: list[bool] = []


def apply() -> None:
    """Once per process (each embedded AWS started calls it: a patch that wraps a method another
    wrapped since would otherwise wrap it again, and a transaction be backed up once per start)."""
    if _APPLIED:
        return
    moto_imports.apply()
    moto_parsing.apply()
    moto_keys.apply()
    _query_only_the_partition_asked()
    _keep_the_cause_of_task_failures()
    _refuse_what_aws_refuses()
    _roll_back_only_the_items_a_transaction_names()
    _list_moto_modules_once()
    _list_a_handlers_actions_once()
    _serialize_dynamodb_items_as_json()
    _check_an_items_size_once()
    _let_other_requests_in_while_a_long_poll_waits()
    lag.apply(REQUESTS)  # (off unless asked for: RESUMABLE_INDEX_LAG)
    _APPLIED.append(True)  # (last: a patch that failed is tried again by the next start)


def _query_only_the_partition_asked() -> None:
    """moto 5.2.5 starts every Query by sorting every item of the table (``all_items``), then keeps
    those of the partition asked and sorts them again: a Query of an empty partition costs as much as
    the table is big, and a sharded read is a Query of each shard. A Query of the table needs only its
    partition's items (moto sorts them by sort key itself); a Query of an index only the items, in any
    order (moto sorts what it keeps by the index's keys and the table's, a total order). So while a
    Query runs, its table's ``all_items`` is that."""
    from moto.dynamodb.models.table import Table

    if getattr(Table.query, "reads_its_partition", False):
        return
    real = Table.query

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name is None and self.range_key_attr and hash_key is not None:
            partition = list(self.items.get(hash_key, {}).values())
            self.all_items = lambda: partition
        else:
            self.all_items = lambda: [i for items in self.items.values() for i in _values(self, items)]
        try:
            return real(self, hash_key, *args, **kwargs)
        finally:
            del self.all_items

    query.reads_its_partition = True  # type: ignore[attr-defined]
    Table.query = query  # type: ignore[method-assign]


def _values(table: Any, items: Any) -> list[Any]:
    """A partition's items: the dict of them by sort key, or (a table without one) the item itself."""
    return list(items.values()) if table.range_key_attr else [items]


def _keep_the_cause_of_task_failures() -> None:
    """moto 5.2.5 drops the ``cause`` of ``SendTaskFailure`` on its way from the request to the
    interpreter (which accepts it), so a failed execution would lose the Turn it carries. Pass it on,
    as Step Functions does."""
    from moto.core.responses import EmptyResult
    from moto.stepfunctions.responses import StepFunctionResponse

    def send_task_failure(self: Any) -> Any:
        self.stepfunction_backend.send_task_failure(
            self._get_param("taskToken"), error=self._get_param("error"), cause=self._get_param("cause")
        )
        return EmptyResult()

    StepFunctionResponse.send_task_failure = send_task_failure  # type: ignore[method-assign]


class _Backup:
    """The items a transaction names as they were before it (or that they were absent), and the
    length of each table's stream: what rolls it back."""

    _ABSENT = object()

    def __init__(self, tables: dict[str, Any], transact_items: list[dict[str, Any]]) -> None:
        import copy

        self.items: dict[tuple[str, Any, Any], tuple[Any, Any]] = {}
        self.streams: dict[str, tuple[Any, int]] = {}
        for item in transact_items:
            named = self._named(tables, item)
            if named is None:
                continue  # moto refuses it before it writes anything
            table, hash_value, range_value, op_type = named
            if op_type == "ConditionCheck":
                continue  # writes nothing
            current = self._current(table, hash_value, range_value)
            # A Put stores a new item and a Delete removes the old one, leaving it as it was; only an
            # Update changes the item in place, so only its item is copied.
            before = copy.deepcopy(current) if op_type == "Update" and current is not self._ABSENT else current
            self.items.setdefault((table.name, hash_value, range_value), (table, before))
            if table.stream_shard is not None:
                self.streams.setdefault(table.name, (table.stream_shard, len(table.stream_shard.items)))

    @staticmethod
    def _named(tables: dict[str, Any], item: dict[str, Any]) -> tuple[Any, Any, Any, str] | None:
        """The table, hash key, range key (or None) and operation an item of a transaction names."""
        from moto.dynamodb.models.dynamo_type import DynamoType

        op_type, op = next(iter(item.items()), ("", None))
        op = op if isinstance(op, dict) else {}
        table: Any = tables.get(str(op.get("TableName")))
        key: Any = (op.get("Item") or op.get("Key")) if table is not None else None
        if not isinstance(key, dict) or not isinstance(key.get(table.hash_key_attr), dict):
            return None
        sort = key.get(table.range_key_attr) if table.range_key_attr else None
        range_value = DynamoType(sort) if isinstance(sort, dict) else None
        return table, DynamoType(key[table.hash_key_attr]), range_value, str(op_type)

    def _current(self, table: Any, hash_value: Any, range_value: Any) -> Any:
        partition = table.items.get(hash_value)
        if partition is None:
            return self._ABSENT
        return partition if range_value is None else partition.get(range_value, self._ABSENT)

    def restore(self) -> None:
        for (_, hash_value, range_value), (table, before) in self.items.items():
            if range_value is None:
                table.items.pop(hash_value, None)
                if before is not self._ABSENT:
                    table.items[hash_value] = before
            elif before is not self._ABSENT:
                table.items[hash_value][range_value] = before
            elif hash_value in table.items:
                table.items[hash_value].pop(range_value, None)
                if not table.items[hash_value]:
                    del table.items[hash_value]
        for shard, length in self.streams.values():
            del shard.items[length:]


def _list_moto_modules_once() -> None:
    """moto's server lists its package's folders (a directory read and a stat per folder) to route
    every request; the list does not change while it runs."""
    from moto import backends

    if getattr(backends.list_of_moto_modules, "listed_once", False):
        return
    modules = tuple(backends.list_of_moto_modules())

    def list_of_moto_modules() -> tuple[str, ...]:
        return modules

    list_of_moto_modules.listed_once = True  # type: ignore[attr-defined]
    backends.list_of_moto_modules = list_of_moto_modules


def _list_a_handlers_actions_once() -> None:
    """moto lists the methods of a service's handler class (``inspect.getmembers``) on every request to
    find the action's; a class's methods do not change while it runs (a tenth of a GetItem's time)."""
    from moto.core import responses, utils

    if responses.method_names_from_class is utils.method_names_from_class:  # type: ignore[attr-defined]
        responses.method_names_from_class = functools.lru_cache(maxsize=None)(utils.method_names_from_class)  # type: ignore[attr-defined]


def _roll_back_only_the_items_a_transaction_names() -> None:
    """moto 5.2.5 backs up, for its rollback, every table a ``TransactWriteItems`` names, once per item
    (a deep copy of every item of the table, 100 times for a 100-item transaction), so a transaction
    costs as much as the table is big. A transaction writes only the items its keys name: a copy of
    those (``_Backup``) is the same rollback at the cost of what it touches. (The embedded AWS serves
    one request at a time, so nothing else writes meanwhile.)"""
    import copy

    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    backend = models.DynamoDBBackend
    if getattr(backend.transact_write_items, "backs_up_items", False):
        return
    real = backend.transact_write_items

    class _NoTableCopies:
        """``copy`` for moto's DynamoDB module while a transaction runs: no table is copied."""

        @staticmethod
        def deepcopy(value: Any) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value)

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        backup = _Backup(self.tables, transact_items)
        models.copy = _NoTableCopies()  # type: ignore[attr-defined,assignment]
        try:
            real(self, transact_items)
        except BaseException:
            backup.restore()
            raise
        finally:
            models.copy = copy  # type: ignore[attr-defined]

    transact_write_items.backs_up_items = True  # type: ignore[attr-defined]
    backend.transact_write_items = transact_write_items  # type: ignore[method-assign]


# DynamoDB operations whose results moto already holds in their wire form (attribute values, counts,
# keys): their JSON is the response body.
_WIRE_FORM_OPERATIONS = frozenset(
    {"Query", "Scan", "GetItem", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "TransactGetItems"}
)


def _binary(value: object) -> str:
    """A binary attribute's value (``B``, ``BS``), which moto holds as bytes, as the wire has it: base64."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    raise TypeError(f"{type(value).__name__} is not a DynamoDB attribute value's JSON")


def _serialize_dynamodb_items_as_json() -> None:
    """moto 5.2.5 serializes every response by walking botocore's shapes, which takes most of a
    Query's time (0.36 s of 0.44 s for 250 items). DynamoDB's item operations already hold their
    result in wire form, so the body is its JSON; the status and headers are moto's own."""
    from moto.core import responses

    result_class = responses.ActionResult
    if getattr(result_class.execute_result, "as_json", False):
        return
    serialize = result_class.execute_result

    def execute_result(self: Any, context: Any) -> Any:
        if (
            context.service_model.service_name == "dynamodb"
            and context.operation_model.name in _WIRE_FORM_OPERATIONS
            and isinstance(self.result, dict)
        ):
            status, headers, _ = serialize(result_class({}), context)
            return status, headers, json.dumps(self.result, default=_binary)
        return serialize(self, context)

    execute_result.as_json = True  # type: ignore[attr-defined]
    result_class.execute_result = execute_result  # type: ignore[method-assign]


def _check_an_items_size_once() -> None:
    """moto 5.2.5 builds an item an attribute at a time, and at each one sums the size of every
    attribute so far against DynamoDB's 400 KB: quadratic in the item's attributes (a tenth of a
    transaction's time). An item is built whole and its size summed once: the same items are refused
    with the same error, since sizes only add up (the sum is over the limit at the last attribute if
    it ever was). An update's attributes are still checked one by one by moto."""
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
    from moto.dynamodb.models.utilities import bytesize

    if getattr(Item.__init__, "sized_once", False):
        return

    def __init__(self: Any, hash_key: Any, range_key: Any, attrs: dict[str, Any]) -> None:  # noqa: N807
        self.hash_key, self.range_key = hash_key, range_key
        built = LimitedSizeDict.__new__(LimitedSizeDict)
        dict.__init__(built, ((key, DynamoType(value)) for key, value in attrs.items()))
        if sum(bytesize(key) + value.size() for key, value in built.items()) > _MOTO_ITEM_LIMIT:
            raise ItemSizeTooLarge
        self.attrs = built

    __init__.sized_once = True  # type: ignore[attr-defined]
    Item.__init__ = __init__  # type: ignore[method-assign]


_MOTO_ITEM_LIMIT = 405_000
"""moto's 400 KB, as it counts an item's bytes (DynamoDB takes a little over 409 KB, moto says)."""


def _refuse_what_aws_refuses() -> None:
    """Refuse, with AWS's own error, what is over one of ``LIMITS``: a transaction's items over 4 MB
    (DynamoDB counts the items' attribute names and values; their JSON is as large or larger), a
    PutEvents request's entries over 256 KB (EventBridge counts each entry's Source, DetailType,
    Detail and Resources, and 14 bytes for a Time), a SendTaskSuccess output over 256 KB."""
    from moto.dynamodb.exceptions import MockValidationException
    from moto.dynamodb.models import DynamoDBBackend
    from moto.events.exceptions import ValidationException as EventsValidationException
    from moto.events.models import EventsBackend
    from moto.stepfunctions.exceptions import ValidationException as StatesValidationException
    from moto.stepfunctions.responses import StepFunctionResponse

    transact = DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        written = sum(len(json.dumps(item).encode()) for item in transact_items)  # (at least what AWS counts)
        if written > LIMITS["TransactWriteItems"]:
            raise MockValidationException("Transaction request cannot be larger than 4 MB")
        return transact(self, transact_items)

    put_events = EventsBackend.put_events

    def put_events_within_limit(self: Any, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        size = sum(
            (14 if event.get("Time") else 0)
            + sum(len(str(event.get(k) or "").encode()) for k in ("Source", "DetailType", "Detail"))
            + sum(len(str(r).encode()) for r in event.get("Resources") or [])
            for event in events
        )
        if size > LIMITS["PutEvents"]:
            raise EventsValidationException("Total size of the entries in the request is over the limit.")
        return put_events(self, events)

    send_task_success = StepFunctionResponse.send_task_success

    def send_task_success_within_limit(self: Any) -> Any:
        output = self._get_param("output") or ""
        if len(output) > LIMITS["SendTaskSuccess"]:
            raise StatesValidationException(
                "1 validation error detected: Value at 'output' failed to satisfy constraint: Member must have "
                f"length less than or equal to {LIMITS['SendTaskSuccess']}"
            )
        return send_task_success(self)

    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    EventsBackend.put_events = put_events_within_limit  # type: ignore[method-assign]
    StepFunctionResponse.send_task_success = send_task_success_within_limit  # type: ignore[method-assign]


def _let_other_requests_in_while_a_long_poll_waits() -> None:
    """moto's ReceiveMessage with ``WaitTimeSeconds`` waits on the queue for a message inside the
    request: under ``REQUESTS``, every other call of every service (and the SendMessage that would end
    the wait) stood still until the wait ran out. It waits without the lock now, as SQS's long polling
    keeps no one else waiting; it reads the queue under the lock, as before."""
    from moto.sqs.models import Queue

    wait = Queue.wait_for_messages
    if getattr(wait, "lets_go", False):
        return

    def wait_for_messages(self: Any, timeout: int) -> None:
        with REQUESTS.let_go():
            wait(self, timeout)

    wait_for_messages.lets_go = True  # type: ignore[attr-defined]
    Queue.wait_for_messages = wait_for_messages  # type: ignore[method-assign]

"""The embedded AWS: moto's server on loopback, with the table and bucket created.

Nothing else in the code knows whether AWS is real: the store is built from the ``Settings`` this
yields, exactly as it is from the environment against AWS or LocalStack.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from resumable.config import Settings
from resumable.store.resources import BUCKET_LIFECYCLE_RULES, create_table_request, ttl_request


class _OneRequestAtATime:
    """Serialises requests to moto's backends.

    Real DynamoDB applies each conditional write and transaction atomically; moto's in-memory
    backends are not thread-safe (a transaction even rolls back by restoring a copy of the whole
    table), so concurrent requests could interleave in ways AWS never allows. One request at a time
    gives the embedded AWS the atomicity the store relies on.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with self.lock:
            return list(self.app(environ, start_response))


def _start_server() -> tuple[Any, str]:
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    app = _OneRequestAtATime(DomainDispatcherApplication(create_backend_app))

    class SerializedMotoServer(ThreadedMotoServer):
        def _server_entry(self) -> None:
            self._server = make_server(
                self._ip_address, self._port, app, threaded=True, request_handler=MotoRequestHandler
            )
            self._server_ready_event.set()
            self._server.serve_forever()

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    _keep_the_cause_of_task_failures()
    _roll_back_only_the_items_a_transaction_names()
    _list_moto_modules_once()
    _serialize_dynamodb_items_as_json()
    server = SerializedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    _IN_PROCESS.serve(endpoint, app)
    return server, endpoint


class _InProcess:
    """botocore's ``before-send`` for the clients of this process: a request to an embedded AWS
    running here is handed to its WSGI app directly, through the same one-request-at-a-time lock,
    instead of over a loopback socket. The app, and so every behaviour, is the same; what is saved is
    the HTTP on both sides (about half of each call's cost). Other processes (the tests' subprocesses,
    the ``resumable`` command) still reach the server over HTTP."""

    def __init__(self) -> None:
        self.apps: dict[str, _OneRequestAtATime] = {}
        self.registered = False

    def serve(self, endpoint: str, app: _OneRequestAtATime) -> None:
        self.apps[endpoint] = app
        if not self.registered:
            import boto3
            from botocore import handlers

            # Sessions made from now on get it from botocore's built-in handlers; boto3's default
            # session, if it was made already, is given it here (once: every handler of an event runs).
            handlers.BUILTIN_HANDLERS.append(("before-send", self))
            if boto3.DEFAULT_SESSION is not None:
                boto3.DEFAULT_SESSION.events.register("before-send", self)
            self.registered = True

    def forget(self, endpoint: str) -> None:
        self.apps.pop(endpoint, None)

    def __call__(self, request: Any, **_: Any) -> Any:
        endpoint, _, path = request.url.partition("://")[2].partition("/")
        app = self.apps.get(f"http://{endpoint}")
        if app is None:
            return None  # not an embedded AWS of this process: botocore sends it over HTTP
        from botocore.awsrequest import AWSResponse, HTTPHeaders
        from moto.core.botocore_stubber import MockRawResponse
        from werkzeug.test import EnvironBuilder, run_wsgi_app

        body = request.body
        if hasattr(body, "read"):
            body = body.read()
        headers = [
            (name, value.decode() if isinstance(value, bytes) else value)
            for name, value in request.headers.items()
            if name.lower() != "transfer-encoding"  # the body is whole here, as a server hands it on
        ]
        environ = EnvironBuilder(
            method=request.method,
            base_url=f"http://{endpoint}",
            path=f"/{path}",
            headers=headers,
            data=body or b"",
        ).get_environ()
        chunks, status, response_headers = run_wsgi_app(app, environ)
        headers_out = HTTPHeaders()
        for name, value in response_headers.items():
            headers_out[name] = value
        raw = MockRawResponse(b"".join(chunks))
        return AWSResponse(request.url, int(status.split(" ", 1)[0]), headers_out, raw)


_IN_PROCESS = _InProcess()


def create_resources(settings: Settings) -> None:
    """Create the table and bucket (for the embedded AWS, or an empty LocalStack)."""
    import boto3

    options: dict[str, Any] = {"region_name": settings.region, "endpoint_url": settings.endpoint_url}
    if settings.access_key_id:
        options |= {"aws_access_key_id": settings.access_key_id, "aws_secret_access_key": settings.secret_access_key}
    dynamodb = boto3.client("dynamodb", **options)
    dynamodb.create_table(**create_table_request(settings.table_name))
    dynamodb.update_time_to_live(**ttl_request(settings.table_name))
    s3 = boto3.client("s3", **options)
    if settings.region == "us-east-1":
        s3.create_bucket(Bucket=settings.bucket_name)
    else:
        s3.create_bucket(
            Bucket=settings.bucket_name,
            CreateBucketConfiguration={"LocationConstraint": settings.region},  # type: ignore[typeddict-item]
        )
    s3.put_bucket_lifecycle_configuration(
        Bucket=settings.bucket_name,
        LifecycleConfiguration={"Rules": BUCKET_LIFECYCLE_RULES},  # type: ignore[typeddict-item]
    )


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
            return status, headers, json.dumps(self.result)
        return serialize(self, context)

    execute_result.as_json = True  # type: ignore[attr-defined]
    result_class.execute_result = execute_result  # type: ignore[method-assign]


def _execute_state_machines(endpoint: str) -> None:
    """Make moto run state machines (not only record them), with its service integrations calling
    this server: its interpreter sends them to ``localhost:$MOTO_PORT``."""
    import urllib.request

    request = urllib.request.Request(
        f"{endpoint}/moto-api/config",
        data=json.dumps({"stepfunctions": {"execute_state_machine": True}}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10):
        pass
    os.environ["MOTO_PORT"] = endpoint.rsplit(":", 1)[1]


@contextmanager
def embedded_aws(
    table_name: str = "resumable", bucket_name: str = "resumable-snapshots", **overrides: Any
) -> Iterator[Settings]:
    """Start the embedded AWS on 127.0.0.1 (a free port), create the table and bucket, yield settings.

    Step Functions executes state machines against it (this sets ``MOTO_PORT`` while it runs)."""
    server, endpoint = _start_server()
    previous_port = os.environ.get("MOTO_PORT")
    settings = Settings(
        table_name=table_name,
        bucket_name=bucket_name,
        region="us-east-1",
        endpoint_url=endpoint,
        access_key_id="embedded",
        secret_access_key="embedded",
        **overrides,
    )
    try:
        _execute_state_machines(endpoint)
        create_resources(settings)
        yield settings
    finally:
        _IN_PROCESS.forget(endpoint)
        server.stop()
        if previous_port is None:
            os.environ.pop("MOTO_PORT", None)
        else:
            os.environ["MOTO_PORT"] = previous_port

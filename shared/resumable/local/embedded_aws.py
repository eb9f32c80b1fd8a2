"""The embedded AWS: moto's server on loopback, with the table and bucket created.

Nothing else in the code knows whether AWS is real: the store is built from the ``Settings`` this
yields, exactly as it is from the environment against AWS or LocalStack.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from resumable.config import Settings
from resumable.local import durable_callbacks, durable_workflows, moto_patches
from resumable.store.resources import BUCKET_LIFECYCLE_RULES, create_table_request, ttl_request

_log = logging.getLogger(__name__)


class _OneRequestAtATime:
    """Serialises requests to moto's backends.

    Real DynamoDB applies each conditional write and transaction atomically; moto's in-memory
    backends are not thread-safe (a transaction even rolls back by restoring a copy of the whole
    table), so concurrent requests could interleave in ways AWS never allows. One request at a time
    (``moto_patches.REQUESTS``, one lock for the process, whose backends every embedded AWS of it
    shares) gives the embedded AWS the atomicity the store relies on.
    """

    def __init__(self, app: Any) -> None:
        self.app = app  # moto's DomainDispatcherApplication: routes each request to a service's app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        if LAMBDA_INVOCATIONS and _INVOKE_PATH.match(environ.get("PATH_INFO", "")):
            return _invoke(environ, start_response)  # (not under the lock: the function calls this AWS too)
        if (answered := _callback(environ)) is not None:
            status, headers, body = answered
            start_response(f"{status} {'OK' if status < 400 else 'Error'}", list(headers.items()))
            return [body]
        with moto_patches.REQUESTS.held():
            return list(self.app(environ, start_response))

    def handle(self, environ: dict[str, Any]) -> tuple[int, dict[str, Any], bytes]:
        """What the moto handler the server routes ``environ`` to answers (status, headers, body), as
        the server's web framework calls it (``convert_to_flask_response``) but without it."""
        from botocore.exceptions import ClientError
        from werkzeug.exceptions import InternalServerError

        if (answered := _callback(environ)) is not None:
            return answered
        with moto_patches.REQUESTS.held():
            backend = self.app.get_application(environ)
            endpoint, _ = backend.url_map.bind_to_environ(environ).match()
            handler = backend.view_functions[endpoint].callback
            request = backend.request_class(environ)
            try:
                result = handler(request, request.raw_url, dict(request.headers))
            except ClientError as error:
                result = 400, {}, error.response["Error"]["Message"]
            except Exception:  # moto failed (e.g. an operation it lacks): a 500, as its server answers
                _log.exception("the embedded AWS failed to answer %s %s", environ["REQUEST_METHOD"], request.url)
                failed = InternalServerError()
                result = 500, dict(failed.get_headers(environ)), failed.get_body(environ)
        status, headers, body = result if len(result) == 3 else (200, {}, result)
        body = body.encode() if isinstance(body, str) else body
        headers = dict(headers or {})
        if not any(name.lower() == "content-length" for name in headers):  # (a HEAD's says its object's)
            headers["Content-Length"] = str(len(body))
        return int(str(status).split(" ", 1)[0]), headers, body


# Who answers lambda:Invoke sent to the embedded AWS over HTTP (by a function run in a process of its own:
# resumable.local.execution), innermost last: resumable.local.template's routing of template functions.
# It takes botocore's request parameters (``url_path``, ``body``, ``headers``) and answers as its
# before-call handler does, (a reply with its status, the parsed response).
LAMBDA_INVOCATIONS: list[Callable[..., tuple[Any, dict[str, Any]] | None]] = []
_INVOKE_PATH = re.compile(r"^/2015-03-31/functions/[^/]+/invocations$")


def _invoke(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """Lambda's Invoke, answered by the innermost of ``LAMBDA_INVOCATIONS`` in Lambda's wire format."""
    size = int(environ.get("CONTENT_LENGTH") or 0)
    params = {
        "url_path": environ["PATH_INFO"],
        "query_string": dict(parse_qsl(environ.get("QUERY_STRING", ""))),
        "body": environ["wsgi.input"].read(size) if size else b"",
        "headers": {"X-Amz-Invocation-Type": environ.get("HTTP_X_AMZ_INVOCATION_TYPE", "RequestResponse")},
    }
    if "HTTP_X_AMZ_DURABLE_EXECUTION_NAME" in environ:  # (a durable function's: resumable.local.durable_workflows)
        said = environ["HTTP_X_AMZ_DURABLE_EXECUTION_NAME"]  # (WSGI hands a header on as latin-1: as sent)
        params["headers"]["X-Amz-Durable-Execution-Name"] = said.encode("latin-1", "replace").decode("utf-8", "replace")
    answered = LAMBDA_INVOCATIONS[-1](params)
    status: int = answered[0].status_code if answered is not None else 404
    response: dict[str, Any] = answered[1] if answered is not None else {}
    if answered is None:  # (no routing in effect any more)
        response = {"Error": {"Code": "ResourceNotFoundException", "Message": "no such function"}}
    if "Error" in response:
        body = json.dumps({"Type": "User", "message": response["Error"]["Message"]}).encode()
        headers = [("x-amzn-errortype", response["Error"]["Code"])]
    else:
        payload = response.get("Payload")
        body = payload.read() if payload is not None else b""
        headers = [("X-Amz-Executed-Version", str(response.get("ExecutedVersion", "$LATEST")))]
        headers += [("X-Amz-Function-Error", response["FunctionError"])] if "FunctionError" in response else []
        headers += (
            [("X-Amz-Durable-Execution-Arn", response["DurableExecutionArn"])]
            if "DurableExecutionArn" in response
            else []
        )
    headers += [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    start_response(f"{status} {'OK' if status < 400 else 'Error'}", headers)
    return [body]


def _callback(environ: dict[str, Any]) -> tuple[int, dict[str, Any], bytes] | None:
    """A durable-callback operation's reply (resumable.local.durable_callbacks; not under the lock: the
    execution it completes runs on and calls this AWS too); None for any other request."""
    path = environ.get("PATH_INFO", "")
    if (described := durable_workflows.described(environ.get("REQUEST_METHOD", ""), path)) is not None:
        return described
    if not durable_callbacks.PATH.match(path):
        return None
    size = int(environ.get("CONTENT_LENGTH") or 0)
    return durable_callbacks.answer(path, environ["wsgi.input"].read(size) if size else b"")


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
    moto_patches.apply()
    server = SerializedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    _IN_PROCESS.serve(endpoint, app)
    return server, endpoint


class _InProcess:
    """botocore's ``before-send`` for the clients of this process: a request to an embedded AWS
    running here is handed to the moto handler its server would route it to, through the same
    one-request-at-a-time lock, instead of over a loopback socket. The handler sees the request its
    server would give it (the same URL, host and headers); what is saved is the HTTP on both sides and
    the web framework around the handler (together about two thirds of a GetItem's cost). Other
    processes (the tests' subprocesses, the ``resumable`` command) still reach the server over HTTP."""

    def __init__(self) -> None:
        self.apps: dict[str, _OneRequestAtATime] = {}
        self.registered = False

    def serve(self, endpoint: str, app: _OneRequestAtATime) -> None:
        self.apps[endpoint] = app
        if not self.registered:
            import boto3

            from resumable.aws import clients

            # Sessions made from now on get it from botocore's built-in handlers, resumable's too if it is
            # made already; boto3's default session, if made already, is given it here (once: every
            # handler of an event runs).
            clients.hook("before-send", self)
            if boto3.DEFAULT_SESSION is not None:
                boto3.DEFAULT_SESSION.events.register("before-send", self)
            self.registered = True

    def forget(self, endpoint: str) -> None:
        self.apps.pop(endpoint, None)

    def answering(self, url: str) -> _OneRequestAtATime | None:
        """The app of this process's embedded AWS that answers a request to ``url``, if one does."""
        return self.apps.get(f"http://{url.partition('://')[2].partition('/')[0]}")

    def __call__(self, request: Any, **_: Any) -> Any:
        endpoint, _, path = request.url.partition("://")[2].partition("/")
        app = self.answering(request.url)
        if app is None:
            return None  # not an embedded AWS of this process: botocore sends it over HTTP
        from botocore.awsrequest import AWSResponse, HTTPHeaders
        from moto.core.botocore_stubber import MockRawResponse

        status, headers, body = app.handle(_environ(request, endpoint, path))
        replied = HTTPHeaders()
        for name, value in headers.items():
            replied[name] = str(value)
        return AWSResponse(request.url, status, replied, MockRawResponse(body))


def _environ(request: Any, endpoint: str, path: str) -> dict[str, Any]:
    """The WSGI environment the server would make of botocore's ``request``: what werkzeug's
    ``EnvironBuilder`` builds of it, made directly (17 us against the builder's 64 us, of a GetItem's
    1 ms in-process); the builder itself for what the direct way does not cover
    (tests/unit/test_wsgi_environ.py holds the two equal)."""
    headers, body = _parts(request)
    return _made(request.method, endpoint, f"/{path}", headers, body)


def _parts(request: Any) -> tuple[list[tuple[str, Any]], bytes]:
    """The headers and the whole body of botocore's ``request``, as a server hands them on."""
    body = request.body
    if hasattr(body, "read"):
        body = body.read()
    body = (body.encode() if isinstance(body, str) else body) or b""
    headers = [
        (name, value.decode() if isinstance(value, bytes) else value)
        for name, value in request.headers.items()
        if name.lower() != "transfer-encoding"  # the body is whole here, as a server hands it on
    ]
    return headers, body


def _made(method: str, endpoint: str, target: str, headers: list[tuple[str, Any]], body: bytes) -> dict[str, Any]:
    """The environment of a request to ``target`` (its path and query), made directly where ``_direct``
    says it can be, else by the builder."""
    if not _direct(target, headers, body):
        return _built(method, endpoint, target, headers, body)
    from werkzeug.urls import iri_to_uri

    host, _, port = endpoint.partition(":")
    split = urlsplit(target)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote(iri_to_uri(split.path)).encode().decode("latin1"),
        "QUERY_STRING": split.query,
        "REQUEST_URI": target,
        "RAW_URI": target,
        "SERVER_NAME": host,
        "SERVER_PORT": port or "80",
        "HTTP_HOST": endpoint,
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    sent: dict[str, list[str]] = {}
    for name, value in headers:
        lowered = name.lower()
        if lowered == "content-type":
            environ["CONTENT_TYPE"] = value
        elif lowered != "content-length":  # (a body's is its length; without one there is none)
            sent.setdefault(f"HTTP_{name.upper().replace('-', '_')}", []).append(value)
    if body:
        environ["CONTENT_LENGTH"] = str(len(body))
    environ.update((key, ", ".join(values)) for key, values in sent.items())
    return environ


def _direct(target: str, headers: list[tuple[str, Any]], body: bytes) -> bool:
    """Whether ``_environ`` makes this request's environment itself: an ASCII target, headers that are
    text on one line (werkzeug refuses others), and no empty form (which the builder fills in)."""
    if not target.isascii():
        return False
    for name, value in headers:
        if not isinstance(value, str) or "\n" in value or "\r" in value:
            return False
        if not body and name.lower() == "content-type":
            mimetype = value.partition(";")[0].strip()
            if mimetype in ("multipart/form-data", "application/x-www-form-urlencoded"):
                return False
    return True


def _built(method: str, endpoint: str, target: str, headers: list[tuple[str, Any]], body: bytes) -> dict[str, Any]:
    """werkzeug's ``EnvironBuilder``'s environment for the request."""
    from werkzeug.test import EnvironBuilder

    builder = EnvironBuilder(method=method, base_url=f"http://{endpoint}", path=target, headers=headers, data=body)
    return builder.get_environ()


_IN_PROCESS = _InProcess()


def answered_here(url: str) -> bool:
    """Whether a request to ``url`` is answered by an embedded AWS of this process, in-process."""
    return _IN_PROCESS.answering(url) is not None


def create_resources(settings: Settings) -> Settings:
    """Create the table and buckets (for the embedded AWS, or an empty LocalStack), and the keys the
    template makes (the decision-link and audit digest keys in KMS, the cursor key in Secrets Manager, each of its own:
    moto keeps one backend per process); ``settings`` naming them."""
    import secrets
    import uuid

    import boto3

    options: dict[str, Any] = {"region_name": settings.region, "endpoint_url": settings.endpoint_url}
    if settings.access_key_id:
        options |= {"aws_access_key_id": settings.access_key_id, "aws_secret_access_key": settings.secret_access_key}
    dynamodb = boto3.client("dynamodb", **options)
    dynamodb.create_table(**create_table_request(settings.table_name))
    dynamodb.update_time_to_live(**ttl_request(settings.table_name))
    s3 = boto3.client("s3", **options)
    audit_bucket = f"{settings.bucket_name}-audit"
    for bucket in (settings.bucket_name, audit_bucket):
        if settings.region == "us-east-1":
            s3.create_bucket(Bucket=bucket)
        else:
            s3.create_bucket(
                Bucket=bucket,
                CreateBucketConfiguration={"LocationConstraint": settings.region},  # type: ignore[typeddict-item]
            )
    s3.put_bucket_lifecycle_configuration(
        Bucket=settings.bucket_name,
        LifecycleConfiguration={"Rules": BUCKET_LIFECYCLE_RULES},  # type: ignore[typeddict-item]
    )
    kms = boto3.client("kms", **options)
    link_key = kms.create_key(
        KeySpec="HMAC_256", KeyUsage="GENERATE_VERIFY_MAC", Description=f"{settings.table_name}: decision links"
    )["KeyMetadata"]["Arn"]
    digest_key = kms.create_key(
        KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY", Description=f"{settings.table_name}: audit trail digests"
    )["KeyMetadata"]["Arn"]
    s3.put_bucket_versioning(Bucket=audit_bucket, VersioningConfiguration={"Status": "Enabled"})
    cursor_key = boto3.client("secretsmanager", **options).create_secret(
        Name=f"{settings.table_name}-cursor-key-{uuid.uuid4().hex[:8]}", SecretString=secrets.token_hex(32)
    )["ARN"]
    return settings.model_copy(
        update={
            "decision_links_key": link_key,
            "cursor_secret_arn": cursor_key,
            "audit_bucket": audit_bucket,
            "audit_digest_key": digest_key,
        }
    )


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
        yield create_resources(settings)
    finally:
        _IN_PROCESS.forget(endpoint)
        server.stop()
        if previous_port is None:
            os.environ.pop("MOTO_PORT", None)
        else:
            os.environ["MOTO_PORT"] = previous_port

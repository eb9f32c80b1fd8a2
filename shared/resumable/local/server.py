"""The local API: template.yaml's HTTP API routes on 127.0.0.1, with no Docker and no AWS account.

Each request becomes an API Gateway HTTP API (payload v2) event and goes to the handler of the
function that template.yaml routes it to, imported from ``functions/<dir>/app.py`` in this process,
against the embedded AWS. A route added to the template works here without code changes.
Authorization is API Gateway's (``resumable.local.authorizers``): a SigV4 signature is checked against
the local credentials (``RESUMABLE_LOCAL_CREDENTIALS`` names their file) and makes its key's principal
the caller; an unsigned request is ``RESUMABLE_LOCAL_PRINCIPAL`` (or its ``x-resumable-principal``
header); with a JWT verifier, a bearer token from its issuer is required instead. A route whose
template event says ``Authorizer: NONE`` is served to anyone.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from resumable.local.authorizers import (
    JwtVerifier,
    LocalCredentials,
    RefusedError,
    iam_identity,
    jwt_identity,
    verify_sigv4,
)
from resumable.local.functions import LambdaContext, api_event, function_arn, load_handler, load_template, routes

DEFAULT_PRINCIPAL = "arn:aws:iam::000000000000:user/local"
PRINCIPAL_HEADER = "x-resumable-principal"

logger = logging.getLogger(__name__)
# One line per request ("GET /inbox -> 200") at debug, a server error's at warning, plain on stderr:
# make run's log stays quiet while a page polls (LOG_LEVEL=DEBUG shows every request).
requests_log = logging.getLogger("resumable.local.requests")
requests_log.propagate = False
requests_log.addHandler(logging.StreamHandler())
requests_log.setLevel(logging.INFO)


# API Gateway's payload limit; a larger body is refused (413) without being used.
MAX_BODY_BYTES = 10 * 1024 * 1024
# How much of a refused body is read and dropped so that its client sees the reply; beyond it, the
# connection is closed.
_DROPPED_AT_MOST = 64 * 1024 * 1024


def _described(status: int) -> str:
    """What HTTP says a status means ("URI is too long"), or nothing for one it does not name."""
    try:
        return HTTPStatus(status).description
    except ValueError:
        return ""


class _BodyError(Exception):
    """A request body refused: its status, code and what was wrong ("nothing was done" is added)."""

    def __init__(self, status: int, code: str, what: str) -> None:
        super().__init__(what)
        self.status, self.code, self.message = status, code, f"{what}; nothing was done"


def make_server(
    host: str = "127.0.0.1",
    port: int = 3000,
    principal: str | None = None,
    *,
    credentials: LocalCredentials | None = None,
    jwt: JwtVerifier | None = None,
    refuse_unsigned: bool = False,
) -> LocalServer:
    """An HTTP server for every route of template.yaml (the caller starts and stops it).

    ``credentials``: the keys whose signatures are good (default: the file ``RESUMABLE_LOCAL_CREDENTIALS``
    names, else none); ``refuse_unsigned``: answer an unsigned request 403, as AWS does; ``jwt``:
    authorize by sign-in token instead of by signature (AuthMode JWT)."""
    table = routes(load_template())
    handlers = {route.function: load_handler(route) for route in table}
    default_principal = principal or os.environ.get("RESUMABLE_LOCAL_PRINCIPAL", DEFAULT_PRINCIPAL)
    if credentials is None:
        named = os.environ.get("RESUMABLE_LOCAL_CREDENTIALS")
        credentials = LocalCredentials.read(Path(named)) if named else LocalCredentials()
    known: LocalCredentials = credentials

    def authorize(method: str, target: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
        """``requestContext.authorizer`` for this request, or ``RefusedError`` as API Gateway would."""
        if jwt is not None:
            return jwt_identity(jwt.claims(headers.get("authorization")))
        if "authorization" in headers or "x-amz-date" in headers:
            key = verify_sigv4(known, method, target, headers, body)
            return iam_identity(key.principal, key.access_key_id)
        if refuse_unsigned:
            raise RefusedError(403, "Forbidden")
        return iam_identity(headers.get(PRINCIPAL_HEADER) or default_principal)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            # A request line that could not be parsed leaves command and path unset.
            command, path = getattr(self, "command", None) or "-", getattr(self, "path", None) or "-"
            status = str(args[1]) if format == '"%s" %s %s' and len(args) > 1 else None  # (log_request's)
            level = logging.DEBUG if status is not None and status.isdigit() and int(status) < 500 else logging.WARNING
            requests_log.log(level, "%s %s -> %s", command, path[:200], status or format % args)

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            """Python's own refusals (a malformed request line, headers too large) in the API's shape."""
            self.close_connection = True
            self.request_version = "HTTP/1.1"  # an unparsed request line left 0.9, which gets no headers
            said = message or _described(code)
            body = {"code": "bad_request", "message": f"{said or 'the request is malformed'}; nothing was done"}
            raw = json.dumps(body).encode()
            self.send_response(code, message)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.send_header("Connection", "close")
            self.end_headers()
            if getattr(self, "command", None) != "HEAD" and code >= 200 and code not in (204, 304):
                self.wfile.write(raw)

        def handle(self) -> None:
            """A client that goes away (or stalls past the timeout) mid-request is no error of ours:
            nothing is left to answer, so the connection is closed without a traceback."""
            try:
                super().handle()
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                self.close_connection = True

        def __getattr__(self, name: str) -> Any:
            """Every method is served (``do_TRACE``, ``do_HEAD``, ...): a route answers, or 404/405."""
            if name.startswith("do_"):
                return self._serve
            raise AttributeError(name)

        def _serve(self) -> None:
            url = urlsplit(self.path)
            self.connection.settimeout(30)  # a client that sends less than it declared is not waited on forever
            try:
                body = self._body()
            except _BodyError as refused:
                self.close_connection = True
                self._reply(refused.status, {"code": refused.code, "message": refused.message}, {"Connection": "close"})
                return
            except TimeoutError:
                self.close_connection = True
                message = "the body ended before the bytes its Content-Length or chunks declared; nothing was done"
                self._reply(400, {"code": "bad_request", "message": message}, {"Connection": "close"})
                return
            path = unquote(url.path)
            at_path = [r for r in table if r.pattern.match(path)]
            route = next((r for r in at_path if r.method == self.command), None)
            if route is None and at_path:
                allowed = ", ".join(sorted({r.method for r in at_path}))
                message = f"{url.path} does not take {self.command}; it takes {allowed}; nothing was done"
                self._reply(405, {"code": "method_not_allowed", "message": message}, {"Allow": allowed})
                return
            if route is None:
                self._reply(404, {"code": "not_found", "message": f"no route {self.command} {url.path}"}, {})
                return
            authorizer = None
            if route.authorized:
                try:
                    authorizer = authorize(self.command, self.path, _headers(self.headers), body)
                except RefusedError as refusal:
                    self._reply(refusal.status, {"message": refusal.message}, {})
                    return
            event = api_event(route, self.command, url.path, url.query, dict(self.headers), body, authorizer)
            context = LambdaContext(
                route.function, event["requestContext"]["requestId"], invoked_function_arn=function_arn(route.function)
            )
            try:
                reply = handlers[route.function](event, context)
            except Exception as error:
                # Lambda would log the error and API Gateway answer 500; say so in the API's error shape.
                logger.exception("%s %s: the handler of %s raised", self.command, url.path, route.function)
                message = (
                    f"the handler of {route.function} raised {type(error).__name__}: {error}. What was written "
                    "before it stands; the turn is left resumable: retry the request"
                )
                self._reply(500, {"code": "internal", "message": message}, {})
                return
            payload = reply.get("body") or ""
            raw = base64.b64decode(payload) if reply.get("isBase64Encoded") else payload.encode()
            self._send(int(reply.get("statusCode", 200)), raw, reply.get("headers") or {})

        def _body(self) -> bytes:
            """The request's body, whole: by its Content-Length, or by its chunks (as API Gateway takes
            either). Over the API's limit, ``_BodyError`` 413 once what was sent is read and dropped (a
            client that writes all before it reads sees the reply)."""
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                return self._chunks()
            declared = self.headers.get("Content-Length") or "0"
            if not declared.isdigit():
                raise _BodyError(400, "bad_request", f"Content-Length {declared[:40]!r} is not a byte count")
            if int(declared) > MAX_BODY_BYTES:
                self._drop(int(declared))
                too_large = f"the body is {declared} bytes, over the API's {MAX_BODY_BYTES:,}"
                raise _BodyError(413, "too_large", too_large)
            body = self.rfile.read(int(declared))
            if len(body) < int(declared):
                raise TimeoutError
            return body

        def _chunks(self) -> bytes:
            body = b""
            while True:
                line = self.rfile.readline(1024)
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                    if size < 0:
                        raise ValueError(size)
                except ValueError:
                    malformed = f"a chunk's size line {line[:40]!r} is malformed"
                    raise _BodyError(400, "bad_request", malformed) from None
                if size == 0:
                    while self.rfile.readline(8192).strip():  # the trailer, up to its blank line
                        pass
                    return body
                if len(body) + size > MAX_BODY_BYTES:
                    too_large = f"the chunked body is over the API's {MAX_BODY_BYTES:,} bytes"
                    raise _BodyError(413, "too_large", too_large)
                chunk = self.rfile.read(size)
                if len(chunk) < size or self.rfile.read(2) != b"\r\n":
                    raise TimeoutError
                body += chunk

        def _drop(self, declared: int) -> None:
            """Read and drop up to ``_DROPPED_AT_MOST`` bytes of a body that is refused unused."""
            left = min(declared, _DROPPED_AT_MOST)
            self.connection.settimeout(2)  # a client that stops sending is not waited on
            with contextlib.suppress(OSError):
                while left > 0 and (read := self.rfile.read(min(left, 1 << 20))):
                    left -= len(read)

        def _reply(self, status: int, body: Any, headers: dict[str, str]) -> None:
            self._send(status, json.dumps(body).encode(), {"Content-Type": "application/json", **headers})

        def _send(self, status: int, raw: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            if self.command != "HEAD":  # a reply to HEAD has headers only
                self.wfile.write(raw)

    return LocalServer((host, port), Handler)


def _headers(message: Any) -> dict[str, str]:
    """A request's headers by their lower-case names; a repeated header's values joined by commas, as
    SigV4 canonicalizes them."""
    found: dict[str, str] = {}
    for raw_name, value in message.items():
        name = raw_name.lower()
        found[name] = f"{found[name]},{value}" if name in found else value
    return found


class LocalServer(ThreadingHTTPServer):
    """The local API's server: a thread per connection, and a listen backlog sized for many clients
    connecting at once (Python's default of 5 resets the sixth)."""

    request_queue_size = 1024
    daemon_threads = True

    def serve_forever(self, poll_interval: float = 0.05) -> None:
        """Serve until ``shutdown``, which is seen at the next poll: a short one (Python's default is
        half a second) ends the server at once."""
        super().serve_forever(poll_interval)

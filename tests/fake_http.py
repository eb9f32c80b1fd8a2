"""A scripted HTTP server on 127.0.0.1 for the model providers' tests: it records every request it receives
and answers each with the next scripted reply, written in the real service's wire format by the test.

Real sockets and a real HTTP exchange, so the provider's client (the openai SDK, botocore) runs all of its
own code: request building, status handling, header parsing. A request with no reply left is answered
418 with a message that says so, an error no provider retries, so a test that sends one more request than
it scripted fails at once and says why.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a status, a body (a dict or list is sent as JSON, a str as it is) and headers."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Received:
    """One request as the server received it: headers with lower-case names, the body parsed as JSON."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    """``with FakeServer() as server``: serving on ``server.url`` until the block ends."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._http.daemon_threads = True
        # Its shutdown is seen at the next poll: a short one keeps each test's teardown short.
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.02,), name="fake-http", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def reply(self, *replies: Reply) -> None:
        """Answer the next requests with ``replies``, in order."""
        self.replies.extend(replies)

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()

    def _answer(self, received: Received) -> Reply:
        with self._lock:
            self.received.append(received)
            if self.replies:
                return self.replies.popleft()
        unscripted = f"the test scripted no reply for request {len(self.received)} ({received.method} {received.path})"
        return Reply(418, {"error": {"message": unscripted, "type": "test_error", "param": None, "code": None}})


def _handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {name.lower(): value for name, value in self.headers.items()}
            reply = server._answer(Received("POST", self.path, headers, json.loads(raw) if raw else None))
            body = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
            data = body.encode()
            self.send_response(reply.status)
            for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads ``server.received`` instead."""

    return Handler

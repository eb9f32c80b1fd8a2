"""tests/mcp_server.py, reached over stdio (the client starts it) or over streamable HTTP (served by a
process of its own on 127.0.0.1), and whether a server process is still alive."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumable.runtime.mcp import MCPClient
from tests.factories import LEDGER_ENV
from tests.patience import HANG_SECONDS

SERVER = Path(__file__).with_name("mcp_server.py")
PIDS_ENV = "RESUMABLE_TEST_MCP_PIDS"
CALLER_HEADER = "x-caller"
LEDGER_HEADER = "x-ledger"


def stdio_records(ledger: Path, pids: Path | None = None, **options: Any) -> MCPClient:
    """A client that starts the records server over stdio: its ``delete_record`` writes to ``ledger``,
    and it writes its process id to ``pids``."""
    env = {LEDGER_ENV: str(ledger)} | ({PIDS_ENV: str(pids)} if pids is not None else {})
    return MCPClient.stdio(sys.executable, [str(SERVER)], env=env, **options)


@contextmanager
def serving_records(ledger: Path | None = None) -> Iterator[str]:
    """The records server over streamable HTTP on a port the system picks; yields its URL once it has
    answered a request, and stops it afterwards. Its ``delete_record`` writes to ``ledger``, or, with
    none, to the ledger each request names (``LEDGER_HEADER``).

    The test binds the listening socket and hands it to the server process, so the port is known and
    taken before the server starts (no port to guess or race for), and the first request waits in the
    socket's backlog until the server accepts it: no sleeping.
    """
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http-fd", str(listening.fileno())],
        pass_fds=[listening.fileno()],
        env={**os.environ, **({LEDGER_ENV: str(ledger)} if ledger is not None else {})},
    )
    listening.close()
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        _answers(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=HANG_SECONDS)


def _answers(url: str, process: subprocess.Popen[bytes]) -> None:
    """Return once the server at ``url`` answers an HTTP request (any status)."""
    try:
        urllib.request.urlopen(url, timeout=HANG_SECONDS).close()
    except urllib.error.HTTPError:
        return  # a plain GET is not an MCP request: any answer says the server is serving
    except OSError as error:
        raise AssertionError(
            f"the MCP server never answered at {url} (exit status {process.poll()}): {error}"
        ) from error


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a process its parent has reaped is gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@dataclass(frozen=True)
class RecordsServer:
    """How to reach the records server over one transport (``connect``'s keywords are the client's
    options), and the stdio server processes its clients started (each writes its id to ``pids``)."""

    transport: str
    connect: Callable[..., MCPClient]
    pids: Path

    def running(self) -> list[int]:
        """The stdio server processes still running (an HTTP server is the test's own, never listed)."""
        listed = self.pids.read_text().split() if self.pids.exists() else []
        return [pid for pid in map(int, listed) if alive(pid)]


@contextmanager
def records_server(transport: str, ledger: Path, pids: Path, url: str) -> Iterator[RecordsServer]:
    """The records server over ``transport``, its ``delete_record`` writing to ``ledger``: over ``stdio``
    a server each client starts, over ``http`` the one serving at ``url`` (``serving_records``)."""
    if transport == "stdio":
        yield RecordsServer(transport, lambda **options: stdio_records(ledger, pids, **options), pids)
        return
    headers = {CALLER_HEADER: "alice", LEDGER_HEADER: str(ledger)}
    yield RecordsServer(transport, lambda **options: MCPClient.http(url, headers=headers, **options), pids)


def mcp_threads() -> list[str]:
    """The threads of MCP clients still open in this process."""
    return [t.name for t in threading.enumerate() if t.name.startswith("mcp-client")]

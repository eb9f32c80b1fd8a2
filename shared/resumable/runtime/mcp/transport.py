"""How an MCPClient reaches its server and holds its session.

The server is reached over stdio (``Stdio``: a command the client starts) or streamable HTTP (``Http``:
a URL). The SDK is asynchronous, so a ``Connection`` holds the session in an event loop of its own, on a
background thread: one task opens it and holds it open until the connection closes (the SDK's scopes
must be entered and left in one task), and each call waits there for its answer, within ``timeout``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import shlex
import threading
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Self, TypeVar
from urllib.parse import urlsplit, urlunsplit

from resumable.exceptions import MCPServerError
from resumable.runtime.mcp.failures import call_failure, reason

if TYPE_CHECKING:
    from mcp import Client, StdioServerParameters
    from mcp.client import Transport

logger = logging.getLogger(__name__)

T = TypeVar("T")

# How long the HTTP transport waits for the next bytes of a response stream (the SDK's own default);
# a call's own limit is the client's ``timeout``.
_STREAM_READ_SECONDS = 300.0


@dataclass(frozen=True)
class Stdio:
    command: str
    args: tuple[str, ...]
    env: Mapping[str, str] | None = field(repr=False)
    cwd: str | None

    def __str__(self) -> str:
        # The command line only: the environment may carry credentials.
        return f"stdio:{shlex.join([self.command, *self.args])}"

    async def open(self, stack: AsyncExitStack, connect_timeout: float) -> StdioServerParameters:
        from mcp import StdioServerParameters

        env = dict(self.env) if self.env is not None else None
        return StdioServerParameters(command=self.command, args=list(self.args), env=env, cwd=self.cwd)


@dataclass(frozen=True)
class Http:
    url: str
    headers: Mapping[str, str] = field(repr=False)

    def __str__(self) -> str:
        # Without userinfo or query: either may carry a credential (headers are never shown).
        parts = urlsplit(self.url)
        return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))

    async def open(self, stack: AsyncExitStack, connect_timeout: float) -> Transport:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        timeout = httpx2.Timeout(connect_timeout, read=_STREAM_READ_SECONDS)
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=dict(self.headers), timeout=timeout))
        return streamable_http_client(self.url, http_client=http)


class Connection:
    """A session with one MCP server, held in an event loop of its own on a background thread; used as a
    context manager (or ``start()`` and ``close()``). ``timeout`` bounds each call (seconds);
    ``connect_timeout`` bounds starting the server (stdio) or reaching it (HTTP), and the handshake."""

    def __init__(self, server: Stdio | Http, *, timeout: float, connect_timeout: float) -> None:
        self.server = server
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._held: concurrent.futures.Future[None] | None = None
        self._closing = asyncio.Event()
        self._client: Client | None = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        """Started, not closed, and the session has not ended."""
        held = self._held
        return held is not None and not held.done()

    def start(self) -> None:
        """Start the server (stdio) or reach it (HTTP) and open the session. Raises ``MCPServerError``,
        leaving nothing running, when that fails or takes longer than ``connect_timeout``."""
        try:
            import mcp  # noqa: F401
        except ImportError as missing:
            raise ModuleNotFoundError(
                f"{self!r} needs the MCP SDK, which is not installed: install resumable[mcp] (pip install "
                "'resumable[mcp]'); nothing was started"
            ) from missing
        with self._lock:
            if self._loop is not None:
                raise RuntimeError(f"{self!r} is already started: close it before starting it again")
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name=f"mcp-client {self.server}", daemon=True)
            thread.start()
            connected: concurrent.futures.Future[None] = concurrent.futures.Future()
            self._closing = asyncio.Event()
            held = asyncio.run_coroutine_threadsafe(self._hold(connected), loop)
            self._loop, self._thread, self._held = loop, thread, held
        concurrent.futures.wait([connected, held], return_when=concurrent.futures.FIRST_COMPLETED)
        if connected.done():
            logger.info("mcp_server=<%s> | connected", self.server)
            return
        error = held.exception()
        self._stop()
        if isinstance(error, TimeoutError):
            raise MCPServerError(
                f"the MCP server {self.server} did not connect within {self.connect_timeout:g} s: nothing was "
                "called; check that it starts (stdio) or is reachable (HTTP), or raise connect_timeout"
            )
        raise MCPServerError(
            f"the MCP server {self.server} could not be connected ({reason(error) if error else 'no reason given'}): "
            "nothing was called; check that it starts (stdio) or is reachable (HTTP)"
        ) from error

    async def _hold(self, connected: concurrent.futures.Future[None]) -> None:
        """Connect, then hold the session open until ``close`` (in this one task, as the SDK's scopes
        require). Connecting may take ``connect_timeout``, closing ``timeout``; the open session has
        no deadline."""
        import anyio
        from mcp import Client

        with anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout) as deadline:
            async with AsyncExitStack() as stack:
                server = await self.server.open(stack, self.connect_timeout)
                self._client = await stack.enter_async_context(Client(server))
                deadline.deadline = math.inf
                connected.set_result(None)
                try:
                    await self._closing.wait()
                finally:
                    self._client = None
                    deadline.deadline = anyio.current_time() + self.timeout
        if deadline.cancelled_caught and not connected.done():
            raise TimeoutError(f"not connected within {self.connect_timeout:g} s")
        if deadline.cancelled_caught:
            logger.warning("mcp_server=<%s> | closing took longer than %g s: cut short", self.server, self.timeout)

    def close(self) -> None:
        """End the session and stop the server (stdio). A call still waiting for its answer ends, its
        outcome unknown. Closing again does nothing."""
        held = self._held
        if held is None:
            return
        loop = self._loop
        assert loop is not None
        loop.call_soon_threadsafe(self._closing.set)
        concurrent.futures.wait([held])
        error = None if held.cancelled() else held.exception()
        if error is not None:
            logger.warning("mcp_server=<%s> | the session had ended before closing: %s", self.server, reason(error))
        self._stop()
        logger.info("mcp_server=<%s> | closed", self.server)

    def _stop(self) -> None:
        """Cancel what is still running in the session's loop, then stop the loop and its thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = self._held = None
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(_cancel_the_rest(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

    def _run(self, call: Callable[[], Awaitable[T]], doing: str, unanswered: str) -> T:
        """Run ``call`` in the session's loop within ``timeout`` and wait for its answer. Raises
        ``MCPServerError`` without one; ``unanswered`` says what that means for ``doing``."""
        with self._lock:
            loop, held = self._loop, self._held
            if loop is None or held is None:
                raise MCPServerError(
                    f"{self!r} is not connected, so {doing} did not happen: use it as a context manager "
                    "(`with MCPClient.stdio(...) as client:`) or call start() first"
                )
            if held.done():
                error = None if held.cancelled() else held.exception()
                raise MCPServerError(
                    f"the session with the MCP server {self.server} has ended "
                    f"({reason(error) if error else 'closed'}), so {doing} did not happen: close this client "
                    "and connect a new one"
                )
            future = asyncio.run_coroutine_threadsafe(self._bounded(call), loop)
        try:
            return future.result()
        except Exception as error:
            raise call_failure(error, self, doing, unanswered) from error

    async def _bounded(self, call: Callable[[], Awaitable[T]]) -> T:
        import anyio

        with anyio.fail_after(self.timeout):
            return await call()

    def _session(self) -> Client:
        if self._client is None:
            raise RuntimeError(f"the session with the MCP server {self.server} is not open")
        return self._client


async def _cancel_the_rest() -> None:
    """Cancel every other task of the loop (calls still waiting when the client closes) and wait for them."""
    others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)

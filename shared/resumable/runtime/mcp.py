"""Tools served by a Model Context Protocol server, given to an agent like any tool.

``MCPClient`` is a synchronous client of one MCP server, over stdio (a command it starts) or
streamable HTTP (a URL), built on the official ``mcp`` SDK: the optional extra ``resumable[mcp]``,
imported only when a client starts. The SDK is asynchronous, so the client holds its session in an
event loop of its own, on a background thread, and each call waits there for its answer.

``tools()`` lists the server's tools as ``Tool`` objects. An approval policy guards them by name as
it guards any tool, and an approved call runs once, through the action journal, like any other. In
the service, a factory hands its client to ``AgentContext.enter_context``: it is closed when the run
ends, and the next request connects afresh, as it builds its agents afresh.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import math
import re
import shlex
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from resumable.exceptions import MCPOutcomeUnknownError, MCPServerError
from resumable.runtime.tools import Tool, ToolContext, tool_result

if TYPE_CHECKING:
    from mcp import Client, StdioServerParameters
    from mcp.client import Transport
    from mcp_types import CallToolResult, ContentBlock
    from mcp_types import Tool as ListedTool

__all__ = ["MCPClient", "MCPTool"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

# How long the HTTP transport waits for the next bytes of a response stream (the SDK's own default);
# a call's own limit is the client's ``timeout``.
_STREAM_READ_SECONDS = 300.0


@dataclass(frozen=True)
class _Stdio:
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
class _Http:
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


def _reason(error: BaseException) -> str:
    """What went wrong, in a line: the leaves of an exception group, each as ``Type: message``."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(_reason(leaf) for leaf in error.exceptions))
    from mcp import MCPError

    if isinstance(error, MCPError):
        return f"{error.message} (MCP error {error.code})"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class MCPClient:
    """A synchronous client of one MCP server. Make one with ``MCPClient.stdio`` or ``MCPClient.http``;
    use it as a context manager (or ``start()`` and ``close()``); give ``tools()`` to an agent.

    ``timeout`` bounds each call (seconds); ``connect_timeout`` bounds starting the server (stdio) or
    reaching it (HTTP), and the protocol's handshake.
    """

    def __init__(self, server: _Stdio | _Http, *, timeout: float = 30.0, connect_timeout: float = 30.0) -> None:
        if not timeout > 0 or not connect_timeout > 0:
            raise ValueError(f"MCPClient timeouts must be positive seconds, got {timeout=} and {connect_timeout=}")
        self.server = server
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._held: concurrent.futures.Future[None] | None = None
        self._closing = asyncio.Event()
        self._client: Client | None = None

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 30.0,
    ) -> MCPClient:
        """A client of the server that ``command args...`` starts, spoken to over its stdin and stdout.

        The server gets ``env`` over a few variables of this process's (``PATH``, ``HOME``, ...), not
        the whole environment: pass what it needs, credentials included (the command line is shown in
        logs and errors, ``env`` never is). It is stopped when the client closes.
        """
        if isinstance(args, str):
            raise ValueError(f"MCPClient.stdio takes its arguments as a list of strings, got the string {args!r}")
        return cls(
            _Stdio(command, tuple(args), env, str(cwd) if cwd is not None else None),
            timeout=timeout,
            connect_timeout=connect_timeout,
        )

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 30.0,
    ) -> MCPClient:
        """A client of the server at ``url`` (streamable HTTP), sending ``headers`` with every request
        (an ``Authorization`` header, say: headers are never logged)."""
        if urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"MCPClient.http needs an http:// or https:// URL, got {url!r}")
        return cls(_Http(url, dict(headers or {})), timeout=timeout, connect_timeout=connect_timeout)

    def __repr__(self) -> str:
        return f"MCPClient({self.server})"

    # -- the session's lifetime ----------------------------------------------------------------------

    def __enter__(self) -> MCPClient:
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
            f"the MCP server {self.server} could not be connected ({_reason(error) if error else 'no reason given'}): "
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
            logger.warning("mcp_server=<%s> | the session had ended before closing: %s", self.server, _reason(error))
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
                    f"({_reason(error) if error else 'closed'}), so {doing} did not happen: close this client "
                    "and connect a new one"
                )
            future = asyncio.run_coroutine_threadsafe(self._bounded(call), loop)
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED

        try:
            return future.result()
        except concurrent.futures.CancelledError as error:
            raise MCPOutcomeUnknownError(f"{self!r} was closed while waiting for {doing}: {unanswered}") from error
        except TimeoutError as error:
            raise MCPOutcomeUnknownError(
                f"the MCP server {self.server} did not answer {doing} within {self.timeout:g} s: {unanswered}"
            ) from error
        except MCPError as error:
            if error.code == CONNECTION_CLOSED:
                raise MCPOutcomeUnknownError(
                    f"the connection to the MCP server {self.server} closed before it answered {doing}: {unanswered}"
                ) from error
            raise MCPServerError(
                f"the MCP server {self.server} answered {doing} with an error: {_reason(error)}"
            ) from error
        except Exception as error:
            raise MCPOutcomeUnknownError(
                f"{doing} on the MCP server {self.server} failed ({_reason(error)}): {unanswered}"
            ) from error

    async def _bounded(self, call: Callable[[], Awaitable[T]]) -> T:
        import anyio

        with anyio.fail_after(self.timeout):
            return await call()

    def _session(self) -> Client:
        if self._client is None:
            raise RuntimeError(f"the session with the MCP server {self.server} is not open")
        return self._client

    # -- what the agent uses ---------------------------------------------------------------------------

    def tools(self, *, prefix: str = "", approval: bool = False) -> list[MCPTool]:
        """The server's tools as ``Tool`` objects, each named ``prefix`` + its name on the server (a
        prefix keeps two servers' tools, or a server's and yours, apart); ``approval=True`` makes every
        one ask a person before each call, as ``@tool(approval=True)`` does."""
        listed = self._run(self._list_tools, "listing its tools", "nothing was listed")
        return [MCPTool(self, one, prefix=prefix, approval=approval) for one in listed]

    async def _list_tools(self) -> list[ListedTool]:
        listed: list[ListedTool] = []
        cursor: str | None = None
        while True:
            page = await self._session().list_tools(cursor=cursor)
            listed += page.tools
            cursor = page.next_cursor
            if cursor is None:
                return listed

    def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call the server's tool ``name``; its result as the server gave it (``isError`` included).
        Raises ``MCPServerError`` when no answer comes: the message says whether the tool did not run
        or may have (a timeout, a connection lost during the call)."""

        async def call() -> CallToolResult:
            return await self._session().call_tool(name, arguments)

        return self._run(call, f"the call of '{name}'", "whether it ran is unknown; check before calling it again")


async def _cancel_the_rest() -> None:
    """Cancel every other task of the loop (calls still waiting when the client closes) and wait for them."""
    others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)


# What Bedrock and OpenAI take as a tool's name; MCP also allows "." and "/" (and 128 characters).
_NOT_IN_A_MODEL_NAME = re.compile(r"[^A-Za-z0-9_-]")


class MCPTool(Tool):
    """One tool of an MCP server, called through its client: name, description and input schema as
    the server lists them (the name after the client's ``prefix``, with what a model's tool name
    cannot hold, such as ``.`` and ``/``, as ``_``, and at most 64 characters; the server is called
    by its own name)."""

    def __init__(self, client: MCPClient, listed: ListedTool, *, prefix: str = "", approval: bool = False) -> None:
        self.client = client
        self.server_name = listed.name
        self.name = _NOT_IN_A_MODEL_NAME.sub("_", prefix + listed.name)[:64]
        self.description = listed.description or listed.title or listed.name
        self.input_schema = dict(listed.input_schema)
        self.approval = approval

    def invoke(self, tool_input: Any, context: ToolContext) -> dict[str, Any]:
        if not isinstance(tool_input, dict):
            return tool_result(
                context.tool_use_id, f"The input of '{self.name}' must be a JSON object; it did not run", "error"
            )
        try:
            result = self.client.call_tool(self.server_name, tool_input)
        except MCPOutcomeUnknownError:
            # Raised on: an approved call is recorded in doubt by the journal; any other call's
            # result tells the model (resumable.runtime.tool_calls).
            raise
        except MCPServerError as error:
            logger.warning("tool=<%s>, tool_use_id=<%s> | %s", self.name, context.tool_use_id, error)
            return tool_result(context.tool_use_id, str(error), "error")
        return converse_result(context.tool_use_id, result)


def converse_result(tool_use_id: str, result: CallToolResult) -> dict[str, Any]:
    """An MCP tool result as a Converse ``toolResult``: ``isError`` is an error status; text is text;
    structured content is JSON (unless a text block already says the same); an image, audio or binary
    resource is named in text (snapshots hold JSON, not bytes)."""
    content = [_converse_block(block) for block in result.content]
    structured = result.structured_content
    if structured is not None and not any(_says(block, structured) for block in content):
        content.append(tool_result(tool_use_id, structured)["content"][0])
    shaped = tool_result(tool_use_id, None, "error" if result.is_error else "success")
    return {**shaped, "content": content} if content else shaped


def _converse_block(block: ContentBlock) -> dict[str, Any]:
    from mcp_types import EmbeddedResource, ImageContent, ResourceLink, TextContent, TextResourceContents

    if isinstance(block, TextContent):
        return {"text": block.text if block.text.strip() else "(no output)"}
    if isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents):
        return {
            "text": block.resource.text if block.resource.text.strip() else f"(empty resource {block.resource.uri})"
        }
    if isinstance(block, ResourceLink):
        return {"text": f"[a link to the resource {block.uri} ({block.name})]"}
    if isinstance(block, EmbeddedResource):
        return {"text": f"[the binary resource {block.resource.uri}, not shown]"}
    kind = "an image" if isinstance(block, ImageContent) else f"{block.type} content"
    return {"text": f"[{kind} ({block.mime_type}), not shown]"}


def _says(block: dict[str, Any], structured: Any) -> bool:
    """Whether a text block already says ``structured``: the same JSON serialised (as the MCP spec asks
    servers to repeat it), or the plain value the SDKs' servers wrap as ``{"result": value}``."""
    text = block.get("text")
    if text is None:
        return False
    try:
        said = json.loads(text)
    except ValueError:
        said = text
    return structured in ({"result": text}, said, {"result": said})

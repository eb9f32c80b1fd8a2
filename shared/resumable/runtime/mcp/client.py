"""MCPClient: a synchronous client of one MCP server, whose tools an agent calls like any tool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from resumable.runtime.mcp.tools import MCPTool
from resumable.runtime.mcp.transport import Connection, Http, Stdio

if TYPE_CHECKING:
    from mcp_types import CallToolResult
    from mcp_types import Tool as ListedTool


class MCPClient(Connection):
    """A synchronous client of one MCP server. Make one with ``MCPClient.stdio`` or ``MCPClient.http``;
    use it as a context manager (or ``start()`` and ``close()``); give ``tools()`` to an agent.

    ``timeout`` bounds each call (seconds); ``connect_timeout`` bounds starting the server (stdio) or
    reaching it (HTTP), and the protocol's handshake.
    """

    def __init__(self, server: Stdio | Http, *, timeout: float = 30.0, connect_timeout: float = 30.0) -> None:
        if not timeout > 0 or not connect_timeout > 0:
            raise ValueError(f"MCPClient timeouts must be positive seconds, got {timeout=} and {connect_timeout=}")
        super().__init__(server, timeout=timeout, connect_timeout=connect_timeout)

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
            Stdio(command, tuple(args), env, str(cwd) if cwd is not None else None),
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
        return cls(Http(url, dict(headers or {})), timeout=timeout, connect_timeout=connect_timeout)

    def __repr__(self) -> str:
        return f"MCPClient({self.server})"

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

"""What goes wrong between an MCPClient and its server, said in a line and told apart: a call the server
answered with an error did not run (``MCPServerError``); a call left without an answer may have run
(``MCPOutcomeUnknownError``: a timeout, a lost connection, a client closed while it waited)."""

from __future__ import annotations

import concurrent.futures
from typing import TYPE_CHECKING

from resumable.exceptions import MCPOutcomeUnknownError, MCPServerError

if TYPE_CHECKING:
    from resumable.runtime.mcp.transport import Connection


def reason(error: BaseException) -> str:
    """What went wrong, in a line: the leaves of an exception group, each as ``Type: message``."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(reason(leaf) for leaf in error.exceptions))
    from mcp import MCPError

    if isinstance(error, MCPError):
        return f"{error.message} (MCP error {error.code})"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def call_failure(error: Exception, connection: Connection, doing: str, unanswered: str) -> MCPServerError:
    """The error for ``doing`` on ``connection``, which raised ``error`` instead of answering;
    ``unanswered`` says what no answer means for it."""
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED

    server = connection.server
    if isinstance(error, concurrent.futures.CancelledError):
        return MCPOutcomeUnknownError(f"{connection!r} was closed while waiting for {doing}: {unanswered}")
    if isinstance(error, TimeoutError):
        return MCPOutcomeUnknownError(
            f"the MCP server {server} did not answer {doing} within {connection.timeout:g} s: {unanswered}"
        )
    if isinstance(error, MCPError):
        if error.code == CONNECTION_CLOSED:
            return MCPOutcomeUnknownError(
                f"the connection to the MCP server {server} closed before it answered {doing}: {unanswered}"
            )
        return MCPServerError(f"the MCP server {server} answered {doing} with an error: {reason(error)}")
    return MCPOutcomeUnknownError(f"{doing} on the MCP server {server} failed ({reason(error)}): {unanswered}")

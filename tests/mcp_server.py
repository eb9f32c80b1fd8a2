"""A small MCP server for the tests, built on the official SDK's server API.

Run as a program (it imports nothing of the tests or of resumable):

    python tests/mcp_server.py                 # over stdio
    python tests/mcp_server.py --http-fd <fd>  # over streamable HTTP, on the listening socket <fd>

``delete_record`` appends ``delete <name>`` to the ledger file named by the request's ``x-ledger`` header
(over HTTP: one server serves many tests) or by ``RESUMABLE_TEST_LEDGER`` (the ledger of
tests/factories.py), so tests count how often it ran, across processes. With
``RESUMABLE_TEST_MCP_PIDS`` set, the server appends its process id to that file as it starts.
"""

from __future__ import annotations

import argparse
import os
import socket
from typing import TypedDict

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

LEDGER_ENV = "RESUMABLE_TEST_LEDGER"
PIDS_ENV = "RESUMABLE_TEST_MCP_PIDS"
CALLER_HEADER = "x-caller"
LEDGER_HEADER = "x-ledger"

server = MCPServer("records", log_level="WARNING")


class Record(TypedDict):
    name: str
    kind: str


@server.tool()
def lookup(name: str) -> str:
    """Look a database record up."""
    return f"{name} is a production database"


@server.tool()
def describe(name: str) -> Record:
    """Describe a database record (a structured result)."""
    return {"name": name, "kind": "database"}


@server.tool()
def list_records() -> CallToolResult:
    """List the records: a summary in text and the records themselves as structured content."""
    return CallToolResult(content=[TextContent(text="2 records")], structured_content={"records": ["a-db", "b-db"]})


@server.tool()
def delete_record(name: str, ctx: Context) -> str:
    """Delete a database record."""
    with open((ctx.headers or {}).get(LEDGER_HEADER) or os.environ[LEDGER_ENV], "a") as ledger:
        ledger.write(f"delete {name}\n")
    return f"deleted {name}"


@server.tool()
def refuse(reason: str) -> str:
    """Fail with ``reason`` (an isError result)."""
    raise ToolError(reason)


@server.tool()
async def wait_forever() -> str:
    """Never answer (for the client's timeout)."""
    await anyio.Event().wait()
    return "unreachable"


@server.tool()
def whoami(ctx: Context) -> str:
    """The caller named by the request's x-caller header (over HTTP)."""
    headers = ctx.headers or {}
    return headers.get(CALLER_HEADER, "nobody")


async def _serve_http(fd: int) -> None:
    import uvicorn

    listening = socket.socket(fileno=fd)
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[listening])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http-fd", type=int, help="serve streamable HTTP on this listening socket")
    arguments = parser.parse_args()
    if PIDS_ENV in os.environ:
        with open(os.environ[PIDS_ENV], "a") as pids:
            pids.write(f"{os.getpid()}\n")
    if arguments.http_fd is None:
        server.run("stdio")
    else:
        anyio.run(_serve_http, arguments.http_fd)


if __name__ == "__main__":
    main()

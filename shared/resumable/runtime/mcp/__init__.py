"""Tools served by a Model Context Protocol server, given to an agent like any tool.

``MCPClient`` is a synchronous client of one MCP server, over stdio (a command it starts) or
streamable HTTP (a URL), built on the official ``mcp`` SDK: the optional extra ``resumable[mcp]``,
imported only when a client starts. The SDK is asynchronous, so the client holds its session in an
event loop of its own, on a background thread, and each call waits there for its answer.

``tools()`` lists the server's tools as ``Tool`` objects. An approval policy guards them by name as
it guards any tool, and an approved call runs once, through the action journal, like any other. In
the service, a factory hands its client to ``AgentContext.enter_context``: it is closed when the run
ends, and the next request connects afresh, as it builds its agents afresh.

- client.py: ``MCPClient``, made for a server (``stdio``, ``http``) and listing and calling its tools;
- transport.py: stdio or streamable HTTP, and the connection that holds the session on its thread;
- tools.py: a listed tool as an ``MCPTool``, a call's result as a Converse ``toolResult``;
- failures.py: what went wrong with a call, and whether it may have run.
"""

from resumable.runtime.mcp.client import MCPClient
from resumable.runtime.mcp.tools import MCPTool, converse_result

__all__ = ["MCPClient", "MCPTool", "converse_result"]

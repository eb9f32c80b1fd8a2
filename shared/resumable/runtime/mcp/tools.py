"""MCP tools as the runtime's tools: a listed tool becomes an ``MCPTool`` (a ``Tool`` whose name a model
can hold), and a call's result a Converse ``toolResult``; a call the server did not answer becomes an
error result, or, when it may have run, the outcome-unknown error the action journal records."""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any

from resumable.exceptions import MCPOutcomeUnknownError, MCPServerError
from resumable.runtime.tools import Tool, ToolContext, tool_result

if TYPE_CHECKING:
    from mcp_types import CallToolResult, ContentBlock
    from mcp_types import Tool as ListedTool

    from resumable.runtime.mcp.client import MCPClient

logger = logging.getLogger(__name__)

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

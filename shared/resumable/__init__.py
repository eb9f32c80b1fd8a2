"""resumable: human-approved AI agents whose nested interrupts resume after a full rebuild.

Importing this package does not import boto3; only BedrockModel and the AWS store do, when used. Nor
does it import the openai SDK: ``OpenAIModel`` is loaded on first use, and imports openai on its first call.
"""

from typing import TYPE_CHECKING, Any

from resumable.exceptions import ActionFencedError
from resumable.runtime import (
    Agent,
    AgentResult,
    AgentTool,
    ApprovalAnswer,
    ApprovalPolicy,
    BedrockModel,
    ConversationManager,
    FencingToken,
    FileSession,
    Interrupt,
    Invocation,
    Model,
    ScriptedModel,
    Session,
    SlidingWindow,
    Summarizing,
    Tool,
    ToolContext,
    tool,
)

if TYPE_CHECKING:
    from resumable.runtime.chat_completions import OpenAIModel

__all__ = [
    "ActionFencedError",
    "Agent",
    "AgentResult",
    "AgentTool",
    "ApprovalAnswer",
    "ApprovalPolicy",
    "BedrockModel",
    "ConversationManager",
    "FencingToken",
    "FileSession",
    "Interrupt",
    "Invocation",
    "Model",
    "OpenAIModel",
    "ScriptedModel",
    "Session",
    "SlidingWindow",
    "Summarizing",
    "Tool",
    "ToolContext",
    "tool",
]


def __getattr__(name: str) -> Any:
    if name == "OpenAIModel":
        from resumable.runtime.chat_completions import OpenAIModel

        return OpenAIModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

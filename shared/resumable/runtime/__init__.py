"""The agent runtime: the loop, tools, interrupts, agent-as-tool, models, conversation managers and sessions.

It knows nothing about DynamoDB or S3; the store builds on it. ``OpenAIModel`` is imported on first use
(``resumable.runtime.chat_completions``), so that importing the runtime does not load it.
"""

from typing import TYPE_CHECKING, Any

from resumable.runtime.agent import Agent
from resumable.runtime.agent_as_tool import AgentTool
from resumable.runtime.approval import ApprovalPolicy
from resumable.runtime.conversation import ConversationManager, SlidingWindow, Summarizing
from resumable.runtime.interrupts import Interrupt
from resumable.runtime.invocation import FencingToken, Invocation
from resumable.runtime.models import BedrockModel, Model, ScriptedModel
from resumable.runtime.rules import ApprovalRule
from resumable.runtime.seam import AgentResult
from resumable.runtime.session import FileSession, Session
from resumable.runtime.tools import ApprovalAnswer, Tool, ToolContext, tool

if TYPE_CHECKING:
    from resumable.runtime.chat_completions import OpenAIModel

__all__ = [
    "Agent",
    "AgentResult",
    "AgentTool",
    "ApprovalAnswer",
    "ApprovalPolicy",
    "ApprovalRule",
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

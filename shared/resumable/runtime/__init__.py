"""The agent runtime: the loop, tools, interrupts, agent-as-tool, models, conversation managers and sessions.

It knows nothing about DynamoDB or S3; the store builds on it. Each name below is imported on first use,
so that importing the package, or one of its modules, loads only what is used (``OpenAIModel``, in
``resumable.runtime.chat_completions``, is not loaded until it is asked for).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from resumable.runtime.agent import Agent
    from resumable.runtime.agent_as_tool import AgentTool
    from resumable.runtime.approval import ApprovalPolicy
    from resumable.runtime.chat_completions import OpenAIModel
    from resumable.runtime.conversation import ConversationManager, SlidingWindow, Summarizing
    from resumable.runtime.interrupts import Interrupt
    from resumable.runtime.invocation import FencingToken, Invocation
    from resumable.runtime.models import BedrockModel, Model, ScriptedModel
    from resumable.runtime.rules import ApprovalRule
    from resumable.runtime.seam import AgentResult
    from resumable.runtime.session import FileSession, Session
    from resumable.runtime.tools import ApprovalAnswer, Tool, ToolContext, tool

# Each name is imported on first use (PEP 562), so that importing one module of the runtime (the store
# reads ``resumable.runtime.rules``) does not load the loop, the models and the tools with it.
_MODULE_OF = {
    "Agent": "resumable.runtime.agent",
    "AgentResult": "resumable.runtime.seam",
    "AgentTool": "resumable.runtime.agent_as_tool",
    "ApprovalAnswer": "resumable.runtime.tools",
    "ApprovalPolicy": "resumable.runtime.approval",
    "ApprovalRule": "resumable.runtime.rules",
    "BedrockModel": "resumable.runtime.models",
    "ConversationManager": "resumable.runtime.conversation",
    "FencingToken": "resumable.runtime.invocation",
    "FileSession": "resumable.runtime.session",
    "Interrupt": "resumable.runtime.interrupts",
    "Invocation": "resumable.runtime.invocation",
    "Model": "resumable.runtime.models",
    "OpenAIModel": "resumable.runtime.chat_completions",
    "ScriptedModel": "resumable.runtime.models",
    "Session": "resumable.runtime.session",
    "SlidingWindow": "resumable.runtime.conversation",
    "Summarizing": "resumable.runtime.conversation",
    "Tool": "resumable.runtime.tools",
    "ToolContext": "resumable.runtime.tools",
    "tool": "resumable.runtime.tools",
}

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
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULE_OF[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

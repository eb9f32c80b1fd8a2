"""resumable: human-approved AI agents whose nested interrupts resume after a full rebuild.

Importing this package does not import boto3; only BedrockModel and the AWS store do, when used.
"""

from resumable.exceptions import ActionFencedError
from resumable.runtime import (
    Agent,
    AgentResult,
    AgentTool,
    ApprovalAnswer,
    ApprovalPolicy,
    BedrockModel,
    FencingToken,
    FileSession,
    Interrupt,
    Invocation,
    Model,
    ScriptedModel,
    Session,
    Tool,
    ToolContext,
    tool,
)

__all__ = [
    "ActionFencedError",
    "Agent",
    "AgentResult",
    "AgentTool",
    "ApprovalAnswer",
    "ApprovalPolicy",
    "BedrockModel",
    "FencingToken",
    "FileSession",
    "Interrupt",
    "Invocation",
    "Model",
    "ScriptedModel",
    "Session",
    "Tool",
    "ToolContext",
    "tool",
]

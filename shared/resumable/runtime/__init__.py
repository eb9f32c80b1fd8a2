"""The agent runtime: the loop, tools, interrupts, agent-as-tool, models and sessions.

It knows nothing about DynamoDB or S3; the store builds on it.
"""

from resumable.runtime.agent import Agent, AgentResult
from resumable.runtime.agent_as_tool import AgentTool
from resumable.runtime.approval import ApprovalPolicy
from resumable.runtime.interrupts import Interrupt
from resumable.runtime.invocation import FencingToken, Invocation
from resumable.runtime.models import BedrockModel, Model, ScriptedModel
from resumable.runtime.session import FileSession, Session
from resumable.runtime.tools import ApprovalAnswer, Tool, ToolContext, tool

__all__ = [
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

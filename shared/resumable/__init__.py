"""resumable: human-approved AI agents whose nested interrupts resume after a full rebuild.

The names below are imported on first use: ``import resumable.cli`` (the ``resumable`` command) loads
neither the agent runtime nor pydantic, and nothing here imports boto3 (only BedrockModel and the AWS
store do, when used) or the openai SDK (``OpenAIModel`` imports it on its first call).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from resumable.aws.app_settings import app_secret, app_setting
    from resumable.exceptions import ActionFencedError
    from resumable.runtime import (
        Agent,
        AgentResult,
        AgentTool,
        ApprovalAnswer,
        ApprovalPolicy,
        ApprovalRule,
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
    from resumable.runtime.chat_completions import OpenAIModel

__all__ = [
    "ActionFencedError",
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
    "app_secret",
    "app_setting",
    "tool",
]

# The module each public name comes from.
_HOMES = dict.fromkeys(__all__, "resumable.runtime") | {
    "ActionFencedError": "resumable.exceptions",
    "OpenAIModel": "resumable.runtime.chat_completions",
    "app_setting": "resumable.aws.app_settings",
    "app_secret": "resumable.aws.app_settings",
}


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if not TYPE_CHECKING:  # (type checkers read the imports above: a misspelt name is their error)

    def __getattr__(name: str) -> Any:
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value
        return value

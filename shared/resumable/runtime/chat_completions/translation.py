"""Converse <-> chat completions: the runtime's conversation as a chat-completions request, and a chat
completion as a Converse assistant message.

The runtime's conversation stays Converse, and nothing else knows another shape. An assistant message's
text and toolUse blocks become one message with ``tool_calls`` (arguments as a JSON string); a user
message's toolResult blocks become one ``tool`` message each, paired by ``tool_call_id``. A block a
chat-completions server cannot carry (an image, a document...) is refused before anything is sent.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import BaseModel, ValidationError

from resumable.exceptions import ModelError
from resumable.runtime.models import check_assistant_message
from resumable.runtime.models.failures import check_finish_reason

logger = logging.getLogger(__name__)

# Converse blocks that carry nothing a chat-completions server can use: a cache hint, and a Bedrock model's
# reasoning (signed for the model that wrote it). They are left out; any other block is refused.
_SKIPPED_BLOCKS = frozenset({"cachePoint", "reasoningContent"})


def chat_tool(spec: dict[str, Any]) -> dict[str, Any]:
    """A Converse ``toolSpec`` as a chat-completions function tool."""
    return {
        "type": "function",
        "function": {
            "name": spec["name"],
            "description": spec["description"],
            "parameters": spec["inputSchema"]["json"],
        },
    }


def chat_messages(messages: list[dict[str, Any]], system_prompt: str | None) -> list[dict[str, Any]]:
    """A Converse conversation as chat-completions messages.

    An assistant message's text and toolUse blocks become one message with ``tool_calls`` (arguments as a
    JSON string); a user message's toolResult blocks become one ``tool`` message each, paired by
    ``tool_call_id`` (an error result starts ``ERROR:``), before its text, if any; text blocks are joined by
    a new line. A block a chat-completions server cannot carry (an image, a document...) is refused with a
    ModelError before anything is sent.
    """
    chat: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    for index, message in enumerate(messages):
        texts: list[str] = []
        tool_calls: list[dict[str, Any]] = []
        tool_messages: list[dict[str, Any]] = []
        for block in message["content"]:
            if "text" in block:
                texts.append(block["text"])
            elif "toolUse" in block and message["role"] == "assistant":
                use = block["toolUse"]
                tool_calls.append(
                    {
                        "id": use["toolUseId"],
                        "type": "function",
                        "function": {"name": use["name"], "arguments": json.dumps(use["input"], ensure_ascii=False)},
                    }
                )
            elif "toolResult" in block and message["role"] == "user":
                result = block["toolResult"]
                tool_messages.append(
                    {"role": "tool", "tool_call_id": result["toolUseId"], "content": _tool_result_text(result, index)}
                )
            elif not _SKIPPED_BLOCKS.intersection(block):
                raise _cannot_carry(block, index, message["role"])
        text = "\n".join(texts)
        if message["role"] == "assistant":
            chat.append(
                {"role": "assistant", "content": text or None, **({"tool_calls": tool_calls} if tool_calls else {})}
            )
        else:
            chat.extend(tool_messages)
            if texts:
                chat.append({"role": "user", "content": text})
    return chat


def _tool_result_text(result: dict[str, Any], index: int) -> str:
    parts = []
    for block in result.get("content", []):
        if "text" in block:
            parts.append(block["text"])
        elif "json" in block:
            parts.append(json.dumps(block["json"], ensure_ascii=False))
        else:
            raise _cannot_carry(block, index, f"toolResult '{result['toolUseId']}' in the user")
    text = "\n".join(parts)
    return f"ERROR: {text}" if result.get("status") == "error" else text


def _cannot_carry(block: dict[str, Any], index: int, where: str) -> ModelError:
    kinds = ", ".join(sorted(block)) or "empty"
    return ModelError(
        f"message {index} (the {where} message) has a block of kind {kinds}, which OpenAIModel cannot send to "
        "a chat-completions server (it carries text, tool calls and their text or JSON results): nothing was sent. "
        "Use BedrockModel for such content, or leave it out of the conversation"
    )


class _Function(BaseModel):
    name: str
    arguments: str | dict[str, Any] | None = None


class _ToolCall(BaseModel):
    id: str
    type: str = "function"
    function: _Function | None = None


class _Message(BaseModel):
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(BaseModel):
    finish_reason: str | None = None
    message: _Message


class _Completion(BaseModel):
    """The part of a chat completion this model reads; servers add fields of their own, which are ignored."""

    choices: list[_Choice]


def converse_reply(body: Any, model: str) -> dict[str, Any]:
    """The Converse assistant message of a chat completion from ``model``, or the turn's error when it has
    none."""
    source = f"the reply of model '{model}'"
    try:
        completion = _Completion.model_validate(body)
    except ValidationError as error:
        raise ModelError(f"{source} is not a chat completion, no reply was recorded: {error}") from error
    if not completion.choices:
        raise ModelError(f"{source} has no choices, no reply was recorded: {body!r}")
    choice = completion.choices[0]
    reply, reason = choice.message, choice.finish_reason
    logger.debug("model_id=<%s>, finish_reason=<%s> | chat completion replied", model, reason)
    check_finish_reason(model, reply.refusal, reason)
    content: list[dict[str, Any]] = [{"text": reply.content}] if reply.content and reply.content.strip() else []
    content.extend({"toolUse": _tool_use(call, model)} for call in reply.tool_calls or [])
    return check_assistant_message({"role": "assistant", "content": content}, source)


def _tool_use(call: _ToolCall, model: str) -> dict[str, Any]:
    if call.type != "function" or call.function is None:
        raise ModelError(
            f"model '{model}' made a tool call of type {call.type!r} ('{call.id}'), and OpenAIModel offers "
            "only function tools: no tool ran and the reply was not recorded"
        )
    arguments = call.function.arguments
    problem = "not a JSON object"
    tool_input: Any
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        tool_input = {}  # a call without arguments: some servers send "" or nothing for a tool with none
    elif isinstance(arguments, str):
        try:
            tool_input = json.loads(arguments)
        except json.JSONDecodeError as error:
            tool_input, problem = None, f"not JSON ({error})"
    else:
        tool_input = arguments
    if not isinstance(tool_input, dict):
        # Running the tool with input the model did not give could run an approved action on the wrong
        # input: the turn fails instead, and retrying it asks the model again.
        raise ModelError(
            f"model '{model}' called tool '{call.function.name}' (tool call '{call.id}') with arguments "
            f"that are {problem} ({arguments!r}): no tool ran and the reply was not recorded; retrying the turn "
            "asks the model again"
        )
    return {"toolUseId": call.id, "name": call.function.name, "input": tool_input}

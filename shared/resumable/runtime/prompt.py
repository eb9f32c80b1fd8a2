"""What an agent accepts as a prompt: content that starts or continues its conversation, or the answers
to the interrupts its paused turn waits on. Both are checked whole before anything changes.

A prompt is a non-blank string (one text block) or a non-empty list of Converse content blocks, each of
exactly one kind a prompt may carry. Answers are ``interruptResponse`` blocks, sent alone: one per
pending interrupt, each with a non-null ``response`` (an approval's in the shape of ``ApprovalAnswer``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from resumable.exceptions import InvalidInvocationError, UnknownInterruptError
from resumable.runtime.approval import ApprovalAnswer
from resumable.runtime.interrupts import APPROVAL_INTERRUPT, InterruptState, describe

if TYPE_CHECKING:
    from resumable.runtime.seam import Prompt

# The Converse content blocks a prompt may carry.
_PROMPT_BLOCKS = frozenset({"text", "image", "document", "video", "guardContent", "cachePoint"})


def prompt_blocks(agent_name: str, prompt: Prompt) -> list[dict[str, Any]]:
    """The blocks of ``prompt``: content blocks of a new user message, or interruptResponse blocks alone."""
    if isinstance(prompt, str) and prompt.strip():
        blocks: list[Any] = [{"text": prompt}]
    elif isinstance(prompt, Sequence) and prompt and all(isinstance(b, dict) for b in prompt):
        blocks = list(prompt)
    else:
        raise InvalidInvocationError(
            f"agent '{agent_name}' needs a prompt that is a non-blank string or a non-empty list of content blocks, "
            f"got {prompt!r}"
        )
    answering = [b for b in blocks if "interruptResponse" in b]
    if not answering:
        _check_content(agent_name, blocks)
    if answering and len(answering) != len(blocks):
        raise InvalidInvocationError(
            "a prompt cannot mix interruptResponse blocks with other content: send the answers alone "
            "to resume, then a new prompt; nothing was changed"
        )
    return blocks


def _check_content(agent_name: str, blocks: list[dict[str, Any]]) -> None:
    for block in blocks:
        if len(block) != 1 or next(iter(block)) not in _PROMPT_BLOCKS:
            raise InvalidInvocationError(
                f"agent '{agent_name}' got a prompt block {block!r}; each block must have exactly one of "
                f"{sorted(_PROMPT_BLOCKS)} (or be an interruptResponse): nothing was added"
            )
        if "text" in block and (not isinstance(block["text"], str) or not block["text"].strip()):
            raise InvalidInvocationError(
                f"agent '{agent_name}' got a text block that is not a non-blank string: {block!r}; nothing was added"
            )


def checked_answers(agent_name: str, state: InterruptState, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``{interrupt id: response}`` of interruptResponse blocks, each answering an interrupt that
    the paused turn (``state``) waits on, an approval's in the shape of an approval answer."""
    responses = _parse_responses(blocks)
    if not state.activated:
        raise UnknownInterruptError(
            f"agent '{agent_name}' has no pending interrupts, so {sorted(responses)} cannot be answered and "
            "nothing was resumed: send a text prompt to start a new turn"
        )
    unknown = [i for i in responses if i not in state.pending]
    if unknown:
        raise UnknownInterruptError(
            f"agent '{agent_name}' has no pending interrupt {', '.join(map(repr, unknown))}; pending: "
            f"{describe(state.pending.values())}. Nothing was resumed"
        )
    for interrupt_id, response in responses.items():
        if state.pending[interrupt_id].name == APPROVAL_INTERRUPT:
            try:
                ApprovalAnswer.model_validate(response)
            except ValidationError as error:
                raise InvalidInvocationError(
                    f"the answer to approval {interrupt_id!r} must be {{'decision': 'approve'}} or "
                    f"{{'decision': 'deny', 'message': '...'}}, got {response!r}: nothing was resumed"
                ) from error
    return responses


def _parse_responses(blocks: Sequence[Any]) -> dict[str, Any]:
    """The ``{interrupt id: response}`` of a prompt made of interruptResponse blocks."""
    responses: dict[str, Any] = {}
    for block in blocks:
        body = block.get("interruptResponse")
        if not isinstance(body, dict) or not isinstance(body.get("interruptId"), str):
            raise InvalidInvocationError(
                "an interruptResponse block must be "
                '{"interruptResponse": {"interruptId": "<id>", "response": <answer>}}, '
                f"got {block!r}: nothing was resumed"
            )
        interrupt_id = body["interruptId"]
        if body.get("response") is None:
            raise InvalidInvocationError(
                f"the interruptResponse for {interrupt_id!r} has no response (missing or null): "
                "send the answer as its 'response'; nothing was resumed"
            )
        if interrupt_id in responses:
            raise InvalidInvocationError(
                f"interrupt {interrupt_id!r} is answered twice in one prompt: nothing was resumed"
            )
        responses[interrupt_id] = body["response"]
    return responses

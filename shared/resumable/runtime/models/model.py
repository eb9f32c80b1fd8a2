"""What a model is: anything with ``converse`` in the shape of Bedrock's Converse API, whose reply is a
Converse assistant message (``check_assistant_message`` checks one, whichever provider wrote it)."""

from __future__ import annotations

from typing import Any, Protocol

from resumable.exceptions import ModelError


class Model(Protocol):
    """Anything with a ``converse`` method in the shape of Bedrock's Converse API."""

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """Return the next assistant message (``{"role": "assistant", "content": [...]}``)."""
        ...


def check_assistant_message(message: Any, source: str) -> dict[str, Any]:
    """Return ``message`` if it is a Converse assistant message of text and toolUse blocks."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        raise ModelError(f"{source} is not a Converse assistant message ({{'role': 'assistant', ...}}): {message!r}")
    content = message.get("content")
    if not isinstance(content, list) or not content:
        raise ModelError(f"{source} has no content blocks: {message!r}")
    for block in content:
        if not isinstance(block, dict):
            raise ModelError(f"{source} has a content block that is not an object: {block!r}")
        use = block.get("toolUse")
        if use is not None and (
            not isinstance(use, dict)
            or not isinstance(use.get("toolUseId"), str)
            or not isinstance(use.get("name"), str)
        ):
            raise ModelError(f"{source} has a toolUse block without a string toolUseId and name: {block!r}")
    return message

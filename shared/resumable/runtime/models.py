"""Model providers. A model takes a Converse conversation and returns the next assistant message."""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from resumable.exceptions import ModelError, ScriptExhaustedError

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient

logger = logging.getLogger(__name__)


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


class ScriptedModel:
    """A deterministic model that replays Converse assistant messages; no network, no credentials.

    Reply ``k`` answers the conversation's ``k``-th model call: the script is indexed by how many
    assistant messages the conversation already holds, not by an internal counter, so an agent
    rebuilt from a snapshot continues exactly where its conversation stands.
    """

    def __init__(self, replies: Sequence[dict[str, Any]]) -> None:
        self.replies = [check_assistant_message(r, f"ScriptedModel reply {n}") for n, r in enumerate(replies)]

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        index = sum(1 for m in messages if m.get("role") == "assistant")
        if index >= len(self.replies):
            raise ScriptExhaustedError(
                f"ScriptedModel has {len(self.replies)} replies, but the conversation already holds {index} "
                f"assistant messages and asks for reply {index + 1}: add replies to the script"
            )
        return copy.deepcopy(self.replies[index])


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)


class BedrockModel:
    """Amazon Bedrock through the ``converse`` API of bedrock-runtime.

    ``inference_config`` is Converse's ``inferenceConfig``; snake_case keys (``max_tokens``) are
    accepted too. boto3 is imported only when no ``client`` is given and the first call is made.
    """

    def __init__(self, model_id: str, client: BedrockRuntimeClient | None = None, **inference_config: Any) -> None:
        self.model_id = model_id
        self._client = client
        self.inference_config = {_camel(k): v for k, v in inference_config.items()}

    @property
    def client(self) -> BedrockRuntimeClient:
        if self._client is None:
            import boto3

            self._client = boto3.client("bedrock-runtime")
        return self._client

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError

        request: dict[str, Any] = {"modelId": self.model_id, "messages": messages}
        if system_prompt:
            request["system"] = [{"text": system_prompt}]
        if tool_specs:
            request["toolConfig"] = {"tools": [{"toolSpec": spec} for spec in tool_specs]}
        if self.inference_config:
            request["inferenceConfig"] = self.inference_config
        try:
            response = self.client.converse(**request)
        except (BotoCoreError, ClientError) as error:
            raise ModelError(
                f"Bedrock converse with model '{self.model_id}' failed, no reply was recorded: {error}"
            ) from error
        logger.debug("model_id=<%s>, stop_reason=<%s> | bedrock replied", self.model_id, response.get("stopReason"))
        return check_assistant_message(response["output"].get("message"), f"Bedrock reply from '{self.model_id}'")

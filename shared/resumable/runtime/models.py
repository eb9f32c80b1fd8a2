"""Model providers. A model takes a Converse conversation and returns the next assistant message."""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from resumable.exceptions import ContextWindowOverflowError, ModelError, ModelStopError, ScriptExhaustedError

if TYPE_CHECKING:
    from botocore.exceptions import BotoCoreError, ClientError
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
    rebuilt from a snapshot continues exactly where its conversation stands. So it does not suit an
    agent whose conversation manager drops messages (it would replay earlier replies): give such an
    agent a model that answers from what the conversation holds.
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


# Bedrock's stop reasons that are no answer: what happened, and what to do. The reply is not recorded.
_NO_ANSWER = {
    "max_tokens": (
        "reached its output token limit before it finished its reply",
        "raise max_tokens (BedrockModel(..., max_tokens=n), now {max_tokens}) or ask for a shorter answer",
    ),
    "guardrail_intervened": (
        "was stopped by a guardrail",
        "check the guardrail's configuration and its trace, or change the prompt",
    ),
    "content_filtered": (
        "had its reply withheld by the model's content filter",
        "change the prompt, or review the model's content filtering",
    ),
    "malformed_model_output": (
        "wrote a reply Bedrock could not read",
        "retry the turn",
    ),
    "malformed_tool_use": (
        "made a malformed tool call, so no tool ran",
        "retry the turn; if it happens again, simplify the tool's input schema",
    ),
}
# How Bedrock's ValidationException says the conversation is longer than the model's context window (the
# model's own words differ: Amazon's, Anthropic's "prompt is too long: N tokens > M maximum", ...).
_OVERFLOW_PHRASES = (
    "input is too long",
    "exceed context limit",
    "too many total text bytes",
    "prompt is too long",
)


class BedrockModel:
    """Amazon Bedrock through the ``converse`` API of bedrock-runtime.

    ``inference_config`` is Converse's ``inferenceConfig``; snake_case keys (``max_tokens``) are
    accepted too. boto3 is imported only when no ``client`` is given and the first call is made.

    The client it builds retries throttled and failed calls as botocore does (``retry_mode``
    ``"standard"``, or ``"adaptive"`` to also slow its own rate), ``max_retries`` times after the first
    attempt, whatever ``AWS_RETRY_MODE`` and ``AWS_MAX_ATTEMPTS`` say. A ``client`` passed in keeps its
    own configuration, retries included.

    A failed call raises a ``ModelError`` that says no reply was recorded: ``ContextWindowOverflowError``
    when the conversation is too long for the model, ``ModelStopError`` when the model stopped without an
    answer (stop reasons ``max_tokens``, ``guardrail_intervened``, ``content_filtered``,
    ``malformed_model_output``, ``malformed_tool_use``).
    """

    def __init__(
        self,
        model_id: str,
        client: BedrockRuntimeClient | None = None,
        *,
        max_retries: int = 3,
        retry_mode: Literal["standard", "adaptive"] = "standard",
        **inference_config: Any,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {max_retries}")
        self.model_id = model_id
        self._client = client
        self.max_retries = max_retries
        self.retry_mode = retry_mode
        self.inference_config = {_camel(k): v for k, v in inference_config.items()}

    @property
    def client(self) -> BedrockRuntimeClient:
        if self._client is None:
            import boto3
            from botocore.config import Config

            config = Config(retries={"mode": self.retry_mode, "total_max_attempts": self.max_retries + 1})
            self._client = boto3.client("bedrock-runtime", config=config)
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
            raise self._failure(error) from error
        stop_reason = response.get("stopReason")
        logger.debug("model_id=<%s>, stop_reason=<%s> | bedrock replied", self.model_id, stop_reason)
        message = response["output"].get("message")
        self._check_stop_reason(stop_reason, message)
        return check_assistant_message(message, f"Bedrock reply from '{self.model_id}'")

    def _failure(self, error: BotoCoreError | ClientError) -> ModelError:
        """The turn's error for a failed converse call."""
        from botocore.exceptions import ClientError

        if not isinstance(error, ClientError):
            return ModelError(f"Bedrock converse with model '{self.model_id}' failed, no reply was recorded: {error}")
        code = error.response.get("Error", {}).get("Code", "")
        said = error.response.get("Error", {}).get("Message", "")
        attempts = error.response.get("ResponseMetadata", {}).get("RetryAttempts", 0) + 1
        if code == "ValidationException" and any(phrase in said.lower() for phrase in _OVERFLOW_PHRASES):
            return ContextWindowOverflowError(
                f"the conversation sent to Bedrock model '{self.model_id}' is longer than its context window, no "
                "reply was recorded: shorten the conversation (a conversation manager does) or use a model with a "
                f"larger window. Bedrock said: {said}"
            )
        if code == "ThrottlingException":
            return ModelError(
                f"Bedrock throttled model '{self.model_id}' ({code}) on all {attempts} attempt(s), no reply was "
                f"recorded: retry the turn later, give BedrockModel more max_retries (now {self.max_retries}) or "
                f"retry_mode='adaptive' (a client passed in retries as its own configuration says), or ask for a "
                f"higher quota. Bedrock said: {said}"
            )
        return ModelError(
            f"Bedrock converse with model '{self.model_id}' failed after {attempts} attempt(s), no reply was "
            f"recorded: {error}"
        )

    def _check_stop_reason(self, stop_reason: str | None, message: Any) -> None:
        """Raise the turn's error when Bedrock's stop reason says the reply is no answer."""
        if stop_reason == "model_context_window_exceeded":
            raise ContextWindowOverflowError(
                f"Bedrock model '{self.model_id}' ran out of its context window before it finished its reply "
                "(stopReason model_context_window_exceeded), the reply was not recorded: shorten the conversation "
                "(a conversation manager does) or use a model with a larger window"
            )
        if stop_reason not in _NO_ANSWER:
            return
        what, todo = _NO_ANSWER[stop_reason]
        said = ""
        if stop_reason == "guardrail_intervened" and isinstance(message, dict):
            text = " ".join(b["text"] for b in message.get("content") or [] if isinstance(b, dict) and "text" in b)
            said = f" The guardrail answered: {text!r}." if text else ""
        max_tokens = self.inference_config.get("maxTokens", "the model's default")
        raise ModelStopError(
            f"Bedrock model '{self.model_id}' {what} (stopReason {stop_reason}), the reply was not recorded: "
            f"{todo.format(max_tokens=max_tokens)}.{said}",
            stop_reason,
        )

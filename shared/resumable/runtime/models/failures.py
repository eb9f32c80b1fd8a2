"""What a model provider's failures mean for the turn.

Each becomes a ``ModelError`` (resumable.exceptions) that says no reply was recorded and what to do:
``ContextWindowOverflowError`` when the conversation is longer than the model's context window,
``ModelStopError`` when the model stopped without an answer, and a plain ``ModelError`` for the rest
(throttled past the retries, refused, failed). Bedrock says which with its error codes and stop
reasons (``BedrockModel``); a chat-completions server with its HTTP status, its error body and a
reply's ``finish_reason`` (``OpenAIModel``). Whether to try a call again is each transport's to
decide: botocore's retries for Bedrock; for a chat-completions server, a status that another attempt
may get past has no error here (resumable.runtime.chat_completions.transport waits and tries again).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from resumable.exceptions import ContextWindowOverflowError, ModelError, ModelStopError

if TYPE_CHECKING:
    from botocore.exceptions import BotoCoreError, ClientError
    from openai import APIStatusError

# What to do about a conversation longer than the model's context window, whichever provider said so.
_SHORTEN = "shorten the conversation (a conversation manager does) or use a model with a larger window"

# -- Bedrock -----------------------------------------------------------------------------------------------

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
_BEDROCK_OVERFLOW_PHRASES = (
    "input is too long",
    "exceed context limit",
    "too many total text bytes",
    "prompt is too long",
)


def bedrock_failure(error: BotoCoreError | ClientError, model_id: str, max_retries: int) -> ModelError:
    """The turn's error for a failed converse call."""
    from botocore.exceptions import ClientError

    if not isinstance(error, ClientError):
        return ModelError(f"Bedrock converse with model '{model_id}' failed, no reply was recorded: {error}")
    code = error.response.get("Error", {}).get("Code", "")
    said = error.response.get("Error", {}).get("Message", "")
    attempts = error.response.get("ResponseMetadata", {}).get("RetryAttempts", 0) + 1
    if code == "ValidationException" and any(phrase in said.lower() for phrase in _BEDROCK_OVERFLOW_PHRASES):
        return ContextWindowOverflowError(
            f"the conversation sent to Bedrock model '{model_id}' is longer than its context window, no "
            f"reply was recorded: {_SHORTEN}. Bedrock said: {said}"
        )
    if code == "AccessDeniedException":
        return ModelError(
            f"Bedrock refused model '{model_id}' (AccessDeniedException), no reply was recorded: this function may "
            "not invoke it. Deployed with this stack, list it in BedrockModelIds (a cross-Region inference "
            "profile by its id, such as us.anthropic...), and turn the model's access on in the Bedrock console "
            f"of the account. Bedrock said: {said}"
        )
    if code == "ThrottlingException":
        return ModelError(
            f"Bedrock throttled model '{model_id}' ({code}) on all {attempts} attempt(s), no reply was "
            f"recorded: retry the turn later, give BedrockModel more max_retries (now {max_retries}) or "
            f"retry_mode='adaptive' (a client passed in retries as its own configuration says), or ask for a "
            f"higher quota. Bedrock said: {said}"
        )
    return ModelError(
        f"Bedrock converse with model '{model_id}' failed after {attempts} attempt(s), no reply was recorded: {error}"
    )


def check_stop_reason(
    stop_reason: str | None, message: Any, model_id: str, inference_config: Mapping[str, Any]
) -> None:
    """Raise the turn's error when Bedrock's stop reason says the reply is no answer."""
    if stop_reason == "model_context_window_exceeded":
        raise ContextWindowOverflowError(
            f"Bedrock model '{model_id}' ran out of its context window before it finished its reply "
            f"(stopReason model_context_window_exceeded), the reply was not recorded: {_SHORTEN}"
        )
    if stop_reason not in _NO_ANSWER:
        return
    what, todo = _NO_ANSWER[stop_reason]
    said = ""
    if stop_reason == "guardrail_intervened" and isinstance(message, dict):
        text = " ".join(b["text"] for b in message.get("content") or [] if isinstance(b, dict) and "text" in b)
        said = f" The guardrail answered: {text!r}." if text else ""
    max_tokens = inference_config.get("maxTokens", "the model's default")
    raise ModelStopError(
        f"Bedrock model '{model_id}' {what} (stopReason {stop_reason}), the reply was not recorded: "
        f"{todo.format(max_tokens=max_tokens)}.{said}",
        stop_reason,
    )


# -- chat completions --------------------------------------------------------------------------------------

# The statuses a later attempt may get past: request timeout, too many requests, the server's own failures.
_TRANSIENT_STATUSES = frozenset({408, 429})
# How servers say that the conversation is longer than the model's context window: OpenAI and Azure
# (code context_length_exceeded), vLLM ("This model's maximum context length is ...", "... is longer than
# the maximum model length"), LiteLLM (ContextWindowExceededError), llama.cpp (exceed_context_size_error),
# Ollama ("... exceeds the context length"), and a Bedrock or Anthropic model behind a proxy.
_CHAT_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_CHAT_OVERFLOW_PHRASES = (
    "maximum context length",
    "context length exceeded",
    "context_length_exceeded",
    "contextwindowexceedederror",
    "exceeds the context length",
    "exceeded max context length",
    "exceeds the available context size",
    "longer than the maximum model length",
    "prompt is too long",
    "input is too long",
)
_FINISHED = frozenset({"stop", "tool_calls", None})
# What some servers call a finished answer: Together AI's "eos", older TGI's "eos_token", some gateways'
# "end", and Anthropic's words passed through by proxies.
_FINISHED_TOO = frozenset({"eos", "eos_token", "end", "end_turn", "stop_sequence", "tool_use"})


def chat_failure(error: APIStatusError, model: str, where: str, message: str) -> ModelError | None:
    """The turn's error for a request ``where`` (the server) refused with ``error``, whose own words are
    ``message``; None when another attempt may get past it (408, 429 but an exhausted quota, 5xx)."""
    status = error.status_code
    if status == 429 and error.code == "insufficient_quota":
        return ModelError(
            f"{where} refused model '{model}': the account is out of quota (HTTP 429 insufficient_quota), "
            f"no reply was recorded and trying again will not help: {message}"
        )
    if status in _TRANSIENT_STATUSES or status >= 500:
        return None
    if _overflows(error, message):
        return ContextWindowOverflowError(
            f"the conversation sent to model '{model}' is longer than its context window (HTTP {status}), "
            f"no reply was recorded: {_SHORTEN}. {where} said: {message}"
        )
    if error.code == "content_filter":
        return ModelStopError(
            f"{where} filtered the prompt sent to model '{model}' (HTTP {status} content_filter), no "
            f"reply was recorded: change the prompt, or review the deployment's content filter. {message}",
            "content_filtered",
        )
    return ModelError(
        f"{where} refused the chat completion of model '{model}' with HTTP {status}, no reply was "
        f"recorded and trying again as it stands will not help: {message}"
    )


def _overflows(error: APIStatusError, message: str) -> bool:
    body = error.body if isinstance(error.body, dict) else {}
    if error.code in _CHAT_OVERFLOW_CODES or body.get("type") in _CHAT_OVERFLOW_CODES:
        return True
    said = message.lower()
    return any(phrase in said for phrase in _CHAT_OVERFLOW_PHRASES)


def check_finish_reason(model: str, refusal: str | None, reason: str | None) -> None:
    """Raise the turn's error when a chat completion's reply is no answer: the model refused, or it
    finished for another reason than an answer or tool calls."""
    if refusal:
        raise ModelStopError(
            f"model '{model}' refused to answer, its refusal was not recorded: {refusal!r}. "
            "Rephrase the request, or send a new prompt",
            "refusal",
        )
    if reason == "length":
        raise ModelStopError(
            f"model '{model}' reached its output token limit before it finished its reply "
            "(finish_reason length), the reply was not recorded: raise max_completion_tokens (or max_tokens) "
            "in OpenAIModel's parameters, or ask for a shorter answer",
            "max_tokens",
        )
    if reason == "content_filter":
        raise ModelStopError(
            f"the content filter of model '{model}' withheld its reply (finish_reason content_filter), "
            "the reply was not recorded: change the prompt, or review the deployment's content filter",
            "content_filtered",
        )
    if reason not in _FINISHED and reason not in _FINISHED_TOO:
        raise ModelStopError(
            f"model '{model}' stopped with finish_reason {reason!r}, which is neither an answer nor tool "
            "calls; the reply was not recorded: retry the turn",
            str(reason),
        )

"""OpenAIModel: a model behind any server that speaks OpenAI's chat-completions API (OpenAI, Azure OpenAI,
vLLM, Ollama, LiteLLM), in the runtime's Converse shape.

The runtime's conversation stays Converse: this module maps it to chat-completions messages on the way
out and the reply back to a Converse assistant message, and nothing else knows another shape. The openai
SDK (``pip install 'resumable[openai]'``) is imported when the first call is made, never by ``import
resumable``. Retries are this module's own (the SDK's are turned off): bounded, with a jittered backoff,
honouring the server's Retry-After, through an injectable ``sleep``.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from resumable.exceptions import ContextWindowOverflowError, ModelError, ModelStopError
from resumable.runtime.models import check_assistant_message

if TYPE_CHECKING:
    from openai import APIStatusError, OpenAI

logger = logging.getLogger(__name__)

# Between attempts, when the server does not say how long to wait: 0.5 s, 1 s, 2 s ... at most 8 s, each up
# to a quarter shorter at random, so that functions throttled together do not all come back together.
FIRST_BACKOFF_SECONDS = 0.5
LONGEST_BACKOFF_SECONDS = 8.0
# The statuses a later attempt may get past: request timeout, too many requests, the server's own failures.
_TRANSIENT_STATUSES = frozenset({408, 429})
# How servers say that the conversation is longer than the model's context window: OpenAI and Azure
# (code context_length_exceeded), vLLM ("This model's maximum context length is ...", "... is longer than
# the maximum model length"), LiteLLM (ContextWindowExceededError), llama.cpp (exceed_context_size_error),
# Ollama ("... exceeds the context length"), and a Bedrock or Anthropic model behind a proxy.
_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_OVERFLOW_PHRASES = (
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
# Converse blocks that carry nothing a chat-completions server can use: a cache hint, and a Bedrock model's
# reasoning (signed for the model that wrote it). They are left out; any other block is refused.
_SKIPPED_BLOCKS = frozenset({"cachePoint", "reasoningContent"})
_FINISHED = frozenset({"stop", "tool_calls", None})
# What some servers call a finished answer: Together AI's "eos", older TGI's "eos_token", some gateways'
# "end", and Anthropic's words passed through by proxies.
_FINISHED_TOO = frozenset({"eos", "eos_token", "end", "end_turn", "stop_sequence", "tool_use"})


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


class OpenAIModel:
    """A chat-completions server (``POST {base_url}/chat/completions``) as a ``Model``.

    ``base_url`` and ``api_key`` default to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (then OpenAI's API);
    a local server (vLLM, Ollama) takes any key. ``client`` is an ``openai.OpenAI`` or
    ``openai.AzureOpenAI`` built by the caller (it keeps its endpoint, key and timeout; its own retries are
    turned off, since this model runs its own). ``params`` go into every request as they are
    (``temperature``, ``max_completion_tokens``, ``extra_body={...}`` for a server's own parameters).

    A failed call raises a ``ModelError`` that says no reply was recorded: ``ContextWindowOverflowError``
    when the conversation is too long for the model, ``ModelStopError`` when the model stopped without an
    answer (``max_tokens``, ``content_filtered``, ``refusal``). 408, 429, 5xx and connection failures are
    tried again, ``max_retries`` times at most, after the wait the server's Retry-After asks for (a wait
    longer than ``max_wait`` seconds fails the turn at once: in a Lambda function of 60 s, it would leave
    too little time for the call) or a backoff; anything else fails at once with the server's message.
    ``timeout`` (seconds) bounds each attempt, as botocore's read timeout does Bedrock's.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: OpenAI | None = None,
        max_retries: int = 3,
        timeout: float = 60.0,
        max_wait: float = 20.0,
        sleep: Callable[[float], None] = time.sleep,
        **params: Any,
    ) -> None:
        if client is not None and (base_url is not None or api_key is not None):
            raise ValueError(
                "OpenAIModel takes a client= or a base_url=/api_key=, not both: the client carries its own endpoint "
                "and key"
            )
        if max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {max_retries}")
        taken = sorted({"model", "messages", "tools", "stream"} & params.keys())
        if taken:
            raise ValueError(
                f"OpenAIModel sets {taken} itself (it sends the conversation and its tools, and does not stream): "
                "leave them out of its parameters"
            )
        self.model = model
        self.base_url = base_url
        self.max_retries = max_retries
        self.timeout = timeout
        self.max_wait = max_wait
        self.params = params
        self._api_key = api_key
        self._given_client = client
        self._client: OpenAI | None = None
        self._sleep = sleep

    @property
    def client(self) -> OpenAI:
        """The SDK's client, built (and openai imported) on first use, with the SDK's retries off."""
        if self._client is None:
            try:
                import openai
            except ImportError as error:
                raise ModelError(
                    f"OpenAIModel for model '{self.model}' needs the openai package, which is not installed; "
                    "nothing was sent: pip install 'resumable[openai]'"
                ) from error
            if self._given_client is not None:
                self._client = self._given_client.with_options(max_retries=0)
            else:
                try:
                    self._client = openai.OpenAI(
                        api_key=self._api_key, base_url=self.base_url, timeout=self.timeout, max_retries=0
                    )
                except openai.OpenAIError as error:
                    raise ModelError(
                        f"OpenAIModel for model '{self.model}' could not build its client, nothing was sent: "
                        f"{error} (a local server such as vLLM or Ollama takes any key: api_key='unused')"
                    ) from error
        return self._client

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            **self.params,
            "model": self.model,
            "messages": chat_messages(messages, system_prompt),
        }
        if tool_specs:
            request["tools"] = [chat_tool(spec) for spec in tool_specs]
        return self._converse_reply(self._send(request))

    def _send(self, request: dict[str, Any]) -> Any:
        """The JSON body of the server's reply, after at most ``max_retries`` more attempts."""
        client = self.client  # first: it says what to install when openai is not there
        import openai

        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                raw = client.chat.completions.with_raw_response.create(**request)
            except TypeError as error:
                raise ModelError(
                    f"OpenAIModel for model '{self.model}' has parameters the SDK does not take "
                    f"({sorted(self.params)}): {error}; nothing was sent. A server's own parameters go in "
                    "extra_body={...}"
                ) from error
            except openai.APIStatusError as error:
                wait = self._retry_wait(error, attempt)
                failure = f"HTTP {error.status_code}: {self._server_message(error)}"
                cause: openai.APIError = error
            except openai.APIConnectionError as error:  # APITimeoutError too
                wait = _backoff(attempt)
                failure = f"{error.message} {error.__cause__ or ''}".strip()
                cause = error
            except openai.OpenAIError as error:
                raise ModelError(
                    f"the chat completion of model '{self.model}' failed, no reply was recorded: "
                    f"{self._redact(str(error))}"
                ) from self._cause(error)
            else:
                try:
                    return raw.http_response.json()
                except ValueError as error:
                    raise ModelError(
                        f"the server at {client.base_url} replied to model '{self.model}' with something that is "
                        f"not JSON, no reply was recorded: {error}"
                    ) from error
            if attempt == attempts:
                break
            logger.warning(
                "model_id=<%s>, attempt=<%d>, wait_seconds=<%.3f> | chat completion failed (%s), trying again",
                self.model,
                attempt,
                wait,
                failure,
            )
            self._sleep(wait)
        raise ModelError(
            f"the chat completion of model '{self.model}' at {client.base_url} failed on all {attempts} attempt(s), "
            f"no reply was recorded (last: {failure}): retry the turn later, or give OpenAIModel more max_retries "
            f"(now {self.max_retries})"
        ) from self._cause(cause)

    def _retry_wait(self, error: APIStatusError, attempt: int) -> float:
        """How long to wait before the next attempt; raises the turn's error when another attempt cannot help."""
        status, message = error.status_code, self._server_message(error)
        where = f"the server at {self.client.base_url}"
        if status == 429 and error.code == "insufficient_quota":
            raise ModelError(
                f"{where} refused model '{self.model}': the account is out of quota (HTTP 429 insufficient_quota), "
                f"no reply was recorded and trying again will not help: {message}"
            ) from self._cause(error)
        if status in _TRANSIENT_STATUSES or status >= 500:
            asked = retry_after(error.response.headers)
            if asked is not None and asked > self.max_wait:
                raise ModelError(
                    f"{where} asked to wait {asked:g} s before model '{self.model}' is tried again (HTTP {status}, "
                    f"Retry-After), longer than this OpenAIModel waits (max_wait={self.max_wait:g} s); no reply was "
                    f"recorded: retry the turn later. {message}"
                ) from self._cause(error)
            return _backoff(attempt) if asked is None else asked
        if _overflows(error, message):
            raise ContextWindowOverflowError(
                f"the conversation sent to model '{self.model}' is longer than its context window (HTTP {status}), "
                f"no reply was recorded: shorten the conversation (a conversation manager does) or use a model "
                f"with a larger window. {where} said: {message}"
            ) from self._cause(error)
        if error.code == "content_filter":
            raise ModelStopError(
                f"{where} filtered the prompt sent to model '{self.model}' (HTTP {status} content_filter), no "
                f"reply was recorded: change the prompt, or review the deployment's content filter. {message}",
                "content_filtered",
            ) from self._cause(error)
        raise ModelError(
            f"{where} refused the chat completion of model '{self.model}' with HTTP {status}, no reply was "
            f"recorded and trying again as it stands will not help: {message}"
        ) from self._cause(error)

    def _converse_reply(self, body: Any) -> dict[str, Any]:
        """The Converse assistant message of a chat completion, or the turn's error when it has none."""
        source = f"the reply of model '{self.model}'"
        try:
            completion = _Completion.model_validate(body)
        except ValidationError as error:
            raise ModelError(f"{source} is not a chat completion, no reply was recorded: {error}") from error
        if not completion.choices:
            raise ModelError(f"{source} has no choices, no reply was recorded: {body!r}")
        choice = completion.choices[0]
        reply, reason = choice.message, choice.finish_reason
        logger.debug("model_id=<%s>, finish_reason=<%s> | chat completion replied", self.model, reason)
        if reply.refusal:
            raise ModelStopError(
                f"model '{self.model}' refused to answer, its refusal was not recorded: {reply.refusal!r}. "
                "Rephrase the request, or send a new prompt",
                "refusal",
            )
        if reason == "length":
            raise ModelStopError(
                f"model '{self.model}' reached its output token limit before it finished its reply "
                "(finish_reason length), the reply was not recorded: raise max_completion_tokens (or max_tokens) "
                "in OpenAIModel's parameters, or ask for a shorter answer",
                "max_tokens",
            )
        if reason == "content_filter":
            raise ModelStopError(
                f"the content filter of model '{self.model}' withheld its reply (finish_reason content_filter), "
                "the reply was not recorded: change the prompt, or review the deployment's content filter",
                "content_filtered",
            )
        if reason not in _FINISHED and reason not in _FINISHED_TOO:
            raise ModelStopError(
                f"model '{self.model}' stopped with finish_reason {reason!r}, which is neither an answer nor tool "
                "calls; the reply was not recorded: retry the turn",
                str(reason),
            )
        content: list[dict[str, Any]] = [{"text": reply.content}] if reply.content and reply.content.strip() else []
        content.extend({"toolUse": self._tool_use(call)} for call in reply.tool_calls or [])
        return check_assistant_message({"role": "assistant", "content": content}, source)

    def _tool_use(self, call: _ToolCall) -> dict[str, Any]:
        if call.type != "function" or call.function is None:
            raise ModelError(
                f"model '{self.model}' made a tool call of type {call.type!r} ('{call.id}'), and OpenAIModel offers "
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
                f"model '{self.model}' called tool '{call.function.name}' (tool call '{call.id}') with arguments "
                f"that are {problem} ({arguments!r}): no tool ran and the reply was not recorded; retrying the turn "
                "asks the model again"
            )
        return {"toolUseId": call.id, "name": call.function.name, "input": tool_input}

    def _server_message(self, error: APIStatusError) -> str:
        """The server's own words: the message of its error body (OpenAI, Azure, vLLM, LiteLLM, Ollama all
        send one), else what the SDK made of the reply; without the API key, and at most 1,000 characters."""
        body = error.body
        said = body.get("message") if isinstance(body, dict) else None
        return self._redact(said if isinstance(said, str) else error.message)[:1000]

    def _api_key_in_use(self) -> str | None:
        """The key the client sends: given, a given client's, or the one the SDK read from the environment."""
        client = self._client or self._given_client
        key = getattr(client, "api_key", None) if client is not None else self._api_key
        return key if isinstance(key, str) and key else None

    def _redact(self, text: str) -> str:
        key = self._api_key_in_use()
        return text.replace(key, "[API key]") if key else text

    def _cause(self, error: BaseException) -> BaseException | None:
        """``error`` as the cause of the turn's error, unless it shows the API key (a server that echoes it)."""
        key = self._api_key_in_use()
        return None if key and key in f"{error} {getattr(error, 'body', '')}" else error


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait a reply asks for, in seconds: ``retry-after-ms`` (Azure, OpenAI), else ``retry-after`` in
    seconds; None when it asks for none (an HTTP-date Retry-After is not read: the backoff applies)."""
    for header, per_second in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        try:
            seconds = float(value) / per_second if value is not None else None
        except ValueError:
            continue
        if seconds is not None and math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def _backoff(attempt: int) -> float:
    return min(FIRST_BACKOFF_SECONDS * 2.0 ** (attempt - 1), LONGEST_BACKOFF_SECONDS) * (1 - 0.25 * random.random())


def _overflows(error: APIStatusError, message: str) -> bool:
    body = error.body if isinstance(error.body, dict) else {}
    if error.code in _OVERFLOW_CODES or body.get("type") in _OVERFLOW_CODES:
        return True
    said = message.lower()
    return any(phrase in said for phrase in _OVERFLOW_PHRASES)


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

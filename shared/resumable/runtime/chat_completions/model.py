"""OpenAIModel: a model behind any server that speaks OpenAI's chat-completions API (OpenAI, Azure OpenAI,
vLLM, Ollama, LiteLLM), in the runtime's Converse shape."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from resumable.runtime.chat_completions.translation import chat_messages, chat_tool, converse_reply
from resumable.runtime.chat_completions.transport import sdk_client, send

if TYPE_CHECKING:
    from openai import OpenAI


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
            self._client = sdk_client(
                self.model, self._given_client, api_key=self._api_key, base_url=self.base_url, timeout=self.timeout
            )
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
        body = send(
            self.client,  # first: it says what to install when openai is not there
            request,
            model=self.model,
            params=self.params,
            max_retries=self.max_retries,
            max_wait=self.max_wait,
            sleep=self._sleep,
        )
        return converse_reply(body, self.model)

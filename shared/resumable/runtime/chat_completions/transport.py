"""How OpenAIModel reaches its server: the openai SDK's client, and the attempts of each request.

The SDK (``pip install 'resumable[openai]'``) is imported when the first call is made, never by ``import
resumable``. Retries are this module's own (the SDK's are turned off): bounded, with a jittered backoff,
honouring the server's Retry-After, through an injectable ``sleep``; which failures another attempt may
get past is resumable.runtime.models.failures'. The API key is never in an error or a log: the server's
words are shown without it, and an SDK error that shows it is not kept as the cause.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from resumable.exceptions import ModelError
from resumable.runtime.models.failures import chat_failure

if TYPE_CHECKING:
    from openai import APIStatusError, OpenAI

logger = logging.getLogger(__name__)

# Between attempts, when the server does not say how long to wait: 0.5 s, 1 s, 2 s ... at most 8 s, each up
# to a quarter shorter at random, so that functions throttled together do not all come back together.
FIRST_BACKOFF_SECONDS = 0.5
LONGEST_BACKOFF_SECONDS = 8.0


def sdk_client(
    model: str, given: OpenAI | None, *, api_key: str | None, base_url: str | None, timeout: float
) -> OpenAI:
    """The SDK's client for ``model`` (openai imported now), with the SDK's retries off: ``given``, else
    one built from ``api_key``, ``base_url`` and ``timeout``."""
    try:
        import openai
    except ImportError as error:
        raise ModelError(
            f"OpenAIModel for model '{model}' needs the openai package, which is not installed; "
            "nothing was sent: pip install 'resumable[openai]'"
        ) from error
    if given is not None:
        return given.with_options(max_retries=0)
    try:
        return openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)
    except openai.OpenAIError as error:
        raise ModelError(
            f"OpenAIModel for model '{model}' could not build its client, nothing was sent: "
            f"{error} (a local server such as vLLM or Ollama takes any key: api_key='unused')"
        ) from error


def send(
    client: OpenAI,
    request: dict[str, Any],
    *,
    model: str,
    params: Mapping[str, Any],
    max_retries: int,
    max_wait: float,
    sleep: Callable[[float], None],
) -> Any:
    """The JSON body of the server's reply, after at most ``max_retries`` more attempts (``params``: the
    model's own parameters, named when the SDK refuses one)."""
    import openai

    key = _api_key(client)
    attempts = max_retries + 1
    for attempt in range(1, attempts + 1):
        try:
            raw = client.chat.completions.with_raw_response.create(**request)
        except TypeError as error:
            raise ModelError(
                f"OpenAIModel for model '{model}' has parameters the SDK does not take "
                f"({sorted(params)}): {error}; nothing was sent. A server's own parameters go in "
                "extra_body={...}"
            ) from error
        except openai.APIStatusError as error:
            wait = _retry_wait(error, attempt, model, f"the server at {client.base_url}", max_wait, key)
            failure = f"HTTP {error.status_code}: {_server_message(error, key)}"
            cause: openai.APIError = error
        except openai.APIConnectionError as error:  # APITimeoutError too
            wait = _backoff(attempt)
            failure = f"{error.message} {error.__cause__ or ''}".strip()
            cause = error
        except openai.OpenAIError as error:
            raise ModelError(
                f"the chat completion of model '{model}' failed, no reply was recorded: {_redact(str(error), key)}"
            ) from _cause(error, key)
        else:
            try:
                return raw.http_response.json()
            except ValueError as error:
                raise ModelError(
                    f"the server at {client.base_url} replied to model '{model}' with something that is "
                    f"not JSON, no reply was recorded: {error}"
                ) from error
        if attempt == attempts:
            break
        logger.warning(
            "model_id=<%s>, attempt=<%d>, wait_seconds=<%.3f> | chat completion failed (%s), trying again",
            model,
            attempt,
            wait,
            failure,
        )
        sleep(wait)
    raise ModelError(
        f"the chat completion of model '{model}' at {client.base_url} failed on all {attempts} attempt(s), "
        f"no reply was recorded (last: {failure}): retry the turn later, or give OpenAIModel more max_retries "
        f"(now {max_retries})"
    ) from _cause(cause, key)


def _retry_wait(error: APIStatusError, attempt: int, model: str, where: str, max_wait: float, key: str | None) -> float:
    """How long to wait before the next attempt; raises the turn's error when another attempt cannot help."""
    message = _server_message(error, key)
    refused = chat_failure(error, model, where, message)
    if refused is not None:
        raise refused from _cause(error, key)
    asked = retry_after(error.response.headers)
    if asked is not None and asked > max_wait:
        raise ModelError(
            f"{where} asked to wait {asked:g} s before model '{model}' is tried again (HTTP {error.status_code}, "
            f"Retry-After), longer than this OpenAIModel waits (max_wait={max_wait:g} s); no reply was "
            f"recorded: retry the turn later. {message}"
        ) from _cause(error, key)
    return _backoff(attempt) if asked is None else asked


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


def _api_key(client: OpenAI) -> str | None:
    """The key the client sends: given, a given client's, or the one the SDK read from the environment."""
    key = getattr(client, "api_key", None)
    return key if isinstance(key, str) and key else None


def _server_message(error: APIStatusError, key: str | None) -> str:
    """The server's own words: the message of its error body (OpenAI, Azure, vLLM, LiteLLM, Ollama all
    send one), else what the SDK made of the reply; without the API key, and at most 1,000 characters."""
    body = error.body
    said = body.get("message") if isinstance(body, dict) else None
    return _redact(said if isinstance(said, str) else error.message, key)[:1000]


def _redact(text: str, key: str | None) -> str:
    return text.replace(key, "[API key]") if key else text


def _cause(error: BaseException, key: str | None) -> BaseException | None:
    """``error`` as the cause of the turn's error, unless it shows the API key (a server that echoes it)."""
    return None if key and key in f"{error} {getattr(error, 'body', '')}" else error

"""OpenAIModel against a fake chat-completions server on 127.0.0.1 that speaks the real wire format.

The replies are the shapes OpenAI's API sends (and vLLM, LiteLLM and llama.cpp for their context-window
errors), so the openai SDK runs all of its own code. Each test checks what the server received (the exact
messages and tools, the tool_call_id pairing, the Authorization header) as well as what the model returned
or raised. Waits between attempts go to an injected ``sleep`` that only records them: no test sleeps.
"""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from resumable import Agent, OpenAIModel, tool
from resumable.exceptions import ContextWindowOverflowError, ModelError, ModelStopError
from resumable.runtime.chat_completions import FIRST_BACKOFF_SECONDS
from tests.agents import get_weather
from tests.fake_http import FakeServer, Reply

MODEL = "gpt-4.1-mini"
API_KEY = "sk-test-4f9a1c7e2b"


def completion(message: dict[str, Any], finish_reason: str = "stop") -> dict[str, Any]:
    """A chat completion as OpenAI's API sends it, around ``message``."""
    return {
        "id": "chatcmpl-BQ3z8nVkq1rX0bCwQ2k9sYp7LmT4e",
        "object": "chat.completion",
        "created": 1745860000,
        "model": "gpt-4.1-mini-2025-04-14",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": 82,
            "completion_tokens": 17,
            "total_tokens": 99,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": "fp_6f2eabb9a5",
    }


def assistant(content: str | None = None, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None, "annotations": []}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return message


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def error_body(message: str, kind: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


TEXT = Reply(200, completion(assistant("It is sunny in Paris.")))
TOOL_CALL = Reply(
    200,
    completion(assistant(None, [tool_call("call_Wq2Zk1", "get_weather", '{"city":"Paris","days":2}')]), "tool_calls"),
)
PARALLEL_TOOL_CALLS = Reply(
    200,
    completion(
        assistant(
            None,
            [
                tool_call("call_a1", "get_weather", '{"city":"Paris"}'),
                tool_call("call_b2", "get_weather", '{"city":"Oslo","days":3}'),
            ],
        ),
        "tool_calls",
    ),
)
REFUSAL = Reply(
    200, completion({**assistant(None), "refusal": "I'm sorry, but I can't help with that request."}, "stop")
)
LENGTH = Reply(200, completion(assistant("The forecast for the next fourteen days is as follows: on"), "length"))
CONTENT_FILTER = Reply(200, completion(assistant(None), "content_filter"))
RATE_LIMITED = error_body(
    "Rate limit reached for gpt-4.1-mini in organization org-x1 on tokens per min (TPM): Limit 200000, Used 199652, "
    "Requested 1022. Please try again in 201ms. Visit https://platform.openai.com/account/rate-limits to learn more.",
    "tokens",
    "rate_limit_exceeded",
)
SERVER_ERROR = Reply(
    500,
    error_body("The server had an error while processing your request. Sorry about that!", "server_error", None),
)
CONTEXT_WINDOW_ERRORS = {
    "openai": Reply(
        400,
        error_body(
            "This model's maximum context length is 1047576 tokens. However, your messages resulted in 1050211 "
            "tokens. Please reduce the length of the messages.",
            "invalid_request_error",
            "context_length_exceeded",
            "messages",
        ),
    ),
    "vllm": Reply(
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 8192 tokens. However, you requested 9216 tokens "
            "(8192 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    "litellm": Reply(
        400,
        error_body(
            "litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: "
            "OpenAIException - This model's maximum context length is 128000 tokens.",
            "None",
            "400",
        ),
    ),
    "llama.cpp": Reply(
        400,
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 5120,
                "n_ctx": 4096,
            }
        },
    ),
}


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Look up the weather forecast for a city.",
        "parameters": get_weather.input_schema,
    },
}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def waits() -> list[float]:
    """The waits the model asked for between attempts (its injected sleep records them, and returns at once)."""
    return []


def model_of(server: FakeServer, waits: list[float], **options: Any) -> OpenAIModel:
    return OpenAIModel(MODEL, base_url=f"{server.url}/v1", api_key=API_KEY, sleep=waits.append, **options)


def test_request_carries_the_system_prompt_the_conversation_and_the_tools_as_chat_completions_messages(
    server: FakeServer, waits: list[float]
) -> None:
    server.reply(TEXT)
    conversation = [
        {"role": "user", "content": [{"text": "Weather in Paris and Oslo?"}, {"text": "Be brief."}]},
        {
            "role": "assistant",
            "content": [
                {"text": "Checking both."},
                {"toolUse": {"toolUseId": "call_a1", "name": "get_weather", "input": {"city": "Paris"}}},
                {"toolUse": {"toolUseId": "call_b2", "name": "get_weather", "input": {"city": "Oslo", "days": 3}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "call_a1", "status": "success", "content": [{"json": {"sky": "clear"}}]}},
                {
                    "toolResult": {
                        "toolUseId": "call_b2",
                        "status": "error",
                        "content": [{"text": "DENIED: a person denied this call."}],
                    }
                },
                {"text": "And tomorrow?"},
            ],
        },
    ]

    model_of(server, waits, temperature=0, max_completion_tokens=256).converse(
        conversation, "You forecast the weather.", [get_weather.spec]
    )

    [request] = server.received
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body == {
        "model": MODEL,
        "temperature": 0,
        "max_completion_tokens": 256,
        "messages": [
            {"role": "system", "content": "You forecast the weather."},
            {"role": "user", "content": "Weather in Paris and Oslo?\nBe brief."},
            {
                "role": "assistant",
                "content": "Checking both.",
                "tool_calls": [
                    tool_call("call_a1", "get_weather", '{"city": "Paris"}'),
                    tool_call("call_b2", "get_weather", '{"city": "Oslo", "days": 3}'),
                ],
            },
            {"role": "tool", "tool_call_id": "call_a1", "content": '{"sky": "clear"}'},
            {"role": "tool", "tool_call_id": "call_b2", "content": "ERROR: DENIED: a person denied this call."},
            {"role": "user", "content": "And tomorrow?"},
        ],
        "tools": [WEATHER_TOOL],
    }


def test_request_without_system_prompt_or_tools_sends_neither(server: FakeServer, waits: list[float]) -> None:
    server.reply(TEXT)

    model_of(server, waits).converse([user("Hi")], None, [])

    assert server.received[0].body == {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]}


def test_text_reply_becomes_a_converse_text_message(server: FakeServer, waits: list[float]) -> None:
    server.reply(TEXT)

    reply = model_of(server, waits).converse([user("Weather in Paris?")], None, [])

    assert reply == {"role": "assistant", "content": [{"text": "It is sunny in Paris."}]}


def test_tool_call_reply_becomes_a_tool_use_block_with_its_arguments_parsed(
    server: FakeServer, waits: list[float]
) -> None:
    server.reply(TOOL_CALL)

    reply = model_of(server, waits).converse([user("Weather in Paris?")], None, [get_weather.spec])

    assert reply == {
        "role": "assistant",
        "content": [
            {"toolUse": {"toolUseId": "call_Wq2Zk1", "name": "get_weather", "input": {"city": "Paris", "days": 2}}}
        ],
    }


def test_parallel_tool_calls_become_tool_use_blocks_in_their_order(server: FakeServer, waits: list[float]) -> None:
    server.reply(PARALLEL_TOOL_CALLS)

    reply = model_of(server, waits).converse([user("Paris and Oslo?")], None, [get_weather.spec])

    assert [block["toolUse"] for block in reply["content"]] == [
        {"toolUseId": "call_a1", "name": "get_weather", "input": {"city": "Paris"}},
        {"toolUseId": "call_b2", "name": "get_weather", "input": {"city": "Oslo", "days": 3}},
    ]


def test_an_agent_runs_the_tools_the_model_called_and_sends_each_result_paired_by_tool_call_id(
    server: FakeServer, waits: list[float]
) -> None:
    server.reply(PARALLEL_TOOL_CALLS, TEXT)
    agent = Agent(name="forecaster", model=model_of(server, waits), tools=[get_weather], system_prompt="You forecast.")

    result = agent("Paris and Oslo?")

    assert (result.stop_reason, result.text) == ("end_turn", "It is sunny in Paris.")
    first, second = server.received
    assert first.body["tools"] == second.body["tools"] == [WEATHER_TOOL]
    assert second.body["messages"] == [
        {"role": "system", "content": "You forecast."},
        {"role": "user", "content": "Paris and Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                tool_call("call_a1", "get_weather", '{"city": "Paris"}'),
                tool_call("call_b2", "get_weather", '{"city": "Oslo", "days": 3}'),
            ],
        },
        {"role": "tool", "tool_call_id": "call_a1", "content": '{"city": "Paris", "forecast": ["sunny"]}'},
        {
            "role": "tool",
            "tool_call_id": "call_b2",
            "content": '{"city": "Oslo", "forecast": ["sunny", "sunny", "sunny"]}',
        },
    ]
    assert agent.messages[-1] == {"role": "assistant", "content": [{"text": "It is sunny in Paris."}]}
    assert waits == []


@pytest.mark.parametrize(
    ("reply", "stop_reason", "says"),
    [
        (REFUSAL, "refusal", "I'm sorry, but I can't help with that request."),
        (LENGTH, "max_tokens", "raise max_completion_tokens"),
        (CONTENT_FILTER, "content_filtered", "content filter"),
        (Reply(200, completion(assistant("Half an"), "abort")), "abort", "finish_reason 'abort'"),
    ],
    ids=["refusal", "length", "content_filter", "unknown"],
)
def test_a_reply_that_is_no_answer_fails_the_turn_with_its_stop_reason_and_records_nothing(
    server: FakeServer, waits: list[float], reply: Reply, stop_reason: str, says: str
) -> None:
    server.reply(reply)
    agent = Agent(name="forecaster", model=model_of(server, waits), tools=[get_weather])

    with pytest.raises(ModelStopError, match="not recorded") as caught:
        agent("Weather in Paris?")

    assert caught.value.stop_reason == stop_reason
    assert says in str(caught.value)
    assert agent.messages == [user("Weather in Paris?")]
    assert len(server.received) == 1


@pytest.mark.parametrize(
    ("headers", "asked"),
    [({"retry-after": "0"}, 0.0), ({"retry-after": "7"}, 7.0), ({"retry-after-ms": "1500", "retry-after": "2"}, 1.5)],
    ids=["retry-after-0", "retry-after-7", "retry-after-ms"],
)
def test_a_429_is_tried_again_after_the_wait_its_retry_after_asks(
    server: FakeServer, waits: list[float], headers: dict[str, str], asked: float
) -> None:
    server.reply(Reply(429, RATE_LIMITED, headers), TEXT)

    reply = model_of(server, waits).converse([user("Weather in Paris?")], None, [])

    assert reply == {"role": "assistant", "content": [{"text": "It is sunny in Paris."}]}
    assert waits == [asked]
    assert [r.body for r in server.received] == [server.received[0].body] * 2


def test_a_500_is_tried_again_after_a_backoff_and_its_reply_returned(server: FakeServer, waits: list[float]) -> None:
    server.reply(SERVER_ERROR, SERVER_ERROR, TEXT)

    reply = model_of(server, waits).converse([user("Weather in Paris?")], None, [])

    assert reply["content"] == [{"text": "It is sunny in Paris."}]
    assert len(waits) == 2
    first, second = waits
    assert 0.75 * FIRST_BACKOFF_SECONDS <= first <= FIRST_BACKOFF_SECONDS
    assert 1.5 * FIRST_BACKOFF_SECONDS <= second <= 2 * FIRST_BACKOFF_SECONDS


def test_a_500_every_time_fails_after_max_retries_saying_how_many_attempts_and_that_nothing_was_recorded(
    server: FakeServer, waits: list[float]
) -> None:
    server.reply(SERVER_ERROR, SERVER_ERROR, SERVER_ERROR)
    agent = Agent(name="forecaster", model=model_of(server, waits, max_retries=2))

    with pytest.raises(ModelError, match=r"failed on all 3 attempt\(s\), no reply was recorded") as caught:
        agent("Weather in Paris?")

    assert "HTTP 500: The server had an error while processing your request" in str(caught.value)
    assert not isinstance(caught.value, ContextWindowOverflowError | ModelStopError)
    assert len(server.received) == 3
    assert len(waits) == 2
    assert agent.messages == [user("Weather in Paris?")]


def test_max_retries_zero_makes_one_attempt(server: FakeServer, waits: list[float]) -> None:
    server.reply(Reply(429, RATE_LIMITED, {"retry-after": "1"}))

    with pytest.raises(ModelError, match=r"all 1 attempt\(s\)"):
        model_of(server, waits, max_retries=0).converse([user("Hi")], None, [])

    assert (len(server.received), waits) == (1, [])


def test_a_retry_after_longer_than_max_wait_is_not_waited_for(server: FakeServer, waits: list[float]) -> None:
    server.reply(Reply(429, RATE_LIMITED, {"retry-after": "21"}))

    with pytest.raises(ModelError, match=r"wait 21 s .* \(max_wait=20 s\)") as caught:
        model_of(server, waits).converse([user("Hi")], None, [])

    assert "no reply was recorded" in str(caught.value)
    assert (len(server.received), waits) == (1, [])


def test_a_429_for_an_exhausted_quota_is_not_tried_again(server: FakeServer, waits: list[float]) -> None:
    quota = error_body(
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        "insufficient_quota",
    )
    server.reply(Reply(429, quota))

    with pytest.raises(ModelError, match="out of quota") as caught:
        model_of(server, waits).converse([user("Hi")], None, [])

    assert "check your plan and billing details" in str(caught.value)
    assert (len(server.received), waits) == (1, [])


@pytest.mark.parametrize("server_kind", sorted(CONTEXT_WINDOW_ERRORS))
def test_a_context_window_error_of_each_server_raises_context_window_overflow_error_at_once(
    server: FakeServer, waits: list[float], server_kind: str
) -> None:
    server.reply(CONTEXT_WINDOW_ERRORS[server_kind])
    agent = Agent(name="forecaster", model=model_of(server, waits))

    with pytest.raises(ContextWindowOverflowError, match="longer than its context window") as caught:
        agent("A very long question")

    assert "no reply was recorded" in str(caught.value)
    assert (len(server.received), waits) == (1, [])
    assert agent.messages == [user("A very long question")]


def test_a_400_that_is_not_about_the_context_window_is_a_plain_model_error(
    server: FakeServer, waits: list[float]
) -> None:
    server.reply(
        Reply(
            400,
            error_body(
                "Invalid schema for function 'get_weather': 'integer' is not valid under any of the given schemas.",
                "invalid_request_error",
                "invalid_function_parameters",
                "tools[0].function.parameters",
            ),
        )
    )

    with pytest.raises(ModelError, match="HTTP 400") as caught:
        model_of(server, waits).converse([user("Hi")], None, [get_weather.spec])

    assert type(caught.value) is ModelError
    assert "Invalid schema for function 'get_weather'" in str(caught.value)
    assert (len(server.received), waits) == (1, [])


def test_a_401_fails_at_once_with_the_servers_message_and_never_shows_the_api_key(
    server: FakeServer, waits: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    # A proxy that echoes the whole key back (OpenAI itself shows only its last four characters).
    server.reply(
        Reply(
            401,
            error_body(
                f"Incorrect API key provided: {API_KEY}. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                "invalid_api_key",
            ),
        )
    )
    caplog.set_level(logging.DEBUG)

    with pytest.raises(ModelError, match="HTTP 401") as caught:
        model_of(server, waits).converse([user("Hi")], None, [])

    assert "Incorrect API key provided: [API key]." in str(caught.value)
    assert API_KEY not in str(caught.value)
    assert caught.value.__cause__ is None  # the SDK's error carries the key in its message: it is left out
    assert API_KEY not in caplog.text
    assert (len(server.received), waits) == (1, [])


def test_a_key_the_sdk_read_from_the_environment_is_never_shown_either(
    server: FakeServer, waits: list[float], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    server.reply(Reply(500, error_body(f"upstream rejected key {API_KEY}", "server_error", None)))
    server.reply(Reply(401, error_body(f"Incorrect API key provided: {API_KEY}.", "invalid_request_error", None)))
    caplog.set_level(logging.DEBUG)

    with pytest.raises(ModelError, match="HTTP 401") as caught:
        OpenAIModel(MODEL, base_url=f"{server.url}/v1", sleep=waits.append).converse([user("Hi")], None, [])

    assert "[API key]" in str(caught.value)
    assert API_KEY not in str(caught.value)
    assert caught.value.__cause__ is None
    assert API_KEY not in caplog.text


@pytest.mark.parametrize("finish_reason", ["eos", "eos_token", "end"])
def test_a_finish_reason_some_servers_give_a_finished_answer_is_an_answer(
    server: FakeServer, waits: list[float], finish_reason: str
) -> None:
    server.reply(Reply(200, completion(assistant("Sunny."), finish_reason)))
    assert model_of(server, waits).converse([user("Weather?")], None, []) == {
        "role": "assistant",
        "content": [{"text": "Sunny."}],
    }


def test_a_server_that_cannot_be_reached_is_tried_again_then_fails_saying_how_many_attempts(
    waits: list[float],
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIModel(
        MODEL, base_url=f"http://127.0.0.1:{port}/v1", api_key=API_KEY, max_retries=1, sleep=waits.append
    )

    with pytest.raises(
        ModelError, match=r"failed on all 2 attempt\(s\), no reply was recorded \(last: Connection error"
    ):
        model.converse([user("Hi")], None, [])

    assert len(waits) == 1


def test_tool_arguments_that_are_not_a_json_object_fail_the_turn_naming_the_call_and_run_no_tool(
    server: FakeServer, waits: list[float]
) -> None:
    ran: list[str] = []

    @tool
    def delete_record(name: str) -> str:
        """Delete a record."""
        ran.append(name)
        return f"deleted {name}"

    server.reply(
        Reply(200, completion(assistant(None, [tool_call("call_x9", "delete_record", '{"name": "prod')]), "tool_calls"))
    )
    agent = Agent(name="ops", model=model_of(server, waits), tools=[delete_record])

    with pytest.raises(ModelError, match="called tool 'delete_record' \\(tool call 'call_x9'\\)") as caught:
        agent("delete prod")

    assert "not JSON" in str(caught.value)
    assert "no tool ran and the reply was not recorded" in str(caught.value)
    assert ran == []
    assert agent.messages == [user("delete prod")]


def test_a_block_a_chat_server_cannot_carry_is_refused_before_anything_is_sent(
    server: FakeServer, waits: list[float]
) -> None:
    image = {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}}
    agent = Agent(name="viewer", model=model_of(server, waits))

    with pytest.raises(ModelError, match=r"has a block of kind image.*nothing was sent"):
        agent([{"text": "What is in this picture?"}, image])

    assert server.received == []


def test_an_azure_openai_client_reaches_its_deployment_with_its_api_key_header(
    server: FakeServer, waits: list[float]
) -> None:
    from openai import AzureOpenAI

    azure = AzureOpenAI(azure_endpoint=server.url, api_key="azure-key-1", api_version="2024-10-21", max_retries=5)
    server.reply(SERVER_ERROR, TEXT)

    reply = OpenAIModel("weather-deployment", client=azure, max_retries=1, sleep=waits.append).converse(
        [user("Hi")], None, []
    )

    assert reply["content"] == [{"text": "It is sunny in Paris."}]
    deployment = "/openai/deployments/weather-deployment/chat/completions?api-version=2024-10-21"
    assert [(r.path, r.headers["api-key"]) for r in server.received] == [(deployment, "azure-key-1")] * 2
    assert len(waits) == 1  # the model's own retries, the client's five turned off


def test_constructing_refuses_a_client_beside_base_url_and_parameters_the_model_sets_itself() -> None:
    with pytest.raises(ValueError, match="not both"):
        OpenAIModel(MODEL, base_url="http://127.0.0.1:1/v1", client=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="does not stream"):
        OpenAIModel(MODEL, stream=True)
    with pytest.raises(ValueError, match=r"\['tools'\]"):
        OpenAIModel(MODEL, tools=[])


def test_a_parameter_the_sdk_does_not_take_fails_saying_nothing_was_sent(
    server: FakeServer, waits: list[float]
) -> None:
    with pytest.raises(ModelError, match=r"nothing was sent.*extra_body"):
        model_of(server, waits, top_kk=5).converse([user("Hi")], None, [])

    assert server.received == []


def test_without_an_api_key_the_call_fails_saying_nothing_was_sent(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(ModelError, match="could not build its client, nothing was sent"):
        OpenAIModel(MODEL, base_url=f"{server.url}/v1").converse([user("Hi")], None, [])

    assert server.received == []


def test_without_the_openai_package_the_call_fails_saying_what_to_install(
    server: FakeServer, waits: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # import openai now raises ImportError

    with pytest.raises(ModelError, match=r"nothing was sent: pip install 'resumable\[openai\]'"):
        model_of(server, waits).converse([user("Hi")], None, [])

    assert server.received == []

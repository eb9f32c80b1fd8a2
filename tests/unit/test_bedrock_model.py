"""BedrockModel against botocore's Stubber: every request and reply is checked against the real service model.

No network: the client has fake credentials and every call is answered by the Stubber. ``expected_params``
makes the Stubber fail the call if the request differs in any key from the one written here. The Stubber
answers before botocore's retries, so the retries of the client BedrockModel builds are tested against a
fake Bedrock on 127.0.0.1 (tests/fake_http.py) instead, in Bedrock's wire format.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from resumable import Agent, BedrockModel
from resumable.exceptions import ContextWindowOverflowError, ModelError, ModelStopError
from resumable.runtime.models import bedrock
from tests.agents import get_weather
from tests.fake_http import FakeServer, Reply

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient

MODEL_ID = "anthropic.claude-3-haiku-20240307-v1:0"


def converse_response(message: dict[str, Any], stop_reason: str = "end_turn") -> dict[str, Any]:
    """A complete Converse response carrying ``message`` (the Stubber rejects incomplete ones)."""
    return {
        "output": {"message": message},
        "stopReason": stop_reason,
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
        "metrics": {"latencyMs": 42},
    }


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


@pytest.fixture
def client() -> BedrockRuntimeClient:
    return boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


@pytest.fixture
def stubber(client: BedrockRuntimeClient) -> Iterator[Stubber]:
    with Stubber(client) as stub:
        yield stub


def test_converse_request_carries_model_id_messages_system_tool_config_and_inference_config(
    client: BedrockRuntimeClient, stubber: Stubber
) -> None:
    model = BedrockModel(MODEL_ID, client=client, max_tokens=256, temperature=0.0)
    messages = [user("What is the weather in Paris?")]
    stubber.add_response(
        "converse",
        converse_response({"role": "assistant", "content": [{"text": "Sunny."}]}),
        expected_params={
            "modelId": MODEL_ID,
            "messages": [user("What is the weather in Paris?")],
            "system": [{"text": "You are a terse forecaster."}],
            "toolConfig": {
                "tools": [
                    {
                        "toolSpec": {
                            "name": "get_weather",
                            "description": "Look up the weather forecast for a city.",
                            "inputSchema": {"json": get_weather.input_schema},
                        }
                    }
                ]
            },
            "inferenceConfig": {"maxTokens": 256, "temperature": 0.0},
        },
    )

    reply = model.converse(messages, "You are a terse forecaster.", [get_weather.spec])

    assert reply == {"role": "assistant", "content": [{"text": "Sunny."}]}
    stubber.assert_no_pending_responses()


def test_converse_request_omits_system_tool_config_and_inference_config_when_unset(
    client: BedrockRuntimeClient, stubber: Stubber
) -> None:
    stubber.add_response(
        "converse",
        converse_response({"role": "assistant", "content": [{"text": "Hello."}]}),
        expected_params={"modelId": MODEL_ID, "messages": [user("Hi")]},
    )

    BedrockModel(MODEL_ID, client=client).converse([user("Hi")], None, [])

    stubber.assert_no_pending_responses()


def test_snake_case_inference_config_keys_become_camel_case_and_camel_case_keys_pass_unchanged(
    client: BedrockRuntimeClient, stubber: Stubber
) -> None:
    model = BedrockModel(MODEL_ID, client=client, max_tokens=64, top_p=0.9, stop_sequences=["END"], temperature=0.5)
    assert model.inference_config == {"maxTokens": 64, "topP": 0.9, "stopSequences": ["END"], "temperature": 0.5}
    stubber.add_response(
        "converse",
        converse_response({"role": "assistant", "content": [{"text": "Hello."}]}),
        expected_params={
            "modelId": MODEL_ID,
            "messages": [user("Hi")],
            "inferenceConfig": {"maxTokens": 64, "topP": 0.9, "stopSequences": ["END"], "temperature": 0.5},
        },
    )

    model.converse([user("Hi")], None, [])

    stubber.assert_no_pending_responses()
    assert BedrockModel(MODEL_ID, client=client, maxTokens=10).inference_config == {"maxTokens": 10}


def test_tool_use_reply_is_returned_as_the_assistant_message(client: BedrockRuntimeClient, stubber: Stubber) -> None:
    message = {
        "role": "assistant",
        "content": [
            {"text": "Let me check."},
            {"toolUse": {"toolUseId": "tooluse-1", "name": "get_weather", "input": {"city": "Paris", "days": 2}}},
        ],
    }
    stubber.add_response("converse", converse_response(message, stop_reason="tool_use"))

    reply = BedrockModel(MODEL_ID, client=client).converse([user("Weather?")], None, [get_weather.spec])

    assert reply == message
    stubber.assert_no_pending_responses()


def test_agent_turn_sends_the_tool_result_it_produced_back_to_bedrock(
    client: BedrockRuntimeClient, stubber: Stubber
) -> None:
    tool_call = {
        "role": "assistant",
        "content": [{"toolUse": {"toolUseId": "tooluse-1", "name": "get_weather", "input": {"city": "Paris"}}}],
    }
    tool_result_message = {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": "tooluse-1",
                    "status": "success",
                    "content": [{"json": {"city": "Paris", "forecast": ["sunny"]}}],
                }
            }
        ],
    }
    final = {"role": "assistant", "content": [{"text": "Sunny in Paris."}]}
    common = {
        "modelId": MODEL_ID,
        "system": [{"text": "You forecast the weather."}],
        "toolConfig": {"tools": [{"toolSpec": get_weather.spec}]},
        "inferenceConfig": {"maxTokens": 256},
    }
    stubber.add_response(
        "converse",
        converse_response(tool_call, stop_reason="tool_use"),
        expected_params={**common, "messages": [user("Weather in Paris?")]},
    )
    stubber.add_response(
        "converse",
        converse_response(final),
        expected_params={**common, "messages": [user("Weather in Paris?"), tool_call, tool_result_message]},
    )
    agent = Agent(
        name="forecaster",
        model=BedrockModel(MODEL_ID, client=client, max_tokens=256),
        tools=[get_weather],
        system_prompt="You forecast the weather.",
    )

    result = agent("Weather in Paris?")

    assert (result.stop_reason, result.text) == ("end_turn", "Sunny in Paris.")
    assert agent.messages == [user("Weather in Paris?"), tool_call, tool_result_message, final]
    stubber.assert_no_pending_responses()


def test_client_error_raises_model_error_naming_the_model_id(client: BedrockRuntimeClient, stubber: Stubber) -> None:
    stubber.add_client_error(
        "converse",
        service_error_code="ThrottlingException",
        service_message="Too many requests, please wait before trying again.",
        http_status_code=429,
        expected_params={"modelId": MODEL_ID, "messages": [user("Hi")]},
    )

    with pytest.raises(ModelError, match=f"'{MODEL_ID}'") as caught:
        BedrockModel(MODEL_ID, client=client).converse([user("Hi")], None, [])

    assert "ThrottlingException" in str(caught.value)
    # The cause is the service error itself, not a Stubber assertion about a wrong request (also a BotoCoreError).
    assert isinstance(caught.value.__cause__, ClientError)
    assert caught.value.__cause__.response["Error"]["Code"] == "ThrottlingException"
    stubber.assert_no_pending_responses()


def test_client_error_propagates_out_of_the_agent_call_and_records_no_reply(
    client: BedrockRuntimeClient, stubber: Stubber
) -> None:
    stubber.add_client_error("converse", service_error_code="ThrottlingException", http_status_code=429)
    agent = Agent(name="forecaster", model=BedrockModel(MODEL_ID, client=client), tools=[get_weather])

    with pytest.raises(ModelError, match=f"'{MODEL_ID}'") as caught:
        agent("Weather in Paris?")

    assert isinstance(caught.value.__cause__, ClientError)
    assert agent.messages == [user("Weather in Paris?")]
    stubber.assert_no_pending_responses()


def test_reply_without_content_raises_model_error(client: BedrockRuntimeClient, stubber: Stubber) -> None:
    stubber.add_response("converse", converse_response({"role": "assistant", "content": []}))

    with pytest.raises(ModelError, match=f"'{MODEL_ID}' has no content blocks"):
        BedrockModel(MODEL_ID, client=client).converse([user("Hi")], None, [])

    stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("stop_reason", "says"),
    [
        ("max_tokens", "raise max_tokens (BedrockModel(..., max_tokens=n), now 256)"),
        ("guardrail_intervened", "check the guardrail's configuration and its trace"),
        ("content_filtered", "review the model's content filtering"),
        ("malformed_model_output", "retry the turn"),
        ("malformed_tool_use", "no tool ran"),
    ],
    ids=["max_tokens", "guardrail_intervened", "content_filtered", "malformed_model_output", "malformed_tool_use"],
)
def test_a_stop_reason_that_is_no_answer_fails_the_turn_with_a_model_stop_error_and_records_nothing(
    client: BedrockRuntimeClient, stubber: Stubber, stop_reason: str, says: str
) -> None:
    partial = {"role": "assistant", "content": [{"text": "The forecast for Paris is"}]}
    stubber.add_response("converse", converse_response(partial, stop_reason=stop_reason))
    agent = Agent(name="forecaster", model=BedrockModel(MODEL_ID, client=client, max_tokens=256), tools=[get_weather])

    with pytest.raises(
        ModelStopError, match=f"'{MODEL_ID}'.*\\(stopReason {stop_reason}\\), the reply was not recorded"
    ) as caught:
        agent("Weather in Paris?")

    assert caught.value.stop_reason == stop_reason
    assert says in str(caught.value)
    assert agent.messages == [user("Weather in Paris?")]
    stubber.assert_no_pending_responses()


def test_a_guardrails_intervention_says_what_the_guardrail_answered(
    client: BedrockRuntimeClient, stubber: Stubber
) -> None:
    blocked = {"role": "assistant", "content": [{"text": "Sorry, the model cannot answer this question."}]}
    stubber.add_response("converse", converse_response(blocked, stop_reason="guardrail_intervened"))

    with pytest.raises(
        ModelStopError, match=re.escape("The guardrail answered: 'Sorry, the model cannot answer this question.'")
    ):
        BedrockModel(MODEL_ID, client=client).converse([user("Hi")], None, [])


def test_the_stop_reasons_of_an_answer_return_it(client: BedrockRuntimeClient, stubber: Stubber) -> None:
    for stop_reason in ("end_turn", "stop_sequence"):
        stubber.add_response(
            "converse", converse_response({"role": "assistant", "content": [{"text": "Sunny."}]}, stop_reason)
        )
        assert BedrockModel(MODEL_ID, client=client).converse([user("Hi")], None, [])["content"] == [{"text": "Sunny."}]
    stubber.assert_no_pending_responses()


def test_a_context_window_stop_reason_raises_context_window_overflow_error(
    client: BedrockRuntimeClient, stubber: Stubber
) -> None:
    partial = {"role": "assistant", "content": [{"text": "The forecast"}]}
    stubber.add_response("converse", converse_response(partial, stop_reason="model_context_window_exceeded"))

    with pytest.raises(ContextWindowOverflowError, match="the reply was not recorded"):
        BedrockModel(MODEL_ID, client=client).converse([user("Hi")], None, [])


@pytest.mark.parametrize(
    "said",
    [
        "Input is too long for requested model.",
        "prompt is too long: 203470 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 142422 + 64000 > 204658, decrease input length or "
        "`max_tokens` and try again",
        "The model returned the following errors: too many total text bytes: 512000 > 500000",
    ],
    ids=["amazon", "anthropic-prompt", "anthropic-max-tokens", "text-bytes"],
)
def test_a_validation_exception_about_the_context_window_raises_context_window_overflow_error(
    client: BedrockRuntimeClient, stubber: Stubber, said: str
) -> None:
    stubber.add_client_error("converse", service_error_code="ValidationException", service_message=said)
    agent = Agent(name="forecaster", model=BedrockModel(MODEL_ID, client=client))

    with pytest.raises(ContextWindowOverflowError, match="longer than its context window, no reply was recorded"):
        agent("A very long question")

    assert agent.messages == [user("A very long question")]


def test_another_validation_exception_is_a_plain_model_error(client: BedrockRuntimeClient, stubber: Stubber) -> None:
    stubber.add_client_error(
        "converse",
        service_error_code="ValidationException",
        service_message="The provided model identifier is invalid.",
    )

    with pytest.raises(ModelError, match="model identifier is invalid") as caught:
        BedrockModel(MODEL_ID, client=client).converse([user("Hi")], None, [])

    assert type(caught.value) is ModelError


def test_throttling_past_the_retries_says_how_many_attempts_were_made_and_that_nothing_was_recorded(
    client: BedrockRuntimeClient, stubber: Stubber
) -> None:
    # What botocore's retries leave in the error after the last of 4 attempts.
    stubber.add_client_error(
        "converse",
        service_error_code="ThrottlingException",
        service_message="Too many requests, please wait before trying again.",
        http_status_code=429,
        response_meta={"RetryAttempts": 3},
    )

    with pytest.raises(ModelError, match=r"throttled model .* on all 4 attempt\(s\), no reply was recorded") as caught:
        BedrockModel(MODEL_ID, client=client).converse([user("Hi")], None, [])

    assert "Too many requests, please wait before trying again." in str(caught.value)


THROTTLED = Reply(
    429,
    {"message": "Too many requests, please wait before trying again."},
    {"x-amzn-ErrorType": "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"},
)


@pytest.fixture
def bedrock_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    """A fake Bedrock on 127.0.0.1 that the client BedrockModel builds is pointed at (its service-specific
    endpoint variable), with fake credentials and a fresh default session that reads them."""
    with FakeServer() as server:
        for name in [n for n in os.environ if n.startswith("AWS_")]:
            monkeypatch.delenv(name)
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url)
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
        monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
        monkeypatch.setattr(bedrock, "_made", [])  # (a session of its own: it reads the variables above)
        yield server


def test_the_client_it_builds_retries_in_standard_mode_three_times_unless_told_otherwise(
    bedrock_endpoint: FakeServer,
) -> None:
    assert BedrockModel(MODEL_ID).client.meta.config.retries == {"mode": "standard", "total_max_attempts": 4}
    adaptive = BedrockModel(MODEL_ID, max_retries=5, retry_mode="adaptive")
    assert adaptive.client.meta.config.retries == {"mode": "adaptive", "total_max_attempts": 6}


def test_the_client_it_builds_makes_one_attempt_when_told_no_retries(bedrock_endpoint: FakeServer) -> None:
    bedrock_endpoint.reply(THROTTLED, THROTTLED, THROTTLED, THROTTLED)

    with pytest.raises(ModelError, match=r"on all 1 attempt\(s\)"):
        BedrockModel(MODEL_ID, max_retries=0).converse([user("Hi")], None, [])

    assert [(r.method, r.path) for r in bedrock_endpoint.received] == [
        ("POST", f"/model/{MODEL_ID.replace(':', '%3A')}/converse")
    ]


def test_the_client_it_builds_tries_a_throttled_call_again_and_returns_the_reply(
    bedrock_endpoint: FakeServer,
) -> None:
    # botocore waits before its retry (up to 1 s at random, not injectable): the one test that really waits.
    bedrock_endpoint.reply(
        THROTTLED, Reply(200, converse_response({"role": "assistant", "content": [{"text": "Sunny."}]}))
    )

    reply = BedrockModel(MODEL_ID, max_retries=1).converse([user("Hi")], None, [])

    assert reply == {"role": "assistant", "content": [{"text": "Sunny."}]}
    assert len(bedrock_endpoint.received) == 2


def test_several_tool_uses_in_one_reply_each_run_and_their_results_go_back_together(
    client: BedrockRuntimeClient, stubber: Stubber
) -> None:
    agent = Agent(name="forecaster", model=BedrockModel(MODEL_ID, client=client), tools=[get_weather])
    uses = [
        {"toolUse": {"toolUseId": "tooluse-paris", "name": "get_weather", "input": {"city": "Paris"}}},
        {"toolUse": {"toolUseId": "tooluse-oslo", "name": "get_weather", "input": {"city": "Oslo", "days": 3}}},
    ]
    asked = {"role": "assistant", "content": [{"text": "Both, then."}, *uses]}
    stubber.add_response("converse", converse_response(asked, stop_reason="tool_use"))
    paris, oslo = {"city": "Paris", "forecast": ["sunny"]}, {"city": "Oslo", "forecast": ["sunny"] * 3}
    results = [
        {"toolResult": {"toolUseId": "tooluse-paris", "status": "success", "content": [{"json": paris}]}},
        {"toolResult": {"toolUseId": "tooluse-oslo", "status": "success", "content": [{"json": oslo}]}},
    ]
    stubber.add_response(
        "converse",
        converse_response({"role": "assistant", "content": [{"text": "Sunny in both."}]}),
        expected_params={
            "modelId": MODEL_ID,
            "messages": [user("Paris and Oslo?"), asked, {"role": "user", "content": results}],
            "toolConfig": {"tools": [{"toolSpec": get_weather.spec}]},
        },
    )

    result = agent("Paris and Oslo?")

    assert (result.stop_reason, result.text) == ("end_turn", "Sunny in both.")
    stubber.assert_no_pending_responses()


def test_a_model_the_function_may_not_invoke_fails_naming_the_model_and_the_parameter_that_grants_it(
    client: BedrockRuntimeClient, stubber: Stubber
) -> None:
    said = f"You don't have access to the model with the specified model ID {MODEL_ID}."
    stubber.add_client_error(
        "converse", service_error_code="AccessDeniedException", service_message=said, http_status_code=403
    )

    with pytest.raises(ModelError) as caught:
        BedrockModel(MODEL_ID, client=client).converse([user("Hi")], None, [])

    assert str(caught.value).startswith(f"Bedrock refused model '{MODEL_ID}' (AccessDeniedException), no reply was")
    assert "list it in BedrockModelIds" in str(caught.value) and said in str(caught.value)

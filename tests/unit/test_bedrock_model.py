"""BedrockModel against botocore's Stubber: every request and reply is checked against the real service model.

No network: the client has fake credentials and every call is answered by the Stubber. ``expected_params``
makes the Stubber fail the call if the request differs in any key from the one written here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from resumable import Agent, BedrockModel, tool
from resumable.exceptions import ModelError

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient

MODEL_ID = "anthropic.claude-3-haiku-20240307-v1:0"


@tool
def get_weather(city: str, days: int = 1) -> dict[str, Any]:
    """Look up the weather forecast for a city.

    Args:
        city: The city to look up.
        days: How many days ahead to forecast.
    """
    return {"city": city, "forecast": ["sunny"] * days}


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

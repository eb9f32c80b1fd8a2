"""How a durable function's submitter starts its turn by default: StartTurn invoked directly, for its
reply; a function error or a reply that is no Turn is raised, so the SDK runs the submitter again."""

from __future__ import annotations

import io
import json

import pytest
from botocore.stub import Stubber

from resumable.aws.lambdas import FunctionError, Lambdas
from resumable.config import Settings
from resumable.exceptions import AwsError
from resumable.integrations.durable import wait_for_turn

EVENT = {"sessionId": "s-1", "prompt": "p", "principal": "arn:aws:lambda:us-east-1:1:function:w", "callbackId": "YQ=="}


def _lambdas(payload: object, function_error: str | None = None) -> Lambdas:
    lambdas = Lambdas(Settings(region="us-east-1", access_key_id="k", secret_access_key="s"))
    stub = Stubber(lambdas.client)
    reply = {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(payload).encode())}
    if function_error:
        reply["FunctionError"] = function_error
    stub.add_response("invoke", reply, {"FunctionName": "StartTurn", "Payload": json.dumps(EVENT).encode()})
    stub.activate()
    return lambdas


def test_the_reply_of_start_turn_is_returned() -> None:
    assert _lambdas({"turn": {"turnId": "t"}, "waitSeconds": 5}).invoke("StartTurn", EVENT)["turn"] == {"turnId": "t"}


def test_a_function_error_is_raised_with_its_type_and_message() -> None:
    said = {"errorType": "TurnBusyError", "errorMessage": "session 's-1' has a turn that is not settled yet"}
    with pytest.raises(FunctionError, match="TurnBusyError: session 's-1'") as raised:
        _lambdas(said, "Unhandled").invoke("StartTurn", EVENT)
    assert raised.value.error_type == "TurnBusyError"


def test_a_reply_that_is_not_an_object_is_an_aws_error() -> None:
    with pytest.raises(AwsError, match="not a JSON object"):
        _lambdas(["no"]).invoke("StartTurn", EVENT)


def test_without_a_start_turn_function_wait_for_turn_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RESUMABLE_START_TURN_FUNCTION", raising=False)
    with pytest.raises(ValueError, match="set RESUMABLE_START_TURN_FUNCTION"):
        wait_for_turn(object(), "s-1", "p", principal=EVENT["principal"])
    with pytest.raises(ValueError, match="heartbeat_seconds is at least 300, not 60"):
        wait_for_turn(object(), "s-1", "p", principal=EVENT["principal"], function="StartTurn", heartbeat_seconds=60)

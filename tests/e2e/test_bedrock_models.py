"""The Bedrock models of BedrockModelIds, called by StartTurn and SubmitApproval as deployed (the demo's
factory with MODEL_ID, the first of them), against a fake Bedrock on 127.0.0.1 answering in Bedrock's
wire format: the calls are recorded for the permission check, which holds the roles to every listed
model; a model the function may not invoke fails the turn naming the model and the parameter."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from resumable.api.app import forget
from resumable.local.embedded_aws import embedded_aws
from resumable.local.functions import function_arn
from resumable.local.permissions.configurations import BEDROCK
from resumable.local.server import make_server
from resumable.runtime.models import bedrock
from tests.e2e.local_api import call
from tests.fake_http import FakeServer, Reply
from tests.unit.test_bedrock_model import converse_response

MODEL = BEDROCK[0]


@dataclass
class Served:
    url: str
    bedrock: FakeServer


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    name = f"bedrock-{uuid.uuid4().hex[:8]}"
    with (
        FakeServer() as fake,
        embedded_aws(table_name=name, bucket_name=name, event_bus_name=name) as settings,
        pytest.MonkeyPatch.context() as env,
    ):
        for variable, value in settings.environment().items():
            env.setenv(variable, value)
        env.setenv("CONTINUE_FUNCTION", function_arn("SubmitApprovalFunction"))
        env.setenv("AGENT_FACTORY", "resumable.demo_agents:build_demo_agents")
        env.setenv("BEDROCK_MODEL_IDS", ",".join(BEDROCK))
        env.setenv("MODEL_ID", MODEL)  # (the first of BedrockModelIds, as the template sets it)
        env.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", fake.url)
        env.setattr(bedrock, "_made", [])  # (a session of its own: it reads the variables above)
        forget()
        server = make_server(port=0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield Served(f"http://127.0.0.1:{server.server_address[1]}", fake)
        server.shutdown()
        server.server_close()
        forget()


def _says(*content: dict[str, Any], stop: str = "end_turn") -> Reply:
    return Reply(200, converse_response({"role": "assistant", "content": list(content)}, stop_reason=stop))


def _uses(tool_use_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": tool_use_id, "name": name, "input": tool_input}}


@pytest.mark.slow
def test_the_demo_on_bedrock_asks_through_start_turn_and_finishes_through_submit_approval(served: Served) -> None:
    served.bedrock.reply(
        _says(_uses("o-1", "db_admin", {"prompt": "delete prod-db"}), stop="tool_use"),  # the orchestrator
        _says(_uses("w-1", "delete_record", {"name": "bedrock-db"}), stop="tool_use"),  # db_admin
    )
    status, turn = call(served.url, "POST", "/sessions/bedrock-1/turns", {"prompt": "delete the bedrock-db record"})
    assert (status, turn["status"]) == (201, "waiting"), turn
    [question] = turn["interactions"]
    assert question["reason"]["input"] == {"name": "bedrock-db"}
    served.bedrock.reply(_says({"text": "bedrock-db is gone"}), _says({"text": "Done: bedrock-db is gone."}))
    path = f"/sessions/bedrock-1/turns/{turn['turnId']}/interactions/{question['requestId']}"
    status, done = call(served.url, "POST", path, {"response": {"decision": "approve"}})
    assert (status, done["status"], done["output"]) == (200, "completed", "Done: bedrock-db is gone.")
    model = MODEL.replace(":", "%3A")
    assert [r.path for r in served.bedrock.received[-4:]] == [f"/model/{model}/converse"] * 4


@pytest.mark.slow
def test_a_model_the_function_may_not_invoke_fails_the_turn_naming_it_and_the_parameter(served: Served) -> None:
    said = f"You don't have access to the model with the specified model ID {MODEL}."
    served.bedrock.reply(Reply(403, {"message": said}, {"x-amzn-ErrorType": "AccessDeniedException:http://internal"}))
    status, turn = call(served.url, "POST", "/sessions/bedrock-2/turns", {"prompt": "delete the test-db record"})
    assert (status, turn["status"]) == (201, "failed"), turn
    assert f"Bedrock refused model '{MODEL}' (AccessDeniedException)" in turn["error"]
    assert "list it in BedrockModelIds" in turn["error"] and said in turn["error"]

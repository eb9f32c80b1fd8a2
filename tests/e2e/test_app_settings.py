"""The application's settings and secrets (resumable.aws.app_settings), read by its agent factory in
StartTurn and SubmitApproval from SSM Parameter Store and Secrets Manager (the embedded AWS's), through
the local API: kept for their max age and read again after it, said by name and never by value in an
error, and nowhere among what the turn stored, published, logged or answered."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from resumable.api.app import forget
from resumable.aws import app_settings
from resumable.config import Settings
from resumable.local.app_values import LocalValues, put
from resumable.local.embedded_aws import embedded_aws
from resumable.local.functions import function_arn
from resumable.local.server import make_server
from tests.e2e.local_api import call

SECRET = f"tok-{uuid.uuid4().hex}"
PATH = "/team/orders"


@dataclass
class Served:
    url: str
    settings: Settings
    secret_arn: str

    def client(self, service: str) -> Any:
        return boto3.client(
            service,
            region_name=self.settings.region,
            endpoint_url=self.settings.endpoint_url,
            aws_access_key_id="embedded",
            aws_secret_access_key="embedded",
        )


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    name = f"app-{uuid.uuid4().hex[:8]}"
    with (
        embedded_aws(table_name=name, bucket_name=name, event_bus_name=name) as settings,
        pytest.MonkeyPatch.context() as env,
    ):
        aws = Served("", settings, "")
        aws.client("ssm").put_parameter(Name=f"{PATH}/GREETING", Value="hello", Type="String", Overwrite=True)
        aws.client("ssm").put_parameter(
            Name=f"{PATH}/UNUSED", Value="shown-nowhere", Type="SecureString", Overwrite=True
        )
        arn = put(LocalValues(secrets={"orders-api-token": SECRET}), settings)["APP_SECRETS"]
        for variable, value in settings.environment().items():
            env.setenv(variable, value)
        env.setenv("CONTINUE_FUNCTION", function_arn("SubmitApprovalFunction"))
        env.setenv("APP_SETTINGS_PATH", PATH)
        env.setenv("APP_SECRETS", arn)
        env.setenv("RESUMABLE_TEST_EXPECTED_TOKEN", SECRET)
        env.setenv("AGENT_FACTORY", "tests.factories:reads_app_settings")
        forget()
        server = make_server(port=0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield Served(f"http://127.0.0.1:{server.server_address[1]}", settings, arn)
        server.shutdown()
        server.server_close()
        forget()


@pytest.fixture(autouse=True)
def a_new_process() -> None:
    """Each request of a test in a process of its own: nothing read before is kept."""
    app_settings._providers.clear()


def _answer(url: str, turn: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    [question] = turn["interactions"]
    path = f"/sessions/{turn['sessionId']}/turns/{turn['turnId']}/interactions/{question['requestId']}"
    return call(url, "POST", path, {"response": {"decision": "approve"}})


def _everything_stored(aws: Served) -> str:
    """Every item of the table and every object of the bucket, as text."""
    items = aws.client("dynamodb").scan(TableName=aws.settings.table_name)["Items"]
    s3 = aws.client("s3")
    listed = s3.list_objects_v2(Bucket=aws.settings.bucket_name).get("Contents", [])
    objects = [s3.get_object(Bucket=aws.settings.bucket_name, Key=o["Key"])["Body"].read().decode() for o in listed]
    return json.dumps(items) + "".join(objects)


@pytest.mark.slow
def test_the_factory_reads_its_settings_and_secret_in_each_function_and_the_secret_shows_nowhere(
    served: Served, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # Every level of ours and Powertools'; INFO of the rest, as a function logs (botocore at DEBUG would log
    # each response's body, secrets among them: docs/your-agent.md says so).
    caplog.set_level("INFO")
    for logger in ("resumable", "aws_lambda_powertools"):
        caplog.set_level("DEBUG", logger=logger)
    status, turn = call(served.url, "POST", "/sessions/settings-1/turns", {"prompt": "refund A-1"})
    assert (status, turn["status"]) == (201, "waiting"), turn
    app_settings._providers.clear()  # SubmitApproval, in a process of its own, reads them again
    status, done = _answer(served.url, turn)
    assert (status, done["status"], done["output"]) == (200, "completed", "hello, done"), done
    stored = _everything_stored(served)
    assert "order A-1 refunded (normal; authorized: True)" in stored, "the tool ran with the secret it was given"
    said = capfd.readouterr()
    for where, text in {
        "the table and the bucket": stored,
        "the replies": json.dumps([turn, done]),
        "the logs": caplog.text + said.out + said.err,
    }.items():
        assert SECRET not in text, f"the secret is in {where}"
        assert "shown-nowhere" not in text, f"an unused setting is in {where}"


@pytest.mark.slow
def test_a_setting_is_kept_for_its_max_age_and_read_again_after_it(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    ssm = served.client("ssm")

    def greeted(session: str) -> str:
        turn = call(served.url, "POST", f"/sessions/{session}/turns", {"prompt": "refund A-1"})[1]
        return str(_answer(served.url, turn)[1]["output"])

    try:
        assert greeted("settings-2") == "hello, done"
        ssm.put_parameter(Name=f"{PATH}/GREETING", Value="bonjour", Type="String", Overwrite=True)
        assert greeted("settings-3") == "hello, done", "read again within its max age (300 s)"
        monkeypatch.setenv("APP_SETTINGS_MAX_AGE", "0")
        app_settings._providers.clear()  # (a new process, with the new max age)
        assert greeted("settings-4") == "bonjour, done"
        ssm.put_parameter(Name=f"{PATH}/GREETING", Value="hello", Type="String", Overwrite=True)
        assert greeted("settings-5") == "hello, done", "kept past its max age (0 s)"
    finally:
        ssm.put_parameter(Name=f"{PATH}/GREETING", Value="hello", Type="String", Overwrite=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("factory", "said"),
    [
        (
            "reads_a_missing_setting",
            "the app setting 'NOT_THERE' is not set: there is no SSM parameter /team/orders/NOT_THERE (the settings "
            "under /team/orders: GREETING, UNUSED). On AWS, put it under the stack's AppSettingsPath",
        ),
        (
            "reads_a_listed_secret_that_is_not_there",
            "reading the app setting or secret 'gone-token' (arn:aws:secretsmanager:us-east-1:123456789012:secret:"
            "gone-token-AbCdEf) failed: An error occurred (ResourceNotFoundException)",
        ),
        (
            "reads_an_unlisted_secret",
            "the app secret 'payroll-key' is not one of AppSecretArns (its secrets: gone-token, orders-api-token): add",
        ),
    ],
)
def test_a_setting_or_secret_that_is_not_there_fails_the_turn_naming_it_and_what_to_set(
    served: Served, monkeypatch: pytest.MonkeyPatch, factory: str, said: str
) -> None:
    monkeypatch.setenv("AGENT_FACTORY", f"tests.factories:{factory}")
    gone = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gone-token-AbCdEf"  # (listed, never made)
    monkeypatch.setenv("APP_SECRETS", f"{served.secret_arn},{gone}")
    forget()
    try:
        status, turn = call(served.url, "POST", f"/sessions/{factory.replace('_', '-')}/turns", {"prompt": "go"})
        assert (status, turn["status"]) == (201, "failed"), turn
        assert said in turn["error"]
        assert "shown-nowhere" not in turn["error"] and SECRET not in turn["error"]
    finally:
        monkeypatch.undo()
        forget()


@pytest.mark.slow
def test_an_openai_compatible_server_is_reached_at_its_setting_with_its_secret_as_the_key(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fake_http import FakeServer, Reply
    from tests.unit.test_openai_model import assistant, completion

    key = f"sk-{uuid.uuid4().hex}"
    with FakeServer() as server:
        served.client("ssm").put_parameter(
            Name=f"{PATH}/OPENAI_BASE_URL", Value=f"{server.url}/v1", Type="String", Overwrite=True
        )
        arns = put(LocalValues(secrets={"orders-api-token": SECRET, "openai-api-key": key}), served.settings)
        monkeypatch.setenv("APP_SECRETS", arns["APP_SECRETS"])
        monkeypatch.setenv("AGENT_FACTORY", "tests.factories:openai_from_settings")
        forget()
        try:
            server.reply(Reply(200, completion(assistant("Hello from the server."))))
            status, turn = call(served.url, "POST", "/sessions/openai-1/turns", {"prompt": "hello"})
        finally:
            monkeypatch.undo()
            forget()
    assert (status, turn["status"], turn["output"]) == (201, "completed", "Hello from the server."), turn
    [request] = server.received
    assert (request.path, request.headers["authorization"]) == ("/v1/chat/completions", f"Bearer {key}")
    assert key not in _everything_stored(served) and key not in json.dumps(turn)

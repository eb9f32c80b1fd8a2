"""Importing resumable must not import boto3: it stays out of cold starts until a model or store needs it.

Each check runs in a fresh interpreter, since this test process has long since imported boto3.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.patience import HANG_SECONDS

REPORT_AWS_MODULES = """
import json, sys
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("boto3", "botocore"))))
"""


@pytest.fixture
def offline_aws_env(tmp_path: Path) -> dict[str, str]:
    """An environment with fake credentials and a region, no profile or config files, no metadata service."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    env.update(
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ACCESS_KEY_ID="x",
        AWS_SECRET_ACCESS_KEY="x",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=str(tmp_path / "no-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-credentials"),
    )
    return env


def aws_modules_after(code: str, env: dict[str, str]) -> list[str]:
    """The boto3 and botocore modules loaded after running ``code`` in a fresh interpreter."""
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code) + REPORT_AWS_MODULES],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_SECONDS,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    modules: list[str] = json.loads(completed.stdout.strip().splitlines()[-1])
    return modules


def test_importing_resumable_does_not_import_boto3_or_botocore(offline_aws_env: dict[str, str]) -> None:
    assert aws_modules_after("import resumable", offline_aws_env) == []


def test_constructing_bedrock_model_without_client_does_not_import_boto3(offline_aws_env: dict[str, str]) -> None:
    code = """
    import resumable
    model = resumable.BedrockModel("some-model", max_tokens=16)
    assert model.model_id == "some-model"
    """
    assert aws_modules_after(code, offline_aws_env) == []


def test_using_the_client_of_bedrock_model_imports_boto3_and_builds_a_bedrock_runtime_client(
    offline_aws_env: dict[str, str],
) -> None:
    code = """
    import resumable
    model = resumable.BedrockModel("some-model")
    client = model.client
    assert client.meta.service_model.service_name == "bedrock-runtime", client.meta.service_model.service_name
    assert client.meta.region_name == "us-east-1", client.meta.region_name
    assert model.client is client
    """
    modules = aws_modules_after(code, offline_aws_env)
    assert "boto3" in modules
    assert "botocore" in modules

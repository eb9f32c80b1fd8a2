"""Logs and metrics are named as Powertools' documented environment says, defaulting to resumable."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.patience import HANG_SECONDS

EMIT = """
import json
from resumable.api.observability import logger
from resumable.metrics import collecting, count, flush
logger.info("hello")
with collecting():
    count("Requests")
flush()
"""


def _emitted(**environment: str) -> list[dict[str, object]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERTOOLS_")} | environment
    ran = subprocess.run(
        [sys.executable, "-c", EMIT], env=env, capture_output=True, text=True, timeout=HANG_SECONDS, check=True
    )
    return [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize(
    ("environment", "service", "namespace"),
    [
        ({}, "resumable", "resumable"),
        (
            {"POWERTOOLS_SERVICE_NAME": "approvals", "POWERTOOLS_METRICS_NAMESPACE": "Acme/Agents"},
            "approvals",
            "Acme/Agents",
        ),
    ],
)
def test_powertools_names_come_from_the_environment(environment: dict[str, str], service: str, namespace: str) -> None:
    log, metric = _emitted(**environment)
    assert log["service"] == service
    assert metric["service"] == service
    assert metric["_aws"]["CloudWatchMetrics"][0]["Namespace"] == namespace  # type: ignore[index]

"""Logs and metrics are named as Powertools' documented environment says, defaulting to resumable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

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


def _emitted(code: str = EMIT, **environment: str) -> list[dict[str, object]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERTOOLS_")} | environment
    ran = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=HANG_SECONDS, check=True
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


def test_handlers_flushing_at_once_in_one_process_never_fail_for_a_set_another_emptied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Locally one process serves many requests at once (threads); each flushes what it counted.
    import time
    from concurrent.futures import ThreadPoolExecutor

    from resumable.metrics import collecting, count, flush, metrics

    provider = metrics.provider
    serialize = provider.serialize_metric_set

    def slowly(*args: Any, **kwargs: Any) -> Any:  # (a flush takes a moment: another may run meanwhile)
        time.sleep(0.001)
        return serialize(*args, **kwargs)

    monkeypatch.setattr(provider, "serialize_metric_set", slowly)

    def handler(_: int) -> None:
        for _ in range(50):
            with collecting():
                count("Requests")
            flush()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(handler, range(8)))  # (a flush that raised would raise here)


def test_metrics_turned_off_as_powertools_says_write_none_of_ours_either() -> None:
    """make run's quiet log: POWERTOOLS_METRICS_DISABLED stops the counts with dimensions of their own
    too, which Powertools' single metrics would write regardless."""
    code = EMIT.replace('count("Requests")', 'count("Requests")\n    count("TurnsSettled", Status="completed")')
    assert len([line for line in _emitted(code) if "_aws" in line]) == 2
    assert [line for line in _emitted(code, POWERTOOLS_METRICS_DISABLED="true") if "_aws" in line] == []

"""The metrics resumable printed, read back as CloudWatch would read its embedded metric format."""

from __future__ import annotations

import json

import pytest

from resumable.metrics import clear, flush


def forget_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    """Drop what was counted and printed so far (the process's metrics are shared, as in Lambda)."""
    clear()
    capsys.readouterr()


def printed_metrics(capsys: pytest.CaptureFixture[str]) -> dict[str, list[float]]:
    """The metrics printed since the last read, in CloudWatch's embedded metric format, once flushed as
    the handler flushes them when it returns: by name (with their own dimensions beside the service's,
    as ``name{Dimension=value}``)."""
    flush()
    found: dict[str, list[float]] = {}
    for line in capsys.readouterr().out.splitlines():
        if not line.startswith("{") or "_aws" not in line:
            continue
        emitted = json.loads(line)
        [directive] = emitted["_aws"]["CloudWatchMetrics"]
        own = sorted({d for group in directive["Dimensions"] for d in group} - {"service"})
        suffix = "{" + ",".join(f"{d}={emitted[d]}" for d in own) + "}" if own else ""
        for metric in directive["Metrics"]:
            value = emitted[metric["Name"]]
            found.setdefault(metric["Name"] + suffix, []).extend(value if isinstance(value, list) else [value])
    return found

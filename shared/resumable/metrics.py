"""What resumable counts, as CloudWatch metrics in the embedded metric format (Powertools' Metrics):
the edge's requests, and what the service sees happen to interactions, turns and continuations.

``POWERTOOLS_SERVICE_NAME`` names the service (a dimension of every metric) and
``POWERTOOLS_METRICS_NAMESPACE`` the namespace, as Powertools documents them; each defaults to
``resumable``. Metrics without dimensions of their own are flushed when the handler returns (its
``log_metrics``); one with dimensions (a decision, a status) is written at once, as a metric of its
own. docs/operations.md lists them all.
"""

from __future__ import annotations

import os

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME") or "resumable"
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "resumable"

metrics = Metrics(namespace=NAMESPACE, service=SERVICE)


def count(name: str, value: float = 1, **dimensions: str) -> None:
    """``value`` more of ``name``; with ``dimensions`` (beside the service), a metric of its own."""
    _add(name, MetricUnit.Count, value, dimensions)


def seconds(name: str, value: float, **dimensions: str) -> None:
    """A duration of ``value`` seconds, such as the time from a question to its answer."""
    _add(name, MetricUnit.Seconds, value, dimensions)


def _add(name: str, unit: MetricUnit, value: float, dimensions: dict[str, str]) -> None:
    if not dimensions:
        metrics.add_metric(name=name, unit=unit, value=value)
        return
    with single_metric(
        name=name, unit=unit, value=value, namespace=NAMESPACE, default_dimensions={"service": SERVICE, **dimensions}
    ):
        pass

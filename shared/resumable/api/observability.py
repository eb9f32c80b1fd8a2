"""The edge's structured logger and metrics (Powertools), shared by the routes and the handler.

``POWERTOOLS_SERVICE_NAME`` names the service in logs and metrics, and ``POWERTOOLS_METRICS_NAMESPACE``
the metrics' namespace, as Powertools documents them; each defaults to ``resumable``.
"""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME") or "resumable"
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "resumable"

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)


def count(name: str) -> None:
    """One more of ``name`` (TurnsStarted, ApprovalsSettled, Resumes, Cancels, Conflicts, Expiries)."""
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)

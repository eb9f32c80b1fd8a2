"""The edge's structured logger and metrics (Powertools), shared by the routes and the handler."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

logger = Logger(service="resumable")
metrics = Metrics(namespace="resumable", service="resumable")


def count(name: str) -> None:
    """One more of ``name`` (TurnsStarted, ApprovalsSettled, Resumes, Cancels, Conflicts, Expiries)."""
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)

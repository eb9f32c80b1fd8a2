"""What resumable counts, as CloudWatch metrics in the embedded metric format (Powertools' Metrics):
the edge's requests, and what the service sees happen to interactions, turns and continuations.

``POWERTOOLS_SERVICE_NAME`` names the service (a dimension of every metric) and
``POWERTOOLS_METRICS_NAMESPACE`` the namespace, as Powertools documents them; each defaults to
``resumable``. Metrics are counted only while a handler runs (``flushing``, or ``collecting`` for a
program of one's own), and written when it returns, never while it runs: a process that uses the
service outside a handler counts and prints nothing. docs/operations.md lists every metric.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

if TYPE_CHECKING:
    from resumable.store.base import Commit
    from resumable.store.records import InteractionRecord

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME") or "resumable"
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "resumable"

metrics = Metrics(namespace=NAMESPACE, service=SERVICE)

# Every metric resumable writes: its name, and for one with a dimension of its own (beside the
# service), the dimension's name and values. The dashboard shows each; docs/operations.md says what it
# counts.
METRICS: dict[str, tuple[str, tuple[str, ...]] | None] = {
    # the HTTP API and direct invocations (resumable.api)
    "Requests": None,
    "TurnsStarted": None,
    "ApprovalsSettled": None,
    "Resumes": None,
    "Cancels": None,
    "Conflicts": None,
    "Expiries": None,
    "AwsFailures": None,
    "Continuations": None,
    "SessionsDeleted": None,
    "SessionsRestored": None,
    # interactions and turns (the service's commits and answers)
    "InteractionsRequested": None,
    "InteractionsAnswered": ("Decision", ("approve", "approve_edited", "deny", "other")),
    "InteractionsClosed": ("Status", ("superseded", "expired")),
    "TimeToAnswer": None,
    "TurnsSettled": ("Status", ("completed", "failed", "canceled", "interrupted", "expired")),
    "ContinuationsRequested": None,
    "ContinuationsFailed": None,
    # the sweeper
    "SweeperFinds": (
        "Stall",
        ("question_expired", "cancel_unsettled", "answered_unresumed", "runner_gone", "checkpointed"),
    ),
    "StuckTurns": None,
    "AuditDeliveryRefused": None,
    # a Lambda durable function waiting on a turn that Lambda no longer lets the service tell
    "UndeliveredCallbacks": None,
    "RecordsExpired": ("Record", ("turn", "session")),
    # the publisher
    "EventsPublished": None,
    "PublisherFailures": None,
    "EventsDeadLettered": None,
}


_collecting: ContextVar[bool] = ContextVar("resumable_metrics_collecting", default=False)


@contextmanager
def collecting() -> Iterator[None]:
    """Count what happens in this block (of this thread); ``flush`` writes it."""
    token = _collecting.set(True)
    try:
        yield
    finally:
        _collecting.reset(token)


def count(name: str, value: float = 1, **dimensions: str) -> None:
    """``value`` more of ``name``; with ``dimensions`` (beside the service), a metric of its own."""
    _add(name, MetricUnit.Count, value, dimensions)


def seconds(name: str, value: float, **dimensions: str) -> None:
    """A duration of ``value`` seconds, such as the time from a question to its answer."""
    _add(name, MetricUnit.Seconds, value, dimensions)


# Counts with dimensions of their own, summed until the handler returns: Powertools' metric set has
# one set of dimensions, so each of these is written as a metric of its own (``single_metric``).
_dimensioned: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
_lock = threading.Lock()  # (the counts below, and Powertools' metric set: one process's)

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _add(name: str, unit: MetricUnit, value: float, dimensions: dict[str, str]) -> None:
    if not _collecting.get():
        return
    if not dimensions:
        with _lock:
            metrics.add_metric(name=name, unit=unit, value=value)
        return
    if unit != MetricUnit.Count:
        raise ValueError(f"{name}: only a count may have dimensions of its own")
    key = (name, tuple(sorted(dimensions.items())))
    with _lock:
        _dimensioned[key] = _dimensioned.get(key, 0) + value


def flush() -> None:
    """Write what was counted since the last flush (CloudWatch's embedded metric format, on stdout).
    One flush at a time: Powertools' metric set is the process's, and a flush that another emptied
    between its check and its write raised (invocations share a process locally, served by threads)."""
    with _lock:
        pending = list(_dimensioned.items())
        _dimensioned.clear()
        if os.environ.get("POWERTOOLS_METRICS_DISABLED", "").strip().lower() in ("1", "true", "yes", "on"):
            metrics.clear_metrics()  # (off, as Powertools' own flush is: make run's quiet log)
            return
        for (name, dimensions), value in pending:
            default = {"service": SERVICE, **dict(dimensions)}
            with single_metric(
                name=name, unit=MetricUnit.Count, value=value, namespace=NAMESPACE, default_dimensions=default
            ):
                pass
        metrics.flush_metrics(raise_on_empty_metrics=False)


def clear() -> None:
    """Forget what was counted since the last flush, unwritten."""
    with _lock:
        _dimensioned.clear()
        metrics.clear_metrics()


def flushing(handler: Callable[_P, _R]) -> Callable[_P, _R]:
    """A handler whose metrics are counted while it runs and written when it returns (or raises)."""

    @functools.wraps(handler)
    def flushed(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            with collecting():
                return handler(*args, **kwargs)
        finally:
            flush()

    return flushed


def count_commit(commit: Commit) -> None:
    """What a commit that landed did: the questions it asked, those it closed (by their new status),
    and the turn it settled (by its status)."""
    if commit.new_interactions:
        count("InteractionsRequested", len(commit.new_interactions))
    for status, closed in Counter(changed.status for changed, _ in commit.interaction_changes).items():
        count("InteractionsClosed", closed, Status=status)
    if commit.root.settled:
        count("TurnsSettled", Status=commit.root.status)


def count_answer(interaction: InteractionRecord) -> None:
    """An answer just recorded: its decision, and how long the question waited for it."""
    response = interaction.response
    decision = response.get("decision") if isinstance(response, dict) else None
    if decision == "approve" and response.get("input") is not None:
        decision = "approve_edited"
    count("InteractionsAnswered", Decision=decision if decision in ("approve", "approve_edited", "deny") else "other")
    if interaction.answered_at is not None:
        seconds("TimeToAnswer", max(0.0, interaction.answered_at - interaction.created_at))

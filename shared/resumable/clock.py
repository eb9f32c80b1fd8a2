"""Time, injectable: leases and expiries read the clock they are given, so tests never sleep."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def wait_until(self, stop: threading.Event, deadline: float) -> bool:
        """Wait until ``stop`` is set (True) or this clock reaches ``deadline`` (False)."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    def wait_until(self, stop: threading.Event, deadline: float) -> bool:
        return stop.wait(max(0.0, deadline - time.time()))


def iso(timestamp: float | None) -> str | None:
    """``timestamp`` (seconds since the epoch) as ISO 8601 UTC with milliseconds, as callers see times."""
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

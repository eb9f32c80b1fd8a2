"""Time, injectable: leases and expiries read the clock they are given, so tests never sleep."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        """Wait until ``stop`` is set (True) or ``seconds`` of this clock have passed (False)."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        return stop.wait(seconds)

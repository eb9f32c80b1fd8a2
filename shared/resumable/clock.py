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


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.current = start
        self._moved = threading.Condition()

    def now(self) -> float:
        return self.current

    def advance(self, seconds: float) -> None:
        with self._moved:
            self.current += seconds
            self._moved.notify_all()

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        """Returns once the clock was advanced past ``seconds`` from now, or ``stop`` was set (seen
        within a twentieth of a second of real time)."""
        deadline = self.current + seconds
        with self._moved:
            while not stop.is_set() and self.current < deadline:
                self._moved.wait(0.05)
        return stop.is_set()

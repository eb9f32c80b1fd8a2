"""The clock tests inject: it moves only when a test says so, so no test sleeps to make time pass."""

from __future__ import annotations

import threading


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.current = start

    def now(self) -> float:
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += seconds

    def wait_until(self, stop: threading.Event, deadline: float) -> bool:
        """Returns once the clock was advanced to ``deadline``, or ``stop`` was set (seen within a few
        milliseconds of real time, so a waiter that is told to stop stops at once)."""
        while self.current < deadline:
            if stop.wait(0.005):
                return True
        return stop.is_set()

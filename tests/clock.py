"""The clock tests inject: it moves only when a test says so, so no test sleeps to make time pass."""

from __future__ import annotations

import threading


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

    def wait_until(self, stop: threading.Event, deadline: float) -> bool:
        """Returns once the clock was advanced to ``deadline``, or ``stop`` was set (seen within a
        twentieth of a second of real time)."""
        with self._moved:
            while not stop.is_set() and self.current < deadline:
                self._moved.wait(0.05)
        return stop.is_set()

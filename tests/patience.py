"""How long a test waits for something before it calls it a hang.

Never a measure of speed: on a busy machine everything is slower, not wrong, so no test asserts how
much work fits into a time window (``make bench`` measures speed). A wait in a test either follows an
event or polls a condition, and gives up only after ``HANG_SECONDS``, which nothing correct ever needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

HANG_SECONDS = 600.0


def eventually(found: Callable[[], T | None], what: str) -> T:
    """Poll ``found`` until it returns something other than None; fail only if it never does."""
    deadline = time.monotonic() + HANG_SECONDS
    while True:
        value = found()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never happened (waited {HANG_SECONDS:.0f} s: a hang)")
        time.sleep(0.05)

"""Records joining the tables' streams of this process's embedded AWS, counted, so that the publisher's
stream poller (resumable.local.events) waits for the next one instead of asking moto again and again."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

IDLE_SECONDS: float | None = 1.0
"""How long the poller waits, once a round found nothing, unless a record joins a stream of this
process's embedded AWS sooner (then at once): a stream of another process's is read once a second
(None: until then)."""


class _StreamRecords:
    """How many records have joined a stream of this process's embedded AWS, and a wait for the next:
    an idle poller asks moto nothing (a round is three requests: it polled 20 times a second)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.count = 0

    def added(self) -> None:
        with self._changed:
            self.count += 1
            self._changed.notify_all()

    def wait_past(self, seen: int, woken: Callable[[], bool]) -> None:
        """Until a record joins a stream after ``seen`` were counted, ``woken`` says so, or IDLE_SECONDS."""
        with self._changed:
            self._changed.wait_for(lambda: self.count != seen or woken(), IDLE_SECONDS)

    def wake(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def counted(self) -> None:
        """moto's streams count their records here (once per process)."""
        from moto.dynamodb.models.table import StreamShard

        if getattr(StreamShard.add, "counted", False):
            return
        real = StreamShard.add

        def add(shard: Any, old: Any, new: Any) -> None:
            real(shard, old, new)
            self.added()

        add.counted = True  # type: ignore[attr-defined]
        StreamShard.add = add  # type: ignore[method-assign,assignment]


STREAM_RECORDS = _StreamRecords()

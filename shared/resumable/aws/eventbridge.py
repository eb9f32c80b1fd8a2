"""Putting events on the EventBridge bus."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from resumable.aws.clients import LazyClient

MAX_ENTRIES = 10
"""The most entries one ``PutEvents`` takes."""
MAX_REQUEST_BYTES = 256 * 1024
"""The most one ``PutEvents`` takes, all its entries counted as EventBridge counts them."""
ATTEMPTS = 3
"""How often an entry the bus refused is put again before it counts as not published."""


@dataclass(frozen=True)
class Entry:
    """One event to put: its detail type, its detail (JSON) and when it happened."""

    detail_type: str
    detail: str
    occurred_at: float

    def size(self, source: str) -> int:
        """Its size as EventBridge counts it toward a request's 256 KB (the time counts 14 bytes)."""
        return 14 + len(source.encode()) + len(self.detail_type.encode()) + len(self.detail.encode())


class EventBus(LazyClient[Any]):
    """``PutEvents`` to the bus the settings name. The client is made on first use."""

    service = "events"

    def put_all(self, source: str, entries: list[Entry]) -> list[str | None]:
        """Put ``entries``, as few ``PutEvents`` as they fit in (10 entries, 256 KB), each entry the bus
        refused put again (up to ``ATTEMPTS`` times); for each entry, None once the bus took it, or
        why it did not (it was not published)."""
        outcome: list[str | None] = ["not put"] * len(entries)
        waiting = list(range(len(entries)))
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(0.05 * 2**attempt)
            for chunk in self._chunks(source, entries, waiting):
                for index, refused in zip(chunk, self._put_events(source, [entries[i] for i in chunk]), strict=True):
                    outcome[index] = refused
            waiting = [i for i in waiting if outcome[i] is not None]
            if not waiting:
                break
        return outcome

    @staticmethod
    def _chunks(source: str, entries: list[Entry], indexes: list[int]) -> list[list[int]]:
        chunks: list[list[int]] = []
        size = 0
        for index in indexes:
            entry = entries[index].size(source)
            if not chunks or len(chunks[-1]) == MAX_ENTRIES or size + entry > MAX_REQUEST_BYTES:
                chunks.append([])
                size = 0
            chunks[-1].append(index)
            size += entry
        return chunks

    def _put_events(self, source: str, entries: list[Entry]) -> list[str | None]:
        """One ``PutEvents``; for each entry, None if the bus took it, or why not."""
        bus = self.settings.event_bus_name
        request = [
            {
                "Source": source,
                "DetailType": entry.detail_type,
                "Detail": entry.detail,
                "EventBusName": bus,
                "Time": datetime.fromtimestamp(entry.occurred_at, UTC),
            }
            for entry in entries
        ]
        try:
            reply = self.client.put_events(Entries=request)
        except Exception as error:
            return [f"PutEvents to bus {bus!r} failed, the event was not published: {error}"] * len(entries)
        answers = reply.get("Entries", [])
        if len(answers) != len(entries):
            return [f"bus {bus!r} answered {len(answers)} entries for {len(entries)}; not published"] * len(entries)
        return [
            None
            if "ErrorCode" not in answer and answer.get("EventId")
            else f"bus {bus!r} refused the event ({answer.get('ErrorCode')}: {answer.get('ErrorMessage')}); "
            "it was not published"
            for answer in answers
        ]

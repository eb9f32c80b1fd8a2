"""Putting events on the EventBridge bus."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from resumable.aws.clients import LazyClient
from resumable.exceptions import AwsError


class EventBus(LazyClient[Any]):
    """``PutEvents`` to the bus the settings name. The client is made on first use."""

    service = "events"

    def put(self, source: str, detail_type: str, detail: str, occurred_at: float) -> None:
        """Put one event; raises ``AwsError`` if the bus did not take it."""
        bus = self.settings.event_bus_name
        entry = {
            "Source": source,
            "DetailType": detail_type,
            "Detail": detail,
            "EventBusName": bus,
            "Time": datetime.fromtimestamp(occurred_at, UTC),
        }
        try:
            reply = self.client.put_events(Entries=[entry])
        except Exception as error:
            raise AwsError(f"PutEvents to bus {bus!r} failed, the event was not published: {error}") from error
        if reply.get("FailedEntryCount"):
            failed = reply["Entries"][0]
            raise AwsError(
                f"bus {bus!r} refused the event ({failed.get('ErrorCode')}: {failed.get('ErrorMessage')}); "
                "it was not published"
            )

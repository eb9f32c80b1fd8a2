"""The publisher: the table's stream delivers each new outbox item (an event source mapping filtered
to them); this numbers it in its session's order and puts it on the bus, at least once.

A record that can never be published (not an outbox item of a known detail type, a detail that
breaks its schema, an item that is gone) goes to the dead-letter queue whole, before it is numbered
(so its session's numbers have no gap), and publishing goes on. A record that fails for now (an AWS
call) fails alone: Powertools' batch processing reports it in ``batchItemFailures``, and every later
record of its session in the batch fails with it, so within the mapping's retries a session's events
are never put on the bus out of order. Lambda delivers the batch again from the first failure; what
was published before is published again with the same ``eventId`` and ``sequence``. (After the last
retry the mapping moves on: docs/events.md says what that leaves.)
"""

from __future__ import annotations

import logging
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from pydantic import ValidationError

from resumable.aws.eventbridge import EventBus
from resumable.aws.sqs import DeadLetters
from resumable.clock import Clock, SystemClock, iso
from resumable.config import Settings
from resumable.events.schemas import MODELS, SOURCE, EventDetail
from resumable.exceptions import AwsError, NotPublishedError
from resumable.metrics import count, flushing
from resumable.store.codec import decode
from resumable.store.outbox import OutboxItems, event_id
from resumable.store.records import OutboxEvent

logger = logging.getLogger(__name__)

_COUNTER_ATTEMPTS = 3


class Publisher:
    """Publishes one batch's outbox records (``publish`` is the record handler)."""

    def __init__(
        self, settings: Settings, outbox: OutboxItems, bus: EventBus, dead_letters: DeadLetters, clock: Clock
    ) -> None:
        self.settings, self.outbox, self.bus, self.dead_letters, self.clock = settings, outbox, bus, dead_letters, clock
        self._last: dict[str, int] = {}
        self._failed: set[str] = set()

    def publish(self, record: DynamoDBRecord) -> None:
        change: dict[str, Any] = record.raw_event.get("dynamodb", {})
        try:
            session_id, sk = self._keys(change)
        except NotPublishedError as error:
            self._dead_letter(record, error)
            return
        if session_id in self._failed:
            raise NotPublishedError(
                f"not published: an earlier event of session {session_id!r} in this batch failed, and this one "
                "follows it (it is delivered again after that one, keeping the session's order)"
            )
        try:
            try:
                event = OutboxEvent.model_validate(decode(change["NewImage"]))
                detail = self._detail(session_id, sk, event, sequence=1)  # checked before it is numbered
            except (ValidationError, NotPublishedError, ValueError, TypeError, KeyError) as error:
                self._dead_letter(record, error)
                return
            try:
                detail.sequence = self._number(session_id, sk)
            except NotPublishedError as error:  # its item is gone: it can never be numbered
                self._dead_letter(record, error)
                return
            self.bus.put(SOURCE, event.type, detail.model_dump_json(by_alias=True), event.created_at)
            self.outbox.mark_published(session_id, sk, self.clock.now())
            count("EventsPublished")
        except Exception:
            self._failed.add(session_id)
            count("PublisherFailures")
            raise

    def _dead_letter(self, record: DynamoDBRecord, error: Exception) -> None:
        logger.error(
            "outbox record %s can never be published, sent to the dead-letter queue: %s", record.event_id, error
        )
        self.dead_letters.send({"reason": f"never publishable: {error}", "record": record.raw_event})
        count("EventsDeadLettered")

    @staticmethod
    def _keys(change: dict[str, Any]) -> tuple[str, str]:
        try:
            pk, sk = change["Keys"]["pk"]["S"], change["Keys"]["sk"]["S"]
        except (KeyError, TypeError) as error:
            raise NotPublishedError(f"not published: the record has no table keys ({error!r})") from error
        if not pk.startswith("SESSION#") or "#EVENT#" not in sk or "NewImage" not in change:
            raise NotPublishedError(
                f"not published: {pk!r} {sk!r} is not an outbox item (the filter lets only those in)"
            )
        return pk.removeprefix("SESSION#"), sk

    def _detail(self, session_id: str, sk: str, event: OutboxEvent, sequence: int) -> EventDetail:
        model = MODELS.get(event.type)
        if model is None:
            raise NotPublishedError(f"not published: {event.type!r} is not a detail type resumable publishes")
        fields: dict[str, Any] = {
            "eventId": event_id(session_id, sk),
            "sessionId": session_id,
            "turnId": event.turn_id,
            "sequence": sequence,
            "occurredAt": iso(event.created_at),
            **event.detail,
        }
        if "answerPath" in fields:
            api = self.settings.api_url.rstrip("/") if self.settings.api_url else None
            fields["answerUrl"] = api + fields["answerPath"] if api else None
            fields["inboxUrl"] = f"{api}/inbox#q-{fields['requestId']}" if api else None
        return model.model_validate(fields)

    def _number(self, session_id: str, sk: str) -> int:
        """The event's number in its session: given now, or the one it was given on an earlier delivery."""
        for _ in range(_COUNTER_ATTEMPTS):
            after = self._last[session_id] if session_id in self._last else self.outbox.last_sequence(session_id)
            numbered = self.outbox.number_event(session_id, sk, after, self.clock.now())
            if numbered is not None:
                number, self._last[session_id] = numbered
                return number
            self._last.pop(session_id, None)  # another publisher numbered one meanwhile: read the counter again
        raise AwsError(
            f"session {session_id!r}'s event counter kept moving while {sk!r} was numbered (is another publisher "
            "reading the same shard?); it was not published and is delivered again"
        )


class Publishing:
    """What the Publisher function keeps between invocations: its settings and clients."""

    def __init__(self, settings: Settings | None = None, clock: Clock | None = None) -> None:
        self.settings = settings or Settings.from_env()
        self.outbox = OutboxItems(self.settings)
        self.bus = EventBus(self.settings)
        self.dead_letters = DeadLetters(self.settings)
        self.clock = clock or SystemClock()

    @flushing
    def handle(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        """One batch of stream records: ``{"batchItemFailures": [...]}`` for those not published."""
        publisher = Publisher(self.settings, self.outbox, self.bus, self.dead_letters, self.clock)
        processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
        reply = process_partial_response(
            event=event, record_handler=publisher.publish, processor=processor, context=context
        )
        return dict(reply)

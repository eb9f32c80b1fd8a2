"""The publisher: the table's stream delivers each new outbox item (an event source mapping filtered
to them); this numbers it in its session's order and puts it on the bus, at least once.

A batch is published in bulk: its sessions' counters are read in one ``BatchGetItem``, their events
numbered with them in transactions that hold as many whole sessions as 100 items fit, put on the bus
in ``PutEvents`` calls of up to 10 entries, and marked published in one transaction per 100. A
session's events go on the bus in their order, one per call (a call takes up to ten sessions' next
events), an entry the bus refused is put again by itself, and once one of a session's events could
not be published none after it is put.

A record that can never be published (not an outbox item of a known detail type, a detail that
breaks its schema, an item that is gone) goes to the dead-letter queue whole, before it is numbered
(so its session's numbers have no gap), and publishing goes on. A record that fails for now (an AWS
call) fails with every later record of its session in the batch: they are reported in
``batchItemFailures``, so within the mapping's retries a session's events are never put on the bus
out of order. Lambda delivers the batch again from the first failure; what was published before is
published again with the same ``eventId`` and ``sequence``. (After the last retry the mapping moves
on: docs/events.md says what that leaves.)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from resumable.aws.eventbridge import Entry, EventBus
from resumable.aws.sns import Topic
from resumable.aws.sqs import DeadLetters
from resumable.clock import Clock, SystemClock, iso
from resumable.config import Settings
from resumable.events.schemas import MODELS, SOURCE, EventDetail, InteractionRequested
from resumable.exceptions import AwsError, NotPublishedError
from resumable.metrics import count, flushing
from resumable.store.codec import decode
from resumable.store.outbox import COMMIT_EVENTS, commit_events, event_id, is_commit_event, outbox_session
from resumable.store.publishing import OutboxItems
from resumable.store.records import OutboxEvent

if TYPE_CHECKING:
    from resumable.aws.keys import LinkKey
    from resumable.store.decision_links import DecisionLinkItems

logger = logging.getLogger(__name__)

_COUNTER_ATTEMPTS = 3


@dataclass
class _Event:
    """One stream record of an outbox item, read: what it will put on the bus."""

    record: dict[str, Any]
    session_id: str
    sk: str
    event: OutboxEvent
    detail: EventDetail
    numbered_with: list[str] | None
    """The items numbered with it, in order: its commit's events (the item says how many), or itself.
    None for a commit's event that does not say (written before commits did): they are looked up."""


class Publisher:
    """Publishes one batch of stream records (``publish``)."""

    def __init__(
        self,
        settings: Settings,
        outbox: OutboxItems,
        bus: EventBus,
        dead_letters: DeadLetters,
        clock: Clock,
        links: DecisionLinks | None = None,
        topic: Topic | None = None,
    ) -> None:
        self.settings, self.outbox, self.bus, self.dead_letters, self.clock = settings, outbox, bus, dead_letters, clock
        self.links = links or DecisionLinks(settings, outbox)
        self.topic = topic or Topic(settings)
        self._last: dict[str, int] = {}
        self._dead: dict[str, set[str]] = {}  # (by session: left out of their commits' numbering)

    def publish(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Publish ``records``; those not published, each as ``{"itemIdentifier": <its sequence number>}``."""
        sessions: dict[str, list[_Event]] = {}
        for record in records:
            read = self._read(record)
            if read is not None:
                sessions.setdefault(read.session_id, []).append(read)
        failed: dict[str, list[_Event]] = {}
        self._number(sessions, failed)
        for session_id, lowest in self._put(sessions).items():
            failed[session_id] = [e for e in sessions[session_id] if e.detail.sequence >= lowest]
        not_published = {id(e.record) for events in failed.values() for e in events}
        if failed:
            count("PublisherFailures", len(failed))  # (a failure each: the events after one are held back)
        return [
            {"itemIdentifier": record.get("dynamodb", {}).get("SequenceNumber")}
            for record in records
            if id(record) in not_published
        ]

    def _read(self, record: dict[str, Any]) -> _Event | None:
        """The record's event, checked before it is numbered; None (sent to the dead-letter queue, and
        left out of its commit's numbering) for one that can never be published."""
        change: dict[str, Any] = record.get("dynamodb", {})
        keys: tuple[str, str] | None = None
        try:
            keys = session_id, sk = self._keys(change)
            image = decode(change["NewImage"])
            event = OutboxEvent.model_validate(image)
            detail = self._detail(session_id, sk, event, sequence=1)
            numbered_with = self._numbered_with(sk, image.get(COMMIT_EVENTS))
        except (ValidationError, NotPublishedError, ValueError, TypeError, KeyError) as error:
            self._dead_letter(record, error)
            if keys is not None:
                self._dead.setdefault(keys[0], set()).add(keys[1])
            return None
        return _Event(record, session_id, sk, event, detail, numbered_with)

    @staticmethod
    def _numbered_with(sk: str, together: Any) -> list[str] | None:
        """The items numbered with the one at ``sk``: itself, or its commit's events (the item says how
        many it wrote; None where it does not: they are looked up)."""
        if not is_commit_event(sk):
            return [sk]
        if not isinstance(together, int) or together < 1:
            return None
        numbered_with = commit_events(sk, together)
        if sk not in numbered_with:
            raise NotPublishedError(f"not published: {sk!r} is not among the {together} events of its commit")
        return numbered_with

    def _number(self, sessions: dict[str, list[_Event]], failed: dict[str, list[_Event]]) -> None:
        """Give each session's events their numbers: with their counter, several sessions in a
        transaction (``_number_together``); one by one where that is refused (a redelivery, another
        publisher)."""
        try:
            counters = self.outbox.last_sequences([s for s in sessions if s not in self._last])
        except AwsError as error:
            logger.error("event counters unread, nothing was published: %s", error)
            failed.update(sessions)
            sessions.clear()
            return
        self._last |= counters
        numbered = self._number_together(sessions)
        for session_id in [s for s in sessions if s not in numbered]:
            events = sessions[session_id]
            for event in list(events):
                try:
                    event.detail.sequence = self._number_one(session_id, event.sk)
                except NotPublishedError as error:  # its item is gone: it can never be numbered
                    self._dead_letter(event.record, error)
                    events.remove(event)
                except AwsError as error:
                    # Not one of the session's events is put (one after it could have a lower number):
                    # all of them are delivered again, those numbered keeping their numbers.
                    logger.error("%s of session %r not numbered: %s", event.sk, session_id, error)
                    failed[session_id] = events
                    del sessions[session_id]
                    break

    def _number_together(self, sessions: dict[str, list[_Event]]) -> set[str]:
        """Number each session's events (and the rest of their commits') in one write with its counter,
        several sessions in a transaction; the sessions numbered. (Not those a condition refused, nor
        those whose items do not say what else their commit wrote.)"""
        wanted = {
            session_id: [
                sk
                for sk in dict.fromkeys(sk for e in events for sk in e.numbered_with or ())
                if sk not in self._dead.get(session_id, ())  # (dead-lettered: never numbered, so no gap)
            ]
            for session_id, events in sessions.items()
            if all(e.numbered_with is not None for e in events)
        }
        try:
            numbered = self.outbox.number_sessions([(s, order, self._last[s]) for s, order in wanted.items()])
        except AwsError:
            numbered = set()
        for session_id, order in wanted.items():
            after = self._last[session_id]
            if session_id not in numbered:
                self._last.pop(session_id, None)  # (read the counter again)
                continue
            self._last[session_id] = after + len(order)
            for event in sessions[session_id]:
                event.detail.sequence = after + 1 + order.index(event.sk)
        return numbered

    def _number_one(self, session_id: str, sk: str) -> int:
        """The event's number in its session: given now, or the one it was given on an earlier delivery."""
        for _ in range(_COUNTER_ATTEMPTS):
            after = self._last[session_id] if session_id in self._last else self.outbox.last_sequence(session_id)
            numbered = self.outbox.number_event(session_id, sk, after)
            if numbered is not None:
                number, self._last[session_id] = numbered
                return number
            self._last.pop(session_id, None)  # another publisher numbered one meanwhile: read the counter again
        raise AwsError(
            f"session {session_id!r}'s event counter kept moving while {sk!r} was numbered (is another publisher "
            "reading the same shard?); it was not published and is delivered again"
        )

    def _put(self, sessions: dict[str, list[_Event]]) -> dict[str, int]:
        """Put every session's events on the bus in their order, in rounds: a round holds each session's
        next event, so a session's event is put only once the one before it is on the bus. Then mark
        them published. For each session held back, the lowest number not published (or not marked:
        it is delivered again, and published again, the same event)."""
        queues = {s: sorted(events, key=lambda e: e.detail.sequence) for s, events in sessions.items() if events}
        held: dict[str, int] = {}
        put: list[_Event] = []
        while queues:
            round_ = [events[0] for events in queues.values()]
            entries = [Entry(e.event.type, e.detail.model_dump_json(by_alias=True), e.event.created_at) for e in round_]
            for event, refused in zip(round_, self.bus.put_all(SOURCE, entries), strict=True):
                queue = queues[event.session_id]
                if refused is None:
                    put.append(queue.pop(0))
                else:
                    logger.error("%s of session %r not published: %s", event.sk, event.session_id, refused)
                    held[event.session_id] = event.detail.sequence
                    queue.clear()
                if not queue:
                    del queues[event.session_id]
        if put:
            count("EventsPublished", len(put))
        put = self._mail(put, held)
        unmarked = self.outbox.mark_all_published([(e.session_id, e.sk) for e in put], self.clock.now())
        for event, error in zip(put, unmarked, strict=True):
            if error is not None:
                logger.error("%s of session %r published, not marked: %s", event.sk, event.session_id, error)
                held[event.session_id] = min(event.detail.sequence, held.get(event.session_id, event.detail.sequence))
        return held

    def _mail(self, put: list[_Event], held: dict[str, int]) -> list[_Event]:
        """Tell NotifyEmail's topic of each question put on the bus (``NOTIFY_TOPIC_ARN``); those told, or
        that tell nobody. One whose e-mail failed is left unmarked and its session held: it is delivered
        again, put on the bus again (the same event) and mailed again."""
        if not self.settings.notify_topic_arn:
            return put
        from resumable.events.mail import told

        done: list[_Event] = []
        failed: set[str] = set()
        for event in put:  # (each session's in its order)
            if event.session_id in failed:  # (after one whose e-mail failed: delivered, and mailed, again)
                continue
            try:
                said = told(event.detail, self._decision_url(event))
                if said is not None:
                    self.topic.publish(*said)
            except AwsError as error:
                logger.error("%s of session %r published, not mailed: %s", event.sk, event.session_id, error)
                failed.add(event.session_id)
                held[event.session_id] = min(event.detail.sequence, held.get(event.session_id, event.detail.sequence))
                continue
            done.append(event)
        return done

    def _dead_letter(self, record: dict[str, Any], error: Exception) -> None:
        logger.error(
            "outbox record %s can never be published, sent to the dead-letter queue: %s", record.get("eventID"), error
        )
        self.dead_letters.send({"reason": f"never publishable: {error}", "record": record})
        count("EventsDeadLettered")

    @staticmethod
    def _keys(change: dict[str, Any]) -> tuple[str, str]:
        try:
            pk, sk = change["Keys"]["pk"]["S"], change["Keys"]["sk"]["S"]
        except (KeyError, TypeError) as error:
            raise NotPublishedError(f"not published: the record has no table keys ({error!r})") from error
        session_id = outbox_session(pk, sk)
        if session_id is None or "NewImage" not in change:
            raise NotPublishedError(
                f"not published: {pk!r} {sk!r} is not an outbox item (the filter lets only those in)"
            )
        return session_id, sk

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

    def _decision_url(self, event: _Event) -> str | None:
        """A one-click decision link of the question an Interaction Requested asks (``DECISION_LINKS_AS``),
        issued now, for its e-mail alone (never on the bus); None without links."""
        from datetime import datetime

        from resumable.service.answering import decision_links

        detail, api = event.detail, self.settings.api_url
        if not (
            api and isinstance(detail, InteractionRequested) and detail.turn_id and self.settings.decision_links_as
        ):
            return None
        expires = datetime.fromisoformat(detail.expires_at).timestamp()
        ids = (event.session_id, detail.turn_id, detail.request_id)
        key, items = self.links.key, self.links.items
        token = decision_links.issue(self.settings, key, items, ids, expires, detail.event_id)
        return f"{api.rstrip('/')}/decide/{token}" if token else None


class DecisionLinks:
    """What issuing decision links takes: the decision-link key (KMS) and the links' records (the
    table, through the outbox's client), each made on first use."""

    def __init__(self, settings: Settings, outbox: OutboxItems) -> None:
        self.settings, self.outbox = settings, outbox
        self._key: LinkKey | None = None
        self._items: DecisionLinkItems | None = None

    @property
    def key(self) -> LinkKey:
        if self._key is None:
            from resumable.aws.keys import LinkKey

            self._key = LinkKey(self.settings)
        return self._key

    @property
    def items(self) -> DecisionLinkItems:
        if self._items is None:
            from resumable.store.decision_links import DecisionLinkItems

            self._items = DecisionLinkItems(self.settings, self.outbox.dynamodb)
        return self._items


class Publishing:
    """What the Publisher function keeps between invocations: its settings and clients."""

    def __init__(self, settings: Settings | None = None, clock: Clock | None = None) -> None:
        self.settings = settings or Settings.from_env()
        self.outbox = OutboxItems(self.settings)
        self.bus = EventBus(self.settings)
        self.dead_letters = DeadLetters(self.settings)
        self.clock = clock or SystemClock()
        self.links = DecisionLinks(self.settings, self.outbox)
        self.topic = Topic(self.settings)

    @flushing
    def handle(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        """One batch of stream records: ``{"batchItemFailures": [...]}`` for those not published."""
        publisher = Publisher(
            self.settings, self.outbox, self.bus, self.dead_letters, self.clock, self.links, self.topic
        )
        return {"batchItemFailures": publisher.publish(list(event.get("Records") or []))}

"""The publisher on the embedded AWS, as Lambda runs it on AWS: the table's stream read as the
template's event source mapping reads it, the same Publisher handler called with the same event
shape, and the events on an embedded EventBridge bus.

``publishing(settings)`` creates the bus, a dead-letter queue for what the publisher could not
publish, and an SQS queue that a rule subscribes to every ``resumable`` event (what ``make run``
prints how to read), then polls the stream on a thread until it ends. The mapping's settings are
read from template.yaml: its batch size, its filters (a record any of them matches, by moto's
EventBridge pattern matcher: Lambda's filter syntax is the same), ``ReportBatchItemFailures``
(delivery goes on from the first record reported failed), ``BisectBatchOnFunctionError`` and
``MaximumRetryAttempts`` (then the batch's description goes to the dead-letter queue, and the
mapping moves on, as Lambda does).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from resumable.aws.clients import client
from resumable.config import Settings
from resumable.local.functions import LambdaContext, functions, load_handler, load_template
from resumable.local.permissions.calls import acting_as
from resumable.local.streams import STREAM_RECORDS

logger = logging.getLogger(__name__)

PUBLISHER = "PublisherFunction"

Handler = Callable[[dict[str, Any], Any], Any]


@dataclass(frozen=True)
class Mapping:
    """The publisher's event source mapping, as template.yaml declares it."""

    batch_size: int
    filter_patterns: tuple[str, ...]
    report_item_failures: bool
    bisect: bool
    retries: int

    @classmethod
    def of_template(cls, template: dict[str, Any] | None = None) -> Mapping:
        template = template or load_template()
        [source] = [
            e["Properties"]
            for e in template["Resources"][PUBLISHER]["Properties"]["Events"].values()
            if e["Type"] == "DynamoDB"
        ]
        patterns = tuple(f["Pattern"] for f in source["FilterCriteria"]["Filters"])
        return cls(
            batch_size=int(source.get("BatchSize", 100)),
            filter_patterns=patterns,
            report_item_failures="ReportBatchItemFailures" in source.get("FunctionResponseTypes", []),
            bisect=bool(source.get("BisectBatchOnFunctionError", False)),
            retries=int(source.get("MaximumRetryAttempts", -1)),
        )


@dataclass
class EventResources:
    events_queue_url: str
    dead_letter_queue_url: str
    topic_arn: str
    """NotifyEmail's topic, as the template makes it: the Publisher mails each question there."""
    mail_queue_url: str
    """What a subscriber of the topic receives (the e-mail, in SNS's JSON: its Subject and Message)."""
    poller: StreamPoller | None = None
    """The publisher's stream poller, while ``publishing`` runs."""


def create_event_resources(settings: Settings) -> EventResources:
    """The bus, the queue of every event (``<bus>-events``, subscribed by a rule), the publisher's
    dead-letter queue (``<bus>-publisher-dead-letters``), and NotifyEmail's topic with a queue
    subscribed to it (``<bus>-mail``) standing for the mailbox."""
    events, sqs, bus = client("events", settings), client("sqs", settings), settings.event_bus_name
    events.create_event_bus(Name=bus)
    queue_url = sqs.create_queue(QueueName=f"{bus}-events")["QueueUrl"]
    dead_letters = sqs.create_queue(QueueName=f"{bus}-publisher-dead-letters")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    rule = f"{bus}-every-event"
    events.put_rule(Name=rule, EventBusName=bus, EventPattern=json.dumps({"source": ["resumable"]}))
    events.put_targets(Rule=rule, EventBusName=bus, Targets=[{"Id": "queue", "Arn": queue_arn}])
    topic = client("sns", settings).create_topic(Name=f"{bus}-mail")["TopicArn"]
    mail = sqs.create_queue(QueueName=f"{bus}-mail")["QueueUrl"]
    mail_arn = sqs.get_queue_attributes(QueueUrl=mail, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    client("sns", settings).subscribe(TopicArn=topic, Protocol="sqs", Endpoint=mail_arn)
    return EventResources(queue_url, dead_letters, topic, mail)


class StreamPoller:
    """Reads the table's stream from its start and hands each batch to the publisher's handler."""

    def __init__(self, settings: Settings, handler: Handler, dead_letter_queue_url: str, mapping: Mapping) -> None:
        from moto.events.models import EventPattern

        self.settings, self.handler, self.mapping = settings, handler, mapping
        self.environment = settings.environment()  # what names the resources it reaches
        self.dead_letter_queue_url = dead_letter_queue_url
        self._patterns = [EventPattern.load(p) for p in mapping.filter_patterns]
        self._streams = client("dynamodbstreams", settings)
        self._sqs = client("sqs", settings)
        table = client("dynamodb", settings).describe_table(TableName=settings.table_name)["Table"]
        self.stream_arn: str = table["LatestStreamArn"]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="publisher-stream", daemon=True)
        self._empty_rounds = 0
        self._round_done = threading.Condition()
        self._rounds_wanted = 0  # (the empty rounds caught_up waits for: made at once, not a second apart)
        STREAM_RECORDS.counted()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        STREAM_RECORDS.wake()
        self._thread.join(timeout=30)

    def _poll(self) -> None:
        # The mapping reads the stream (and dead-letters) with the function's role, as on AWS.
        with acting_as(PUBLISHER, self.environment):
            self._poll_until_stopped()

    def _poll_until_stopped(self) -> None:
        iterators: dict[str, str] = {}
        while not self._stop.is_set():
            seen, failed = STREAM_RECORDS.count, False
            try:
                busy = self._poll_once(iterators)
            except Exception:
                if self._stop.is_set():
                    return  # the embedded AWS went away first
                logger.exception("reading the table's stream failed; trying again")
                busy, failed = False, True
            if not busy:
                if not failed:  # (a round that failed read nothing: caught_up waits for one that read all)
                    with self._round_done:
                        self._empty_rounds += 1
                        self._round_done.notify_all()
                STREAM_RECORDS.wait_past(seen, functools.partial(self._woken, failed))

    def _woken(self, failed: bool) -> bool:
        """Whether an idle poller goes on: stopped, or a round is wanted of it (not after one that failed)."""
        return (not failed and self._empty_rounds < self._rounds_wanted) or self._stop.is_set()

    def caught_up(self, timeout: float) -> None:
        """Return once a whole round over the stream that began after this call found nothing to
        deliver: everything written before the call has been handed to the publisher (and retried)."""
        with self._round_done:
            target = self._empty_rounds + 2  # the round under way may have begun before the call
            self._rounds_wanted = max(self._rounds_wanted, target)
            STREAM_RECORDS.wake()
            if not self._round_done.wait_for(lambda: self._empty_rounds >= target, timeout):
                raise TimeoutError(f"the publisher did not catch up with the stream in {timeout:.0f} s")

    def _poll_once(self, iterators: dict[str, str]) -> bool:
        """One round over the shards; whether any records were delivered. A shard's position moves on
        only once its records were delivered (or dead-lettered), as a mapping checkpoints."""
        shards = self._streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]
        for shard in shards:
            if shard["ShardId"] not in iterators:
                iterators[shard["ShardId"]] = self._streams.get_shard_iterator(
                    StreamArn=self.stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
        busy = False
        for shard_id, iterator in list(iterators.items()):
            page = self._streams.get_records(ShardIterator=iterator, Limit=self.mapping.batch_size)
            records = [
                r
                for r in map(self._as_lambda_sees_it, page["Records"])
                if any(p.matches_event(r) for p in self._patterns)  # type: ignore[arg-type]
            ]
            if records:
                busy = True
                self._deliver(shard_id, records, attempt=0)
            iterators[shard_id] = page["NextShardIterator"]
        return busy

    def _as_lambda_sees_it(self, record: dict[str, Any]) -> dict[str, Any]:
        """A GetRecords record in the shape of a record of Lambda's DynamoDB Streams event."""
        change = dict(record["dynamodb"])
        created = change.get("ApproximateCreationDateTime")
        if created is not None and not isinstance(created, int | float):
            change["ApproximateCreationDateTime"] = int(created.timestamp())
        return {**record, "dynamodb": change, "eventSourceARN": self.stream_arn}

    def _deliver(self, shard_id: str, records: list[dict[str, Any]], attempt: int) -> None:
        """Invoke the handler with ``records``; on failure, as the mapping says: retry from the first
        record reported failed (or the whole batch, bisected, on a function error) until the retries
        are used up, then send the rest's description to the dead-letter queue."""
        context = LambdaContext(function_name=PUBLISHER, aws_request_id=str(uuid.uuid4()))
        try:
            reply = self.handler({"Records": records}, context) or {}
        except Exception as error:
            logger.warning("publisher invocation failed (%s records): %s", len(records), error)
            if self._exhausted(attempt):
                self._dead_letter(shard_id, records, f"function error: {error}")
            elif self.mapping.bisect and len(records) > 1:
                half = len(records) // 2
                self._deliver(shard_id, records[:half], attempt + 1)
                self._deliver(shard_id, records[half:], attempt + 1)
            else:
                self._deliver(shard_id, records, attempt + 1)
            return
        failed = (
            {f["itemIdentifier"] for f in reply.get("batchItemFailures", [])}
            if self.mapping.report_item_failures
            else set()
        )
        if not failed:
            return
        first = min(i for i, r in enumerate(records) if r["dynamodb"]["SequenceNumber"] in failed)
        if self._exhausted(attempt):
            self._dead_letter(shard_id, records[first:], "batch item failures")
        else:
            self._deliver(shard_id, records[first:], attempt + 1)

    def _exhausted(self, attempt: int) -> bool:
        return 0 <= self.mapping.retries <= attempt

    def _dead_letter(self, shard_id: str, records: list[dict[str, Any]], condition: str) -> None:
        """What Lambda sends an event source mapping's on-failure destination: where the batch is."""
        sequence = [r["dynamodb"]["SequenceNumber"] for r in records]
        logger.error("publisher gave up on %s records of shard %s: %s", len(records), shard_id, condition)
        self._sqs.send_message(
            QueueUrl=self.dead_letter_queue_url,
            MessageBody=json.dumps(
                {
                    "requestContext": {"condition": condition, "approximateInvokeCount": self.mapping.retries + 1},
                    "DDBStreamBatchInfo": {
                        "shardId": shard_id,
                        "startSequenceNumber": sequence[0],
                        "endSequenceNumber": sequence[-1],
                        "batchSize": len(records),
                        "streamArn": self.stream_arn,
                    },
                }
            ),
        )


def publisher_handler() -> Handler:
    """The template's Publisher handler, imported as Lambda would (it reads the environment now)."""
    return load_handler(functions(load_template())[PUBLISHER])


@contextmanager
def publishing(
    settings: Settings, handler: Callable[[Settings], Handler] | None = None
) -> Iterator[tuple[EventResources, Settings]]:
    """The event resources, and the publisher reading the table's stream until the block ends; the
    settings the publisher is given (the dead-letter queue's URL and NotifyEmail's topic added). The
    template's Publisher handler is imported with ``DEAD_LETTER_QUEUE_URL`` and ``NOTIFY_TOPIC_ARN``
    set in the environment, as the template sets them; ``handler`` makes the handler from those
    settings instead (a test's publisher)."""
    resources = create_event_resources(settings)
    settings = settings.model_copy(
        update={"dead_letter_queue_url": resources.dead_letter_queue_url, "notify_topic_arn": resources.topic_arn}
    )
    if handler is None:
        os.environ["DEAD_LETTER_QUEUE_URL"] = resources.dead_letter_queue_url
        os.environ["NOTIFY_TOPIC_ARN"] = resources.topic_arn
    poller = StreamPoller(
        settings,
        handler(settings) if handler else publisher_handler(),
        resources.dead_letter_queue_url,
        Mapping.of_template(),
    )
    poller.start()
    resources.poller = poller
    try:
        yield resources, settings
    finally:
        poller.stop()


def line(event: dict[str, Any]) -> str:
    """One event as a person scans it: session, sequence, detail type and what it says."""
    detail = event.get("detail", {})
    said = detail.get("summary") or " ".join(
        str(detail[k])
        for k in ("status", "decision", "answeredBy", "why", "reason", "output", "error", "deletedBy", "restoredBy")
        if detail.get(k)
    )
    response = detail.get("response")
    if isinstance(response, dict) and response.get("input") is not None and detail.get("decision") == "approve":
        said += f" with the edited input {json.dumps(response['input'], ensure_ascii=False)}"
    if isinstance(response, dict) and isinstance(response.get("message"), str):
        said += f" saying {json.dumps(response['message'], ensure_ascii=False)}"
    return f"{detail.get('sessionId')}  #{detail.get('sequence')}  {event.get('detail-type')}  {said}".rstrip()


def read_events(queue_url: str, *, follow: bool = False, idle_seconds: int = 2) -> Iterator[dict[str, Any]]:
    """The events on the queue, each deleted once read; until it has been empty for ``idle_seconds``
    (``follow``: until interrupted). The endpoint is the queue URL's."""
    from urllib.parse import urlsplit

    parts = urlsplit(queue_url)
    settings = Settings(
        endpoint_url=f"{parts.scheme}://{parts.netloc}", access_key_id="local", secret_access_key="local"
    )
    sqs = client("sqs", settings)
    while True:
        reply = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=idle_seconds)
        messages = reply.get("Messages", [])
        if not messages and not follow:
            return
        for message in messages:
            yield json.loads(message["Body"])
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


def read_mail(queue_url: str, *, follow: bool = False, idle_seconds: int = 2) -> Iterator[tuple[str, str]]:
    """The e-mails NotifyEmail's topic sent (the subject and the text of each), each read once."""
    for delivered in read_events(queue_url, follow=follow, idle_seconds=idle_seconds):
        yield str(delivered.get("Subject") or ""), str(delivered.get("Message") or "")


def main(argv: list[str] | None = None) -> None:
    """``python -m resumable.local.events QUEUE_URL [--follow] [--json] [--type DETAIL_TYPE ...]``:
    print the queue's events (each is read once: the reader deletes what it read, of every type)."""
    import argparse

    from resumable.store.outbox import DETAIL_TYPES

    parser = argparse.ArgumentParser(prog="python -m resumable.local.events", description=main.__doc__)
    parser.add_argument("queue_url", help="the queue make run printed")
    parser.add_argument("--follow", action="store_true", help="keep reading until Ctrl-C")
    parser.add_argument("--json", action="store_true", help="print each event whole, as JSON")
    parser.add_argument("--mail", action="store_true", help="the queue is the mailbox's: print each e-mail")
    parser.add_argument(
        "--type",
        action="append",
        dest="types",
        metavar="DETAIL_TYPE",
        help=f"print only these: {', '.join(DETAIL_TYPES)}",
    )
    options = parser.parse_args(argv)
    unknown = sorted(set(options.types or ()) - set(DETAIL_TYPES))
    if unknown:
        parser.error(
            f"no detail type {', '.join(map(repr, unknown))}: resumable publishes {', '.join(DETAIL_TYPES)}; "
            "nothing was read"
        )
    if options.mail:
        try:
            for subject, text in read_mail(options.queue_url, follow=options.follow):
                print(f"Subject: {subject}\n\n{text}", flush=True)
        except KeyboardInterrupt:
            pass
        return
    try:
        for event in read_events(options.queue_url, follow=options.follow):
            if options.types and event.get("detail-type") not in options.types:
                continue
            print(json.dumps(event) if options.json else line(event), flush=True)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

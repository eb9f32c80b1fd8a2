"""``resumable admin dead-letters`` reads a batch the publisher gave up on from the table's stream, and
names the sessions among its records: the stream carries every write of the table, so a batch may hold
the audit trail's, the grants' and the snapshots' records beside the sessions' own."""

from __future__ import annotations

from typing import Any

import pytest

from resumable.aws.clients import client
from resumable.cli.admin import _sessions_in, _what
from resumable.config import Settings
from resumable.store import DynamoDBStore

OUTBOX = "TURN#t1#EVENT#0001"
"""The sort key of an outbox item (what the publisher publishes): a write of any other is not one."""


def _batch(aws: Settings, partitions: list[str], batch_size: int | None = None) -> dict[str, Any]:
    """The ``DDBStreamBatchInfo`` of a dead letter whose range is the stream records of a write to each
    of ``partitions`` (``pk`` or ``pk sk``; an outbox item's sort key by default), in order; its
    ``batchSize`` what the mapping's filter let through, all of them unless said."""
    dynamodb = DynamoDBStore(aws).dynamodb
    for written in partitions:
        pk, _, sk = written.partition(" ")
        dynamodb.put_item(TableName=aws.table_name, Item={"pk": {"S": pk}, "sk": {"S": sk or OUTBOX}})
    streams = client("dynamodbstreams", aws)
    arn = dynamodb.describe_table(TableName=aws.table_name)["Table"]["LatestStreamArn"]
    [shard] = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON")
    records = streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    numbers = [r["dynamodb"]["SequenceNumber"] for r in records]
    assert len(numbers) == len(partitions)
    return {
        "shardId": shard["ShardId"],
        "startSequenceNumber": numbers[0],
        "endSequenceNumber": numbers[-1],
        "batchSize": batch_size or len(numbers),
        "streamArn": arn,
    }


@pytest.fixture
def queue_url(aws: Settings, monkeypatch: pytest.MonkeyPatch) -> str:
    """A dead-letter queue's URL at the embedded AWS (where the command reads the stream too), with
    credentials to sign with, as a person running the command has."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "embedded")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "embedded")
    return f"{aws.endpoint_url}/123456789012/dead-letters"


def test_a_batch_names_only_the_sessions_among_its_records(aws: Settings, queue_url: str) -> None:
    written = ["SESSION#a", "AUDIT#2026-12-08#3", "GRANT#SESSION#a#g1", "SNAPSHOT#k", "SESSION#b", "SESSION#a"]
    written += ["SESSION#c TURN#t2", "SESSION#d SESSION"]  # (a turn's and a session's writes: not events)
    batch = _batch(aws, written)

    assert _sessions_in(batch, queue_url, aws.region) == {"a", "b"}
    what, fix = _what({"DDBStreamBatchInfo": batch}, queue_url, aws.region)
    assert what == "a batch the publisher gave up on, of sessions ['a', 'b']: resumable admin republish each"
    assert fix is None


def test_a_batch_of_one_session_and_other_records_is_republished_for_that_session(
    aws: Settings, queue_url: str
) -> None:
    batch = _batch(aws, ["AUDIT#2026-12-08", "SESSION#only", "GRANT#PRINCIPAL#ann#g2"])

    what, fix = _what({"DDBStreamBatchInfo": batch}, queue_url, aws.region)

    assert (what, fix) == ("a batch of session only's events the publisher gave up on", ["republish", "only"])


def test_a_batch_of_no_sessions_records_says_there_is_nothing_to_republish(aws: Settings, queue_url: str) -> None:
    batch = _batch(aws, ["AUDIT#2026-12-08", "SNAPSHOT#k2"])

    what, fix = _what({"DDBStreamBatchInfo": batch}, queue_url, aws.region)

    assert (what, fix) == (
        "a batch the publisher gave up on that holds no session's records: nothing to republish",
        None,
    )


def test_a_batch_is_read_to_its_last_record_past_the_writes_the_filter_kept_out(aws: Settings, queue_url: str) -> None:
    """The mapping's filter let 2 records through (batchSize 2): the range between them holds more."""
    batch = _batch(aws, ["SESSION#a", "AUDIT#2026-12-08", "AUDIT#2026-12-08#1", "SESSION#c TURN#t", "SESSION#b"], 2)

    assert _sessions_in(batch, queue_url, aws.region) == {"a", "b"}

"""AWS-like latency on the embedded AWS: each call made to take at least the median AWS publishes for
its kind, so that an operation's own time is weighed against calls as slow as they are on AWS.

On the embedded AWS a call returns in about a millisecond, so the time a function spends on itself
(building requests, reading replies, its own logic) looks large beside it; on AWS each call takes
several. ``MODEL`` is each kind of call's median, from what AWS publishes (bench/README.md lists the
sources); a call the emulator answers sooner is held until its median has passed (one it answers
later is not shortened: the emulator's own time counts as the call's, never twice).
"""

from __future__ import annotations

from dataclasses import dataclass

SINGLE_ITEM = 0.005  # GetItem, PutItem, UpdateItem, DeleteItem: "single-digit milliseconds"
QUERY = 0.005  # a Query of one partition that returns one page of small items: as a single-item read
TRANSACTION = 2 * SINGLE_ITEM  # every item is written twice, to prepare and to commit
S3_SMALL = 0.010  # requests under 512 KB: "median latencies often in the range of tens of milliseconds"
EVENTS = 0.010  # PutEvents: no published median; taken as S3's, another HTTP front door

MODEL: dict[str, float] = {
    "dynamodb.GetItem": SINGLE_ITEM,
    "dynamodb.PutItem": SINGLE_ITEM,
    "dynamodb.UpdateItem": SINGLE_ITEM,
    "dynamodb.DeleteItem": SINGLE_ITEM,
    "dynamodb.Query": QUERY,
    "dynamodb.BatchGetItem": SINGLE_ITEM,  # "read and write items in parallel to minimize response latencies"
    "dynamodb.BatchWriteItem": SINGLE_ITEM,
    "dynamodb.TransactWriteItems": TRANSACTION,
    "dynamodb.TransactGetItems": TRANSACTION,
    "s3.PutObject": S3_SMALL,
    "s3.GetObject": S3_SMALL,
    "s3.PutObjectTagging": S3_SMALL,
    "s3.DeleteObject": S3_SMALL,
    "events.PutEvents": EVENTS,
}


@dataclass(frozen=True)
class Latency:
    """The seconds a call of each kind takes at least (``AWS_LIKE``: ``MODEL``'s)."""

    medians: dict[str, float]

    def of(self, call: str) -> float:
        """``call``'s median (``service.Operation``, as botocore names them); a call the model does not
        know is an error rather than a free call."""
        try:
            return self.medians[call]
        except KeyError:
            raise KeyError(f"the latency model has no median for {call}: add one to bench/latency.py") from None


AWS_LIKE = Latency(MODEL)

"""The store: turns, interactions, leases, the action journal's entries and the outbox in DynamoDB;
snapshots in S3."""

from typing import Any

from resumable.store.base import AnswerOutcome, Commit, Store
from resumable.store.dynamodb import DynamoDBStore
from resumable.store.s3_session import S3Session


def __getattr__(name: str) -> Any:
    """``embedded_aws`` and ``create_resources`` are imported on first use: a Lambda function never
    needs the embedded AWS, so its cold start does not pay for it."""
    if name in ("embedded_aws", "create_resources"):
        from resumable.store import embedded

        return getattr(embedded, name)
    raise AttributeError(f"module 'resumable.store' has no attribute {name!r}")


__all__ = [
    "AnswerOutcome",
    "Commit",
    "DynamoDBStore",
    "S3Session",
    "Store",
    "create_resources",
    "embedded_aws",
]

"""The store: turns, interactions, leases, the action journal's entries and the outbox in DynamoDB;
snapshots in S3."""

from resumable.store.base import AnswerOutcome, Commit, Store
from resumable.store.dynamodb import DynamoDBStore
from resumable.store.s3_session import S3Session

__all__ = ["AnswerOutcome", "Commit", "DynamoDBStore", "S3Session", "Store"]

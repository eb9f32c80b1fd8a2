"""The store: turns, interactions, leases, the action journal's entries and the outbox in DynamoDB;
snapshots in S3 (or, small ones, SNAPSHOT_ITEM_BYTES, in DynamoDB)."""

from resumable.store.answers import AnswerOutcome
from resumable.store.base import Commit, Snapshots, Store
from resumable.store.dynamodb import DynamoDBStore
from resumable.store.s3_session import S3Session
from resumable.store.snapshots import S3Snapshots, TableOrS3Snapshots

__all__ = [
    "AnswerOutcome",
    "Commit",
    "DynamoDBStore",
    "S3Session",
    "S3Snapshots",
    "Snapshots",
    "Store",
    "TableOrS3Snapshots",
]

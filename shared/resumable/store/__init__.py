"""The store: turns, interactions, leases, the action journal and the outbox in DynamoDB; snapshots in S3."""

from resumable.store.base import AnswerOutcome, Commit, Store
from resumable.store.dynamodb import DynamoDBStore
from resumable.store.embedded import create_resources, embedded_aws
from resumable.store.journal import StoreActionJournal
from resumable.store.s3_session import S3Session

__all__ = [
    "AnswerOutcome",
    "Commit",
    "DynamoDBStore",
    "S3Session",
    "Store",
    "StoreActionJournal",
    "create_resources",
    "embedded_aws",
]

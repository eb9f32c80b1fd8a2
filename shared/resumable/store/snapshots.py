"""Snapshots: written once under a new key, read back, and retired once nothing points at them. In S3
(tagged for the bucket's lifecycle when retired), or, those of at most ``SNAPSHOT_ITEM_BYTES`` (off by
default), as items of the table (given an expiry when retired): docs/snapshots.md."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from resumable.aws.clients import LazyClient, client
from resumable.exceptions import SnapshotError
from resumable.store.base import Snapshots
from resumable.store.codec import value
from resumable.store.resources import RETIRED_DAYS, RETIRED_TAG, TTL_ATTRIBUTE
from resumable.store.table import aws_call, code_of, refusal

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

ITEM = "item:"
"""How the key of a snapshot kept as an item of the table begins: the rest is the key it would have had
in the bucket. Its item is in a partition of its own, ``SNAPSHOT#`` and that key."""


def _body(snapshot: dict[str, Any]) -> bytes:
    return json.dumps(snapshot, separators=(",", ":")).encode()


def _loaded(body: bytes, where: str, thing: str) -> Any:
    """The snapshot ``body`` holds; ``SnapshotError`` naming it (``where``, its ``thing``) if it is not JSON."""
    try:
        return json.loads(body)
    except ValueError as error:
        raise SnapshotError(
            f"snapshot {where} is not JSON ({error}): nothing was restored; the turn stays as it is until the "
            f"{thing} is repaired, then recover resumes it"
        ) from error


def _missing(where: str, thing: str) -> SnapshotError:
    return SnapshotError(
        f"snapshot {where} does not exist: nothing was restored; the turn stays as it is until the {thing} is "
        "put back, then recover resumes it"
    )


class S3Snapshots(LazyClient["S3Client"], Snapshots):
    """``Snapshots`` in one S3 bucket. Its client is made on first use: a request that reads no
    snapshot (most reads of a turn) never loads S3's service model."""

    service = "s3"

    @property
    def bucket(self) -> str:
        return self.settings.bucket_name

    @property
    def s3(self) -> S3Client:
        return self.client

    def put(self, key: str, snapshot: dict[str, Any]) -> str:
        return self._put_object(key, _body(snapshot))

    @aws_call
    def _put_object(self, key: str, body: bytes) -> str:
        try:
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType="application/json", IfNoneMatch="*")
        except ClientError as error:
            # Keys are new (they carry a uuid), so "already there" can only be an earlier attempt of
            # this same write whose reply was lost and that botocore retried: the object is ours.
            if error.response.get("Error", {}).get("Code") != "PreconditionFailed":
                raise
        return key

    def get(self, key: str) -> Any:
        return _loaded(self._get_object(key), f"s3://{self.bucket}/{key}", "object")

    @aws_call
    def _get_object(self, key: str) -> bytes:
        try:
            body: bytes = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as error:
            if code_of(error) != "NoSuchKey":
                raise
            raise _missing(f"s3://{self.bucket}/{key}", "object") from error
        return body

    @aws_call
    def retire(self, keys: list[str], now: float) -> None:
        for key in keys:
            self.s3.put_object_tagging(
                Bucket=self.bucket,
                Key=key,
                Tagging={"TagSet": [RETIRED_TAG]},  # type: ignore[list-item]
            )


class TableOrS3Snapshots(S3Snapshots):
    """Snapshots of at most ``snapshot_item_bytes`` (``SNAPSHOT_ITEM_BYTES``) as items of the table,
    larger ones in the bucket (``S3Snapshots``). A small snapshot costs a write unit a KB to put where S3
    bills a PUT as eight, and is retired by an expiry (DynamoDB's TTL deletes it, unbilled) where S3 bills
    a tag as a PUT. Its key says where it is (``ITEM``). ``dynamodb``: the store's client, shared."""

    def __init__(self, settings: Any, dynamodb: DynamoDBClient | None = None) -> None:
        super().__init__(settings)
        self._dynamodb = dynamodb

    @property
    def dynamodb(self) -> DynamoDBClient:
        if self._dynamodb is None:
            self._dynamodb = client("dynamodb", self.settings)
        return self._dynamodb

    def put(self, key: str, snapshot: dict[str, Any]) -> str:
        body = _body(snapshot)
        if len(body) > self.settings.snapshot_item_bytes:
            return self._put_object(key, body)
        return self._put_item(key, body)

    @aws_call
    def _put_item(self, key: str, body: bytes) -> str:
        try:
            self.dynamodb.put_item(
                TableName=self.settings.table_name,
                Item={**_key(key), "entity": value("snapshot"), "body": {"B": body}},
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as error:  # (already there: an earlier attempt of this write, as in S3Snapshots)
            if refusal(error) is None:
                raise
        return ITEM + key

    def get(self, key: str) -> Any:
        if not key.startswith(ITEM):
            return super().get(key)
        return _loaded(self._get_item(key), key, self._thing)

    @aws_call
    def _get_item(self, key: str) -> bytes:
        item = self.dynamodb.get_item(
            TableName=self.settings.table_name, Key=_key(key.removeprefix(ITEM)), ConsistentRead=True
        ).get("Item")
        if item is None:
            raise _missing(key, self._thing)
        body = item.get("body", {}).get("B")
        if not isinstance(body, bytes):  # (an item damaged by hand: no body, or not a binary one)
            raise SnapshotError(
                f"snapshot {key} has no binary body: nothing was restored; the turn stays as it is until the "
                f"{self._thing} is repaired, then recover resumes it"
            )
        return body

    @aws_call
    def retire(self, keys: list[str], now: float) -> None:
        super().retire([k for k in keys if not k.startswith(ITEM)], now)
        for key in (k for k in keys if k.startswith(ITEM)):
            try:
                self.dynamodb.update_item(
                    TableName=self.settings.table_name,
                    Key=_key(key.removeprefix(ITEM)),
                    UpdateExpression="SET #purge = if_not_exists(#purge, :purge)",
                    ConditionExpression="attribute_exists(pk)",
                    ExpressionAttributeNames={"#purge": TTL_ATTRIBUTE},
                    ExpressionAttributeValues={":purge": value(int(now + RETIRED_DAYS * 86400))},
                )
            except ClientError as error:  # (gone already: nothing left to retire)
                if refusal(error) is None:
                    raise

    @property
    def _thing(self) -> str:
        return f"item in table {self.settings.table_name}"


def _key(key: str) -> dict[str, Any]:
    """Where a snapshot kept as an item is: a partition of its own."""
    return {"pk": value(f"SNAPSHOT#{key}"), "sk": value("SNAPSHOT")}

"""Snapshots in S3: written once under a new key, read back, and retired (tagged for the bucket's
lifecycle) once nothing points at them."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from resumable.aws.clients import LazyClient
from resumable.exceptions import SnapshotError
from resumable.store.base import Snapshots
from resumable.store.resources import RETIRED_TAG
from resumable.store.table import aws_call, code_of

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


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

    @aws_call
    def put(self, key: str, snapshot: dict[str, Any]) -> None:
        try:
            self.s3.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=json.dumps(snapshot, separators=(",", ":")).encode(),
                ContentType="application/json",
                IfNoneMatch="*",
            )
        except ClientError as error:
            # Keys are new (they carry a uuid), so "already there" can only be an earlier attempt of
            # this same write whose reply was lost and that botocore retried: the object is ours.
            if error.response.get("Error", {}).get("Code") != "PreconditionFailed":
                raise

    @aws_call
    def get(self, key: str) -> Any:
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as error:
            if code_of(error) != "NoSuchKey":
                raise
            raise SnapshotError(
                f"snapshot s3://{self.bucket}/{key} does not exist: nothing was restored; the turn stays as it is "
                "until the object is put back, then recover resumes it"
            ) from error
        try:
            return json.loads(body)
        except ValueError as error:
            raise SnapshotError(
                f"snapshot s3://{self.bucket}/{key} is not JSON ({error}): nothing was restored; the turn stays as "
                "it is until the object is repaired, then recover resumes it"
            ) from error

    @aws_call
    def retire(self, keys: list[str]) -> None:
        for key in keys:
            self.s3.put_object_tagging(
                Bucket=self.bucket,
                Key=key,
                Tagging={"TagSet": [RETIRED_TAG]},  # type: ignore[list-item]
            )

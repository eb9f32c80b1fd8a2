"""The audit trail's files in S3 (``AUDIT_BUCKET``): each hour's records and its signed digest, each
written once under a key of its own (``If-None-Match``), never replaced; under the bucket's Object
Lock (the template's ``AuditObjectLockDays``) not deletable either, for that long."""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from resumable.aws.clients import LazyClient
from resumable.exceptions import AwsError
from resumable.store.table import aws_call, code_of

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


class TrailFiles(LazyClient["S3Client"]):
    service = "s3"

    @property
    def bucket(self) -> str:
        if not self.settings.audit_bucket:
            raise AwsError("no audit bucket is configured (AUDIT_BUCKET, the template's AuditTrailBucket)")
        return self.settings.audit_bucket

    @property
    def s3(self) -> S3Client:
        return self.client

    @aws_call
    def put_once(self, key: str, body: bytes, content_type: str) -> bytes:
        """``body`` under ``key``, unless an object is there already: then what is there (an earlier
        delivery of the same file, whose content stands). What the key holds after the call."""
        try:
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType=content_type, IfNoneMatch="*")
        except ClientError as error:
            if code_of(error) not in ("PreconditionFailed", "ConditionalRequestConflict"):
                raise
            held = self.get(key)
            if held is None:
                raise
            return held
        return body

    @aws_call
    def first_key(self, prefix: str) -> str | None:
        """The first key under ``prefix`` in key order (None: none)."""
        listed = self.s3.list_objects_v2(Bucket=self.bucket, Prefix=prefix, MaxKeys=1).get("Contents", [])
        return str(listed[0]["Key"]) if listed else None

    @aws_call
    def get(self, key: str) -> bytes | None:
        """What ``key`` holds (None: nothing)."""
        try:
            return bytes(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())
        except ClientError as error:
            if code_of(error) != "NoSuchKey":
                raise
            return None

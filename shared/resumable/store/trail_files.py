"""The audit trail's files in S3 (``AUDIT_BUCKET``): each hour's records and its signed digest, each
written once under a key of its own (``If-None-Match``), never replaced; under the bucket's Object
Lock (the template's ``AuditObjectLockDays``) not deletable either, for that long."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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
    def put_once(self, key: str, body: bytes, content_type: str) -> bool:
        """``body`` under ``key``, written once: True when it is there now (written, or written before by
        an earlier attempt of the same delivery, byte for byte); False when another object holds the key
        (written by someone else: it is never replaced, nor taken for ours)."""
        try:
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType=content_type, IfNoneMatch="*")
        except ClientError as error:
            if code_of(error) not in ("PreconditionFailed", "ConditionalRequestConflict"):
                raise
            return self.get(key) == body
        return True

    @aws_call
    def history(self, key: str) -> tuple[int, int]:
        """How many versions of ``key`` the (versioned) bucket holds, and how many delete markers: an
        object written once has one version and no marker."""
        listed = self.s3.list_object_versions(Bucket=self.bucket, Prefix=key)
        versions = sum(1 for v in listed.get("Versions", []) if v.get("Key") == key)
        return versions, sum(1 for m in listed.get("DeleteMarkers", []) if m.get("Key") == key)

    @aws_call
    def first_ever(self, prefix: str, shaped: Callable[[str], bool]) -> str | None:
        """The first key under ``prefix`` that is ``shaped``, in key order, among every version and delete
        marker the bucket holds (an object deleted since still counts); None: none."""
        request: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        while True:
            listed = self.s3.list_object_versions(**request)
            keys = sorted(
                str(item["Key"])
                for item in [*listed.get("Versions", []), *listed.get("DeleteMarkers", [])]
                if shaped(str(item.get("Key", "")))
            )
            if keys:
                return keys[0]
            if not listed.get("IsTruncated"):
                return None
            request |= {"KeyMarker": listed["NextKeyMarker"], "VersionIdMarker": listed["NextVersionIdMarker"]}

    @aws_call
    def get(self, key: str) -> bytes | None:
        """What ``key`` holds (None: nothing)."""
        try:
            return bytes(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())
        except ClientError as error:
            if code_of(error) != "NoSuchKey":
                raise
            return None

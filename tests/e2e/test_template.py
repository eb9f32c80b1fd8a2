"""template.yaml declares what the code expects: the table and bucket the embedded AWS creates."""

from __future__ import annotations

from typing import Any

import pytest

from resumable.local.server import load_template
from resumable.store.resources import (
    BILLING_MODE,
    BUCKET_LIFECYCLE_RULES,
    TABLE_ATTRIBUTES,
    TABLE_INDEXES,
    TABLE_KEY_SCHEMA,
)
from tools.validate_template import translate


@pytest.fixture(scope="module")
def resources() -> dict[str, Any]:
    found: dict[str, Any] = load_template()["Resources"]
    return found


def test_the_template_declares_the_table_the_embedded_aws_creates(resources: dict[str, Any]) -> None:
    table = resources["TurnsTable"]["Properties"]
    assert table["KeySchema"] == TABLE_KEY_SCHEMA
    assert sorted(table["AttributeDefinitions"], key=str) == sorted(TABLE_ATTRIBUTES, key=str)
    assert table["GlobalSecondaryIndexes"] == TABLE_INDEXES
    assert table["BillingMode"] == BILLING_MODE
    assert table["SSESpecification"] == {"SSEEnabled": True}
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_the_bucket_is_private_encrypted_and_tls_only(resources: dict[str, Any]) -> None:
    bucket = resources["SnapshotsBucket"]["Properties"]
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    [statement] = resources["SnapshotsBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert (statement["Effect"], statement["Condition"]) == ("Deny", {"Bool": {"aws:SecureTransport": "false"}})


def _as_s3_api(rule: dict[str, Any]) -> dict[str, Any]:
    """A CloudFormation lifecycle rule in the S3 API's shape (what the embedded AWS is given)."""
    converted: dict[str, Any] = {"ID": rule["Id"], "Status": rule["Status"]}
    if "TagFilters" in rule:
        [tag] = rule["TagFilters"]
        converted["Filter"] = {"Tag": tag}
    else:
        converted["Filter"] = {"Prefix": rule.get("Prefix", "")}
    if "ExpirationInDays" in rule:
        converted["Expiration"] = {"Days": rule["ExpirationInDays"]}
    if "AbortIncompleteMultipartUpload" in rule:
        converted["AbortIncompleteMultipartUpload"] = rule["AbortIncompleteMultipartUpload"]
    return converted


def test_the_bucket_lifecycle_is_the_one_the_embedded_aws_gets(resources: dict[str, Any]) -> None:
    rules = resources["SnapshotsBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    assert [_as_s3_api(rule) for rule in rules] == BUCKET_LIFECYCLE_RULES
    assert {"Key": "resumable-snapshot", "Value": "retired"} in rules[0]["TagFilters"]


def test_the_template_translates_offline_into_cloudformation() -> None:
    from samtranslator.yaml_helper import yaml_parse

    from tools.validate_template import TEMPLATE

    translated = translate(yaml_parse(TEMPLATE.read_text()))
    kinds = {r["Type"] for r in translated["Resources"].values()}
    assert {"AWS::Lambda::Function", "AWS::ApiGatewayV2::Api", "AWS::DynamoDB::Table", "AWS::S3::Bucket"} <= kinds

"""The store's own promises that the use cases rely on."""

from __future__ import annotations

import pytest
from botocore.exceptions import ParamValidationError
from pydantic import ValidationError

from resumable.aws.clients import client
from resumable.config import Settings
from resumable.store import S3Snapshots


def test_a_snapshot_key_is_written_once_and_never_overwritten(aws: Settings) -> None:
    snapshots = S3Snapshots(aws)
    snapshots.put("snapshots/test/once.json", {"first": True})
    # A second put of the same key (only ever a retry of the same write: keys carry a uuid) leaves the
    # first object in place.
    snapshots.put("snapshots/test/once.json", {"second": True})
    assert snapshots.get("snapshots/test/once.json") == {"first": True}


def test_settings_are_read_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "RESUMABLE_TABLE": "turns",
            "RESUMABLE_BUCKET": "snaps",
            "AWS_DEFAULT_REGION": "eu-west-1",
            "AWS_ENDPOINT_URL": "http://127.0.0.1:4566",
            "AGENT_FACTORY": "app.agents:build",
            "APPROVAL_EXPIRY_SECONDS": "3600",
            "LEASE_SECONDS": "30",
        }
    )
    assert (settings.table_name, settings.bucket_name, settings.region) == ("turns", "snaps", "eu-west-1")
    assert (settings.endpoint_url, settings.agent_factory) == ("http://127.0.0.1:4566", "app.agents:build")
    assert (settings.approval_expiry_seconds, settings.lease_seconds) == (3600, 30)
    assert Settings.from_env({}) == Settings()


def test_settings_survive_a_round_trip_through_the_environment(aws: Settings) -> None:
    again = Settings.from_env(aws.environment())
    assert (again.table_name, again.bucket_name, again.region, again.endpoint_url) == (
        aws.table_name,
        aws.bucket_name,
        aws.region,
        aws.endpoint_url,
    )


def test_answers_and_prompts_may_not_be_allowed_larger_than_aws_keeps_and_publishes_them() -> None:
    """An answer is kept on its question (a 400 KB item) and published whole (a 256 KB event); a prompt
    travels in a 128 KB body: a setting past that would fail on AWS at the first large one."""
    for too_large in ({"max_response_bytes": 300_000}, {"max_prompt_chars": 100_000}):
        with pytest.raises(ValidationError, match="less than or equal to"):
            Settings(**too_large)  # type: ignore[arg-type]
    assert Settings(max_response_bytes=64 * 1024, max_prompt_chars=30_000).max_response_bytes == 65536


def test_the_tests_check_every_request_before_it_is_sent_and_a_deployed_client_does_not(
    aws: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded AWS accepts a Query with a Limit of 0, which AWS refuses: the tests' clients check
    each request as botocore does by default (RESUMABLE_CHECK_REQUESTS), a deployed one leaves it to AWS."""
    query = {
        "TableName": aws.table_name,
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": "SESSION#nobody"}},
        "Limit": 0,
    }
    with pytest.raises(ParamValidationError, match="Limit"):
        client("dynamodb", aws).query(**query)
    monkeypatch.delenv("RESUMABLE_CHECK_REQUESTS")
    assert client("dynamodb", aws).query(**query)["Items"] == []

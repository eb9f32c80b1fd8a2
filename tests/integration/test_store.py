"""The store's own promises that the use cases rely on."""

from __future__ import annotations

import json
import uuid

import pytest
from botocore.exceptions import ParamValidationError
from pydantic import ValidationError

from resumable.aws.clients import client
from resumable.config import Settings
from resumable.exceptions import SnapshotError
from resumable.store import S3Snapshots, TableOrS3Snapshots
from resumable.store.resources import RETIRED_DAYS, RETIRED_TAG
from resumable.store.snapshots import ITEM

SMALL = {"conversation": "x" * 100}  # 120 bytes as JSON


@pytest.mark.parametrize("item_bytes", [0, 4096])
def test_a_snapshot_key_is_written_once_and_never_overwritten(aws: Settings, item_bytes: int) -> None:
    snapshots = TableOrS3Snapshots(aws.model_copy(update={"snapshot_item_bytes": item_bytes}))
    key = snapshots.put("snapshots/test/once.json", {"first": True})
    # A second put of the same key (only ever a retry of the same write: keys carry a uuid) leaves the
    # first in place, and is kept where the first was.
    assert snapshots.put("snapshots/test/once.json", {"second": True}) == key
    assert snapshots.get(key) == {"first": True}
    assert key == ("snapshots/test/once.json" if item_bytes == 0 else ITEM + "snapshots/test/once.json")


def test_a_snapshot_of_at_most_snapshot_item_bytes_is_an_item_of_the_table_and_a_larger_one_an_object(
    aws: Settings,
) -> None:
    limit = len(json.dumps(SMALL, separators=(",", ":")))
    snapshots = TableOrS3Snapshots(aws.model_copy(update={"snapshot_item_bytes": limit}))
    turn = f"snapshots/{uuid.uuid4().hex}/t"  # (the bucket is shared by the tests of a process)
    at_limit = snapshots.put(f"{turn}/1.json", SMALL)
    over = snapshots.put(f"{turn}/2.json", {**SMALL, "one": 1})
    assert (at_limit, over) == (f"{ITEM}{turn}/1.json", f"{turn}/2.json")
    assert (snapshots.get(at_limit), snapshots.get(over)) == (SMALL, {**SMALL, "one": 1})
    objects = snapshots.s3.list_objects_v2(Bucket=aws.bucket_name, Prefix=f"{turn}/").get("Contents", [])
    assert [o["Key"] for o in objects] == [f"{turn}/2.json"], "the small one is not in the bucket"
    assert S3Snapshots(aws).get(over) == {**SMALL, "one": 1}, "an object as S3Snapshots reads it"


def test_a_retired_item_snapshot_expires_in_a_week_and_one_gone_is_not_written_back(aws: Settings) -> None:
    snapshots = TableOrS3Snapshots(aws.model_copy(update={"snapshot_item_bytes": 4096}))
    kept, retired = snapshots.put("snapshots/s/t/1.json", SMALL), snapshots.put("snapshots/s/t/2.json", SMALL)
    big = snapshots.put(f"snapshots/{uuid.uuid4().hex}/t/3.json", {"x": "y" * 5000})  # (a shared bucket)
    snapshots.retire([retired, big, ITEM + "snapshots/s/t/gone.json"], 1_800_000_000.0)

    def item(key: str) -> dict[str, object] | None:
        found = snapshots.dynamodb.get_item(
            TableName=aws.table_name, Key={"pk": {"S": "SNAPSHOT#" + key.removeprefix(ITEM)}, "sk": {"S": "SNAPSHOT"}}
        )
        return found.get("Item")

    assert item(retired)["purge_at"] == {"N": str(1_800_000_000 + RETIRED_DAYS * 86400)}  # type: ignore[index]
    assert "purge_at" not in item(kept)  # type: ignore[operator]
    assert item(ITEM + "snapshots/s/t/gone.json") is None, "no stub of a snapshot that is gone"
    tags = snapshots.s3.get_object_tagging(Bucket=aws.bucket_name, Key=big)["TagSet"]
    assert tags == [RETIRED_TAG]
    snapshots.retire([retired], 1_900_000_000.0)
    assert item(retired)["purge_at"] == {"N": str(1_800_000_000 + RETIRED_DAYS * 86400)}, "retired once"  # type: ignore[index]


def test_an_item_snapshot_that_is_missing_or_not_json_is_refused_naming_it(aws: Settings) -> None:
    snapshots = TableOrS3Snapshots(aws.model_copy(update={"snapshot_item_bytes": 4096}))
    with pytest.raises(
        SnapshotError, match=r"snapshot item:snapshots/s/t/none.json does not exist: nothing was restored"
    ):
        snapshots.get(ITEM + "snapshots/s/t/none.json")
    snapshots.dynamodb.put_item(
        TableName=aws.table_name,
        Item={"pk": {"S": "SNAPSHOT#snapshots/s/t/bad.json"}, "sk": {"S": "SNAPSHOT"}, "body": {"B": b'{"cut'}},
    )
    with pytest.raises(
        SnapshotError, match=r"snapshot item:snapshots/s/t/bad.json is not JSON .*until the item in table"
    ):
        snapshots.get(ITEM + "snapshots/s/t/bad.json")
    for damaged in ({}, {"body": {"S": "{}"}}):  # (repaired by hand, badly: no body, or a string)
        snapshots.dynamodb.put_item(
            TableName=aws.table_name,
            Item={"pk": {"S": "SNAPSHOT#snapshots/s/t/hand.json"}, "sk": {"S": "SNAPSHOT"}, **damaged},
        )
        with pytest.raises(SnapshotError, match=r"snapshot item:snapshots/s/t/hand.json has no binary body"):
            snapshots.get(ITEM + "snapshots/s/t/hand.json")


def test_snapshot_item_bytes_is_read_from_the_environment_within_what_pays(aws: Settings) -> None:
    assert Settings.from_env({"SNAPSHOT_ITEM_BYTES": "4096"}).snapshot_item_bytes == 4096
    assert Settings().snapshot_item_bytes == 0
    with pytest.raises(ValueError, match="SNAPSHOT_ITEM_BYTES"):
        Settings.from_env({"SNAPSHOT_ITEM_BYTES": str(64 * 1024 + 1)})


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

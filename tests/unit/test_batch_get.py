"""A BatchGetItem that DynamoDB answers in part (throttled: ``UnprocessedKeys``) is asked again for what
it left, until every item is read or the attempts are spent (then an error that says so)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber

from resumable.config import Settings
from resumable.exceptions import AwsError
from resumable.store.dynamodb import DynamoDBStore

SETTINGS = Settings(table_name="t", region="us-east-1", access_key_id="a", secret_access_key="b")


def _key(n: int) -> dict[str, Any]:
    return {"pk": {"S": f"SESSION#s{n}"}, "sk": {"S": "SESSION"}}


def test_what_dynamodb_leaves_unread_is_asked_for_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda _: None)
    store = DynamoDBStore(SETTINGS)
    keys = [_key(n) for n in range(3)]
    with Stubber(store.dynamodb) as stub:
        asked = {"t": {"Keys": keys, "ConsistentRead": True}}
        stub.add_response(
            "batch_get_item",
            {"Responses": {"t": keys[:1]}, "UnprocessedKeys": {"t": {"Keys": keys[1:]}}},
            {"RequestItems": asked},
        )
        stub.add_response("batch_get_item", {"Responses": {"t": keys[1:]}}, {"RequestItems": {"t": {"Keys": keys[1:]}}})
        assert list(store._batch_get(keys, "sessions", "read them again")) == keys
        stub.assert_no_pending_responses()


def test_what_it_keeps_leaving_unread_is_an_error_saying_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda _: None)
    store = DynamoDBStore(SETTINGS)
    keys = [_key(0)]
    with Stubber(store.dynamodb) as stub:
        for _ in range(6):
            stub.add_response("batch_get_item", {"Responses": {"t": []}, "UnprocessedKeys": {"t": {"Keys": keys}}})
        with pytest.raises(
            AwsError, match=r"DynamoDB left sessions unread after retries \(throttled\): read them again"
        ):
            list(store._batch_get(keys, "sessions", "read them again"))

"""The embedded AWS keeps DynamoDB's promise where resumable depends on it: a transaction that is
canceled writes nothing (its rollback restores only what it names, so this is checked here)."""

from __future__ import annotations

from typing import Any

import pytest

from resumable.config import Settings
from resumable.store import DynamoDBStore


def _item(pk: str, sk: str, **attributes: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}, **{name: {"S": value} for name, value in attributes.items()}}


def test_a_canceled_transaction_leaves_every_item_it_named_as_it_was(aws: Settings) -> None:
    dynamodb = DynamoDBStore(aws).dynamodb
    table = aws.table_name
    dynamodb.put_item(TableName=table, Item=_item("p", "kept", value="1"))
    dynamodb.put_item(TableName=table, Item=_item("p", "deleted", value="1"))
    dynamodb.put_item(TableName=table, Item=_item("q", "replaced", value="1"))
    before = dynamodb.scan(TableName=table)["Items"]
    writes: list[dict[str, Any]] = [
        {"Put": {"TableName": table, "Item": _item("p", "new", value="2")}},
        {"Put": {"TableName": table, "Item": _item("fresh", "new", value="2")}},
        {"Put": {"TableName": table, "Item": _item("q", "replaced", value="2")}},
        {
            "Update": {
                "TableName": table,
                "Key": _item("p", "kept"),
                "UpdateExpression": "SET #v = :v",
                "ExpressionAttributeNames": {"#v": "value"},
                "ExpressionAttributeValues": {":v": {"S": "2"}},
            }
        },
        {"Delete": {"TableName": table, "Key": _item("p", "deleted")}},
        {
            "ConditionCheck": {
                "TableName": table,
                "Key": _item("p", "absent"),
                "ConditionExpression": "attribute_exists(pk)",
            }
        },
    ]
    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(TransactItems=writes)  # type: ignore[arg-type]

    def key(item: dict[str, Any]) -> tuple[str, str]:
        return item["pk"]["S"], item["sk"]["S"]

    assert sorted(dynamodb.scan(TableName=table)["Items"], key=key) == sorted(before, key=key)
    assert (
        dynamodb.query(
            TableName=table, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "fresh"}}
        )["Items"]
        == []
    )

"""Outbox items as the table's stream delivers them to the publisher (a record of Lambda's DynamoDB
Streams event each): for the publisher's tests and its benchmark, which hand it batches of their choosing."""

from __future__ import annotations

from typing import Any

from resumable.store import DynamoDBStore


def outbox_records(store: DynamoDBStore, sessions: list[str]) -> list[dict[str, Any]]:
    """Every outbox item of ``sessions`` as the stream delivers them (a session's in the order written)."""
    records = []
    for session in sessions:
        items = store.dynamodb.query(
            TableName=store.table,
            KeyConditionExpression="pk = :pk",
            FilterExpression="entity = :event",
            ExpressionAttributeValues={":pk": {"S": f"SESSION#{session}"}, ":event": {"S": "event"}},
        )["Items"]
        for item in sorted(items, key=lambda i: float(i["created_at"]["N"])):
            n = len(records)
            change = {"Keys": {"pk": item["pk"], "sk": item["sk"]}, "NewImage": item, "SequenceNumber": f"{n:030d}"}
            records.append(
                {"eventID": str(n), "eventName": "INSERT", "eventSource": "aws:dynamodb", "dynamodb": change}
            )
    return records

"""Interactions in DynamoDB, read: one, several by key, a session's by status, and the inbox's pages."""

from __future__ import annotations

from typing import Any

from resumable.store.codec import (
    INBOX,
    decode,
    inbox_unexpired_after,
    interaction_sk,
    key,
    principal_inbox,
    shards_of,
    value,
)
from resumable.store.records import InteractionRecord, InteractionStatus
from resumable.store.resources import INBOX_INDEX, INTERACTIONS_INDEX, PRINCIPAL_INBOX_INDEX, REQUESTS_INDEX
from resumable.store.table import Table, aws_call


class InteractionReads(Table):
    @aws_call
    def get_interaction(self, session_id: str, root_turn_id: str, request_id: str) -> InteractionRecord | None:
        item = self.dynamodb.get_item(
            TableName=self.table, Key=key(session_id, interaction_sk(root_turn_id, request_id)), ConsistentRead=True
        ).get("Item")
        return InteractionRecord.model_validate(decode(item)) if item else None

    @aws_call
    def find_interaction(self, request_id: str) -> InteractionRecord | None:
        """The interaction ``request_id`` names, whichever session asked it: its key from the index
        (which lists it a moment after it is asked), then the item itself, read consistently."""
        listed = self.dynamodb.query(
            TableName=self.table,
            IndexName=REQUESTS_INDEX,
            KeyConditionExpression="request_id = :request",
            ExpressionAttributeValues={":request": value(request_id)},
        ).get("Items", [])
        for found in (i for i in listed if "#INTERACTION#" in i["sk"]["S"]):  # (one; a decision link's passed by)
            item = self.dynamodb.get_item(
                TableName=self.table, Key={"pk": found["pk"], "sk": found["sk"]}, ConsistentRead=True
            ).get("Item")
            if item is not None:
                return InteractionRecord.model_validate(decode(item))
        return None

    @aws_call
    def list_interactions(self, session_id: str, status: InteractionStatus | None) -> list[InteractionRecord]:
        condition = "gsi1pk = :pk" + (" AND begins_with(gsi1sk, :status)" if status else "")
        values = {":pk": value(f"SESSION#{session_id}#INTERACTIONS")}
        if status:
            values[":status"] = value(f"{status}#")
        request: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": INTERACTIONS_INDEX,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
        }
        found: list[InteractionRecord] = []
        while True:
            page = self.dynamodb.query(**request)
            found += [InteractionRecord.model_validate(decode(item)) for item in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                return sorted(found, key=lambda i: (i.created_at, i.request_id))
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    @aws_call
    def get_interactions(self, keys: list[tuple[str, str, str]]) -> list[InteractionRecord]:
        """The interactions (session, root turn, request) that exist, in no particular order."""
        wanted = [key(s, interaction_sk(r, q)) for s, r, q in dict.fromkeys(keys)]
        found = [
            InteractionRecord.model_validate(decode(item))
            for item in self._batch_get(wanted, "interactions", "read the page again")
        ]
        return found

    @aws_call
    def list_inbox(
        self, principal: str | None, now: float, limit: int, after: str | None = None
    ) -> tuple[list[InteractionRecord], str | None]:
        """Up to ``limit`` requested interactions not yet expired at ``now``, most urgent first (the hour
        they expire in, then the riskiest, then the expiry), after the one whose place in the inbox is
        ``after`` (None: from the first): every session's (``principal`` None: a Query per shard,
        merged) or those of ``principal``'s sessions (one Query). And the place in that order where the
        next page starts (None: this was the last page): the last one's, or, where the reading stopped
        early (many expired questions not yet swept, left out by the filter), how far it got."""
        index, partition = self.inbox_partition(principal)
        # Those of an hour gone by are not read at all; of the hour now, the expired ones are filtered out.
        start = max(inbox_unexpired_after(now), after or "")
        shards = shards_of(partition, self.shards) if principal is None else [partition]
        merged = self.merged(
            [
                {
                    "TableName": self.table,
                    "IndexName": index,
                    "KeyConditionExpression": f"{index}pk = :pk AND {index}sk > :after",
                    "FilterExpression": "expires_at > :now",
                    "ExpressionAttributeValues": {":pk": value(shard), ":after": value(start), ":now": value(now)},
                }
                for shard in shards
            ],
            f"{index}sk",
            limit,
        )
        interactions = [InteractionRecord.model_validate(decode(item)) for item in merged.items]
        return interactions, (merged.after if merged.more else None)

    @staticmethod
    def inbox_partition(principal: str | None) -> tuple[str, str]:
        """The index and partition key (shard 0's, for every session's) a principal's inbox is read from."""
        return (INBOX_INDEX, INBOX) if principal is None else (PRINCIPAL_INBOX_INDEX, principal_inbox(principal))

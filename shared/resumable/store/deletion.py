"""A session's deletion and restore in DynamoDB, in steps that each converge: the session item is
marked first (so no turn can begin and the deletion's generation is fixed), then every item of the
session (its turns, child turns, interactions and action journal's entries) is marked with that
generation, or unmarked, in transactions that each check the session still has it, and last the
session is marked done, with its event. A step cut short is finished by asking again, for a deletion
or a restore alike: each marks only what is not marked yet.

Records past their retention are left as they are (they are gone; DynamoDB's TTL deletes them), and
a session past its retention, or whose snapshots the sweeper is retiring, cannot be marked or brought
back. Outbox items are left as they are (they expire once published).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from resumable.store.codec import EXPIRING, decode, event_put, key, pk, value
from resumable.store.records import OutboxEvent, SessionRecord, expired
from resumable.store.resources import TTL_ATTRIBUTE
from resumable.store.table import (
    MAX_TRANSACTION_ITEMS,
    Table,
    aws_call,
    refusal,
)

# Within its retention, and not claimed by the sweeper for the end of it (service.retention).
LIVE = (
    "(attribute_not_exists(#purge) OR attribute_type(#purge, :null) OR #purge > :now) "
    "AND attribute_not_exists(retiring)"
)


def session_event_sk(session: SessionRecord, kind: str, generation: int) -> str:
    """Where a deletion's or restore's event is written: one of its own for each generation of each
    session of this id (an id whose retention ended starts a new session, which counts again from 1)."""
    return f"SESSION#EVENT#{session.created_at:020.6f}#{kind}#{generation:08d}"


class DeletionItems(Table):
    @aws_call
    def begin_deletion(self, session: SessionRecord, generation: int, now: float, by: str) -> bool:
        return self.written(
            self.dynamodb.update_item,
            TableName=self.table,
            Key=key(session.session_id, "SESSION"),
            UpdateExpression="SET deleted_generation = :generation, deletions = :generation, deleted_at = :now, "
            "deleted_by = :by, deleting = :true, updated_at = :now",
            ConditionExpression=f"updated_at = :seen AND attribute_not_exists(active_turn_id) AND {LIVE}",
            ExpressionAttributeNames={"#purge": TTL_ATTRIBUTE},
            ExpressionAttributeValues={
                ":generation": value(generation),
                ":now": value(now),
                ":by": value(by),
                ":true": value(True),
                ":seen": value(session.updated_at),
                ":null": {"S": "NULL"},
            },
        )

    @aws_call
    def mark_items(self, session_id: str, generation: int, deleted: bool, purge_at: float, now: float) -> bool:
        items = [
            fields
            for fields in self._items_of(session_id)
            if not expired(fields.get(TTL_ATTRIBUTE), now)
            and (fields.get("deleted_generation") == generation) != deleted
        ]
        guard = {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": key(session_id, "SESSION"),
                "ConditionExpression": "deleted_generation = :generation",
                "ExpressionAttributeValues": {":generation": value(generation)},
            }
        }
        writes = [self._mark(session_id, f, generation, deleted, purge_at, now) for f in items]
        try:
            for start in range(0, len(writes), MAX_TRANSACTION_ITEMS - 1):
                self._transact_write([guard, *writes[start : start + MAX_TRANSACTION_ITEMS - 1]])
        except ClientError as error:
            if refusal(error) is None:
                raise
            return False
        return True

    @aws_call
    def end_deletion(self, session: SessionRecord, generation: int, purge_at: float, event: OutboxEvent) -> bool:
        return self._end(
            session,
            "SET #purge = :purge, gsi4pk = :expiring, gsi4sk = :purge REMOVE deleting",
            "deleted_generation = :generation AND deleting = :true",
            {":generation": value(generation), ":true": value(True)},
            purge_at,
            event_put(self.table, session.session_id, session_event_sk(session, "deleted", generation), event),
        )

    @aws_call
    def end_restore(
        self, session: SessionRecord, generation: int, now: float, purge_at: float, event: OutboxEvent
    ) -> bool:
        return self._end(
            session,
            "SET #purge = :purge, gsi4pk = :expiring, gsi4sk = :purge, updated_at = :now "
            "REMOVE deleted_generation, deleted_at, deleted_by, deleting",
            f"deleted_generation = :generation AND {LIVE}",
            {":generation": value(generation), ":now": value(now), ":null": {"S": "NULL"}},
            purge_at,
            event_put(self.table, session.session_id, session_event_sk(session, "restored", generation), event),
        )

    def _end(
        self,
        session: SessionRecord,
        update: str,
        condition: str,
        values: dict[str, Any],
        purge_at: float,
        event: dict[str, Any],
    ) -> bool:
        event["Put"]["ConditionExpression"] = "attribute_not_exists(pk)"
        session_write = {
            "Update": {
                "TableName": self.table,
                "Key": key(session.session_id, "SESSION"),
                "UpdateExpression": update,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#purge": TTL_ATTRIBUTE},
                "ExpressionAttributeValues": {
                    **values,
                    ":purge": value(purge_at),
                    ":expiring": value(self.sharded(EXPIRING, session.session_id)),
                },
            }
        }
        return self.written(self._transact_write, [session_write, event])

    def _items_of(self, session_id: str) -> list[dict[str, Any]]:
        """The session's turns, child turns, interactions and journal entries: their keys, marks and
        retention."""
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :turn)",
            "FilterExpression": "entity IN (:turn_entity, :interaction, :action)",
            "ProjectionExpression": "sk, deleted_generation, #purge, callback_id, callback_told",
            "ExpressionAttributeNames": {"#purge": TTL_ATTRIBUTE},
            "ExpressionAttributeValues": {
                ":pk": value(pk(session_id)),
                ":turn": value("TURN#"),
                ":turn_entity": value("turn"),
                ":interaction": value("interaction"),
                ":action": value("action"),
            },
            "ConsistentRead": True,
        }
        return [decode(item) for item in self._query_items(request)]

    def _mark(
        self, session_id: str, fields: dict[str, Any], generation: int, deleted: bool, purge_at: float, now: float
    ) -> dict[str, Any]:
        sk = str(fields["sk"])
        # (a root whose durable function is still owed its callback stays due in the sweeper's index: the
        # sweeper tells it, and its record then puts it under its retention)
        owed = fields.get("callback_id") is not None and fields.get("callback_told") is None
        sets = ["#purge = :purge"]
        values: dict[str, Any] = {":purge": value(purge_at), ":now": value(now), ":null": {"S": "NULL"}}
        if deleted:
            sets.append("deleted_generation = :generation")
            values[":generation"] = value(generation)
        if sk.count("#") == 1 and not owed:  # a root turn ("TURN#<id>"), settled: indexed by its retention
            sets += ["gsi4pk = :expiring", "gsi4sk = :purge"]
            values[":expiring"] = value(self.sharded(EXPIRING, session_id))
        return {
            "Update": {
                "TableName": self.table,
                "Key": key(session_id, sk),
                "UpdateExpression": f"SET {', '.join(sets)}" + ("" if deleted else " REMOVE deleted_generation"),
                # Still there and within its retention (the sweeper may have begun retiring it since it was read).
                "ConditionExpression": f"attribute_exists(pk) AND {LIVE}",
                "ExpressionAttributeNames": {"#purge": TTL_ATTRIBUTE},
                "ExpressionAttributeValues": values,
            }
        }

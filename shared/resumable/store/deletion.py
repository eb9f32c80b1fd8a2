"""A session's deletion and restore in DynamoDB: every item of the session (its turns, child turns,
interactions and action journal's entries, and the session) marked with the deletion's generation,
or unmarked, in one commit.

A session bigger than one transaction holds is marked in several; each carries a condition check on
the session item, which the last one changes, so they apply only while the session is as it was
read (no turn began, no other deletion or restore landed). A crash between them leaves some of the
session's turns marked (unreadable) and the session not: the deletion, asked again, finishes.
Outbox items are left as they are (they expire once published).
"""

from __future__ import annotations

from typing import Any

from resumable.store.codec import EXPIRING, encode, event_put, key, pk, value
from resumable.store.records import OutboxEvent, SessionRecord
from resumable.store.resources import TTL_ATTRIBUTE
from resumable.store.table import MAX_TRANSACTION_ITEMS, Table, aws_call, condition_failed


class DeletionItems(Table):
    @aws_call
    def mark_deleted(
        self,
        session: SessionRecord,
        generation: int | None,
        now: float,
        purge_at: float,
        by: str,
        event: OutboxEvent,
    ) -> bool:
        """Mark every item of ``session`` (as read) deleted by ``generation`` (None: restore it, unmark
        them), their retention ending at ``purge_at``, and write ``event``; False when the session
        changed since it was read (nothing more was written)."""
        sks = self._items_of(session.session_id)
        guard = {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": key(session.session_id, "SESSION"),
                **self._as_read(session),
            }
        }
        writes = [self._mark(session.session_id, sk, generation, purge_at) for sk in sks]
        last = [self._session_mark(session, generation, now, purge_at, by)]
        number = generation if generation is not None else session.deleted_generation or 0
        event_sk = f"SESSION#EVENT#{'deleted' if generation is not None else 'restored'}#{number:08d}"
        last.append(event_put(self.table, session.session_id, event_sk, event))
        try:
            while len(writes) > MAX_TRANSACTION_ITEMS - len(last):
                chunk, writes = writes[: MAX_TRANSACTION_ITEMS - 1], writes[MAX_TRANSACTION_ITEMS - 1 :]
                self._transact_write([guard, *chunk])
            self._transact_write([*writes, *last])
        except self._canceled as error:
            if condition_failed(error):
                return False
            raise
        return True

    def _items_of(self, session_id: str) -> list[str]:
        """The sort keys of the session's turns, child turns, interactions and journal entries."""
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :turn)",
            "FilterExpression": "entity IN (:turn_entity, :interaction, :action)",
            "ProjectionExpression": "sk",
            "ExpressionAttributeValues": {
                ":pk": value(pk(session_id)),
                ":turn": value("TURN#"),
                ":turn_entity": value("turn"),
                ":interaction": value("interaction"),
                ":action": value("action"),
            },
            "ConsistentRead": True,
        }
        found: list[str] = []
        while True:
            page = self.dynamodb.query(**request)
            found += [item["sk"]["S"] for item in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                return found
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    @staticmethod
    def _as_read(session: SessionRecord) -> dict[str, Any]:
        """The condition that the session is as it was read: not changed since (a turn that begins, a
        turn that settles, a deletion or restore, all set ``updated_at``) and no turn active."""
        return {
            "ConditionExpression": "updated_at = :seen AND attribute_not_exists(active_turn_id)",
            "ExpressionAttributeValues": {":seen": value(session.updated_at)},
        }

    def _mark(self, session_id: str, sk: str, generation: int | None, purge_at: float) -> dict[str, Any]:
        sets = ["#purge = :purge"]
        values: dict[str, Any] = {":purge": value(purge_at)}
        if generation is not None:
            sets.append("deleted_generation = :generation")
            values[":generation"] = value(generation)
        if sk.count("#") == 1:  # a root turn ("TURN#<id>"), settled: in the sweeper's index by its retention
            sets += ["gsi4pk = :expiring", "gsi4sk = :purge"]
            values[":expiring"] = value(EXPIRING)
        return {
            "Update": {
                "TableName": self.table,
                "Key": key(session_id, sk),
                "UpdateExpression": f"SET {', '.join(sets)}"
                + (" REMOVE deleted_generation" if generation is None else ""),
                "ExpressionAttributeNames": {"#purge": TTL_ATTRIBUTE},
                "ExpressionAttributeValues": values,
            }
        }

    def _session_mark(
        self, session: SessionRecord, generation: int | None, now: float, purge_at: float, by: str
    ) -> dict[str, Any]:
        fields: dict[str, Any] = {"updated_at": now, TTL_ATTRIBUTE: purge_at, "gsi4pk": EXPIRING, "gsi4sk": purge_at}
        removed = ""
        if generation is not None:
            fields |= {"deleted_generation": generation, "deletions": generation, "deleted_at": now, "deleted_by": by}
        else:
            removed = " REMOVE deleted_generation, deleted_at, deleted_by"
        as_read = self._as_read(session)
        return {
            "Update": {
                "TableName": self.table,
                "Key": key(session.session_id, "SESSION"),
                "UpdateExpression": "SET " + ", ".join(f"#{n} = :{n}" for n in fields) + removed,
                "ConditionExpression": as_read["ConditionExpression"],
                "ExpressionAttributeNames": {f"#{n}": n for n in fields},
                "ExpressionAttributeValues": {
                    **{f":{n}": v for n, v in encode(fields).items()},
                    **as_read["ExpressionAttributeValues"],
                },
            }
        }

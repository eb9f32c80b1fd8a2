"""The sweeper's index (GSI4) in DynamoDB: the unsettled root turns, by when each is due a look; and
the settled root turns and free sessions, by when their retention ends.

Every write that could make a turn need moving on sooner sets its due time (``codec.due``); the
sweeper reads the turns whose time has come and sets the next one itself, for a turn it found not
stalled yet (or moved on). A turn it gave up on is kept apart (``STUCK``), looked at again now and
then, and counted. A record whose retention ended (``EXPIRING``) leaves the index once the sweeper
retired the snapshots only it pointed at; DynamoDB's TTL deletes it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from resumable.store.base import DueTurn, Expiring
from resumable.store.codec import EXPIRING, STUCK, UNSETTLED, decode, key, pk, root_sk, shards_of, value
from resumable.store.records import SessionRecord, TurnRecord
from resumable.store.resources import UNSETTLED_INDEX
from resumable.store.table import MAX_TRANSACTION_ITEMS, Table, aws_call

logger = logging.getLogger(__name__)


class UnsettledTurns(Table):
    @aws_call
    def due_turns(self, now: float, limit: int, *, stuck: bool = False) -> list[DueTurn]:
        due = self._due(STUCK if stuck else UNSETTLED, now, limit)
        return [
            DueTurn(TurnRecord.model_validate(fields), float(fields["gsi4sk"]), fields["gsi4pk"], stuck)
            for fields in due
        ]

    def _due(self, partition: str, now: float, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` records of a sharded index partition due by ``now``, earliest first, decoded.

        The index holds their keys only, and lags its table: each is read again (consistently), and
        one that has since left the partition, is no longer due, or is gone is passed by (a later
        look finds it where it is now)."""
        merged = self.merged(
            [
                {
                    "TableName": self.table,
                    "IndexName": UNSETTLED_INDEX,
                    "KeyConditionExpression": "gsi4pk = :partition AND gsi4sk <= :now",
                    "ExpressionAttributeValues": {":partition": value(shard), ":now": value(now)},
                }
                for shard in shards_of(partition, self.shards)
            ],
            "gsi4sk",
            limit,
        )
        # (once each, in the index's order: an index that lags may list an item twice, as it moves
        # between shards, and BatchGetItem refuses a key asked for twice)
        listed = list(dict.fromkeys(_at(item) for item in merged.items))
        read = self._batch_get(
            [{"pk": value(p), "sk": value(s)} for p, s in listed], "the records due a look", "its next run looks"
        )
        current = {_at(item): item for item in read}
        found = []
        for at in listed:
            item = current.get(at)
            if item is not None and _kind(item) == partition and float(item["gsi4sk"]["N"]) <= now:
                found.append(decode(item))
        return found

    @aws_call
    def count_stuck(self, also: Sequence[TurnRecord] = ()) -> int:
        listed = {_at(key(t.session_id, root_sk(t.turn_id))) for t in also}
        for shard in shards_of(STUCK, self.shards):
            request: dict[str, Any] = {
                "TableName": self.table,
                "IndexName": UNSETTLED_INDEX,
                "KeyConditionExpression": "gsi4pk = :stuck",
                "ExpressionAttributeValues": {":stuck": value(shard)},
            }
            listed |= {_at(item) for item in self._query_items(request)}
        # (the index lags its table: what it lists, and what it may not list yet, is read again)
        keys = [{"pk": value(p), "sk": value(s)} for p, s in sorted(listed)]
        read = self._batch_get(keys, "the stuck turns", "they were not counted", ProjectionExpression="gsi4pk")
        return sum(1 for item in read if item.get("gsi4pk", {}).get("S", "").split("#")[0] == STUCK)

    @aws_call
    def reschedule(self, found: DueTurn, due_at: float, *, swept: bool = False, stuck: bool = False) -> bool:
        root = found.root
        return self.written(
            self.dynamodb.update_item,
            TableName=self.table,
            Key=key(root.session_id, root_sk(root.turn_id)),
            UpdateExpression="SET gsi4pk = :partition, gsi4sk = :due" + (" ADD sweeps :one" if swept else ""),
            # Only as it was found: any other write since set its own due time, which stands.
            ConditionExpression="gsi4pk = :seen_partition AND gsi4sk = :seen_due",
            ExpressionAttributeValues={
                ":partition": value(self.sharded(STUCK if stuck else UNSETTLED, root.session_id)),
                ":due": value(due_at),
                ":seen_partition": value(found.partition),
                ":seen_due": value(found.due_at),
                **({":one": value(1)} if swept else {}),
            },
        )

    @aws_call
    def due_expiries(self, now: float, limit: int) -> list[Expiring]:
        found = []
        for fields in self._due(EXPIRING, now, limit):
            try:
                record: TurnRecord | SessionRecord = (
                    TurnRecord.model_validate(fields)
                    if fields.get("entity") == "turn"
                    else SessionRecord.model_validate(fields)
                )
            except ValidationError:
                logger.error(
                    "%s %s is in the sweeper's index and is no record: left", fields.get("pk"), fields.get("sk")
                )
                continue
            turn_id = record.turn_id if isinstance(record, TurnRecord) else None
            snapshots = frozenset(record.snapshots)
            found.append(Expiring(record.session_id, turn_id, snapshots, float(fields["gsi4sk"]), fields["gsi4pk"]))
        return found

    @aws_call
    def live_snapshots(self, session_id: str, now: float) -> set[str]:
        request: dict[str, Any] = {
            "TableName": self.table,
            # The records that point at snapshots: the session, and its turns.
            "KeyConditionExpression": "pk = :pk",
            "FilterExpression": "(sk = :session OR entity = :turn) "
            "AND (attribute_not_exists(purge_at) OR attribute_type(purge_at, :null) OR purge_at > :now)",
            "ExpressionAttributeValues": {
                ":pk": value(pk(session_id)),
                ":session": value("SESSION"),
                ":turn": value("turn"),
                ":null": {"S": "NULL"},
                ":now": value(now),
            },
            "ConsistentRead": True,
        }
        live: set[str] = set()
        for item in self._query_items(request):
            fields = decode(item)
            record = TurnRecord.model_validate(fields) if fields.get("entity") == "turn" else None
            live |= record.snapshots if record else SessionRecord.model_validate(fields).snapshots
        return live

    @aws_call
    def claim_expiry(self, expiring: Expiring, now: float) -> bool:
        return self.written(
            self.dynamodb.update_item,
            TableName=self.table,
            Key=key(expiring.session_id, _sk(expiring)),
            UpdateExpression="SET retiring = if_not_exists(retiring, :now)",
            ConditionExpression="gsi4pk = :expiring AND gsi4sk = :purge AND purge_at <= :now",
            ExpressionAttributeValues={
                ":expiring": value(expiring.partition),
                ":purge": value(expiring.purge_at),
                ":now": value(now),
            },
        )

    @aws_call
    def expire_tree(self, expiring: Expiring) -> int:
        if expiring.turn_id is None:
            return 0
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :tree)",
            "FilterExpression": "entity IN (:turn, :interaction, :action) AND sk <> :root "
            "AND (attribute_not_exists(purge_at) OR attribute_type(purge_at, :null) OR purge_at <> :purge)",
            "ProjectionExpression": "sk",
            "ExpressionAttributeValues": {
                ":pk": value(pk(expiring.session_id)),
                ":tree": value(root_sk(expiring.turn_id)),
                ":root": value(root_sk(expiring.turn_id)),
                ":turn": value("turn"),
                ":interaction": value("interaction"),
                ":action": value("action"),
                ":null": {"S": "NULL"},
                ":purge": value(expiring.purge_at),
            },
            "ConsistentRead": True,
        }
        sks = [item["sk"]["S"] for item in self._query_items(request)]
        writes = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": key(expiring.session_id, sk),
                    # Unconditional: one DynamoDB's TTL deleted meanwhile comes back as a stub (keys and
                    # purge_at, nothing a reader reads) that the TTL deletes again.
                    "UpdateExpression": "SET purge_at = :purge",
                    "ExpressionAttributeValues": {":purge": value(expiring.purge_at)},
                }
            }
            for sk in sks
        ]
        for start in range(0, len(writes), MAX_TRANSACTION_ITEMS):
            self._transact_write(writes[start : start + MAX_TRANSACTION_ITEMS])
        return len(sks)

    @aws_call
    def forget_expiry(self, expiring: Expiring) -> bool:
        return self.written(
            self.dynamodb.update_item,
            TableName=self.table,
            Key=key(expiring.session_id, _sk(expiring)),
            UpdateExpression="REMOVE gsi4pk, gsi4sk",
            ConditionExpression="gsi4pk = :expiring AND gsi4sk = :purge",
            ExpressionAttributeValues={":expiring": value(expiring.partition), ":purge": value(expiring.purge_at)},
        )


def _at(item: dict[str, Any]) -> tuple[str, str]:
    """Where an item is in the table: its partition and sort keys."""
    return item["pk"]["S"], item["sk"]["S"]


def _kind(item: dict[str, Any]) -> str | None:
    """Which of the index's partitions (UNSETTLED, STUCK, EXPIRING) an item is in, whatever its shard."""
    place = item.get("gsi4pk")
    return None if place is None else str(place["S"]).split("#")[0]


def _sk(expiring: Expiring) -> str:
    return "SESSION" if expiring.turn_id is None else root_sk(expiring.turn_id)

"""The sweeper's index of unsettled root turns (GSI4) in DynamoDB: which are due a look, and when each
is due the next one.

Every write that could make a turn need moving on sooner sets its due time (``codec.due``); the
sweeper reads the turns whose time has come and sets the next one itself, for a turn it found not
stalled yet (or moved on). A turn it gave up on is kept apart (``STUCK``), looked at again now and
then, and counted.
"""

from __future__ import annotations

from typing import Any

from resumable.store.base import DueTurn
from resumable.store.codec import STUCK, UNSETTLED, decode, key, root_sk, value
from resumable.store.records import TurnRecord
from resumable.store.resources import UNSETTLED_INDEX
from resumable.store.table import Table, aws_call


class UnsettledTurns(Table):
    @aws_call
    def due_turns(self, now: float, limit: int, *, stuck: bool = False) -> list[DueTurn]:
        partition = STUCK if stuck else UNSETTLED
        page = self.dynamodb.query(
            TableName=self.table,
            IndexName=UNSETTLED_INDEX,
            KeyConditionExpression="gsi4pk = :partition AND gsi4sk <= :now",
            ExpressionAttributeValues={":partition": value(partition), ":now": value(now)},
            Limit=limit,
        )
        found = []
        for item in page.get("Items", []):
            fields = decode(item)
            found.append(DueTurn(TurnRecord.model_validate(fields), float(fields["gsi4sk"]), stuck))
        return found

    @aws_call
    def count_stuck(self) -> int:
        request: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": UNSETTLED_INDEX,
            "KeyConditionExpression": "gsi4pk = :stuck",
            "ExpressionAttributeValues": {":stuck": value(STUCK)},
            "Select": "COUNT",
        }
        counted = 0
        while True:
            page = self.dynamodb.query(**request)
            counted += int(page.get("Count", 0))
            if "LastEvaluatedKey" not in page:
                return counted
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    @aws_call
    def reschedule(self, found: DueTurn, due_at: float, *, swept: bool = False, stuck: bool = False) -> bool:
        root = found.root
        try:
            self.dynamodb.update_item(
                TableName=self.table,
                Key=key(root.session_id, root_sk(root.turn_id)),
                UpdateExpression="SET gsi4pk = :partition, gsi4sk = :due" + (" ADD sweeps :one" if swept else ""),
                # Only as it was found: any other write since set its own due time, which stands.
                ConditionExpression="gsi4pk = :seen_partition AND gsi4sk = :seen_due",
                ExpressionAttributeValues={
                    ":partition": value(STUCK if stuck else UNSETTLED),
                    ":due": value(due_at),
                    ":seen_partition": value(STUCK if found.stuck else UNSETTLED),
                    ":seen_due": value(found.due_at),
                    **({":one": value(1)} if swept else {}),
                },
            )
        except self._conditional_failure:
            return False
        return True

"""Sessions, turns and their leases in DynamoDB: reads, the start of a turn, lease and cancel writes."""

from __future__ import annotations

from typing import Any, Literal

from botocore.exceptions import ClientError

from resumable.exceptions import LeaseLostError
from resumable.store.codec import (
    UNSETTLED,
    decode,
    encode,
    key,
    pk,
    python,
    root_sk,
    sweeper_keys,
    turn_item,
    turn_sk,
    value,
)
from resumable.store.records import (
    ActionRecord,
    InteractionRecord,
    SessionRecord,
    TurnRecord,
    TurnStatus,
    TurnTree,
)
from resumable.store.table import (
    Table,
    aws_call,
    refusal,
)


class TurnItems(Table):
    @aws_call
    def get_session(self, session_id: str) -> SessionRecord | None:
        item = self.dynamodb.get_item(TableName=self.table, Key=key(session_id, "SESSION"), ConsistentRead=True).get(
            "Item"
        )
        return SessionRecord.model_validate(decode(item)) if item else None

    @aws_call
    def begin_turn(self, seen: SessionRecord | None, session: SessionRecord, turn: TurnRecord) -> bool:
        turn_write = {
            "Put": {
                "TableName": self.table,
                "Item": turn_item(turn, self.shards),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
        return self.written(self._transact_write, [self._session_write(seen, session, turn), turn_write])

    def _session_write(self, seen: SessionRecord | None, session: SessionRecord, turn: TurnRecord) -> dict[str, Any]:
        """Create the session (in place of one whose retention ended), or make ``turn`` its active turn
        if it is still as ``seen`` (and, active, it has no retention end)."""
        if seen is None:
            return {
                "Put": {
                    "TableName": self.table,
                    "Item": {**key(session.session_id, "SESSION"), **encode(session.model_dump())},
                    "ConditionExpression": "attribute_not_exists(pk) OR purge_at <= :now",
                    "ExpressionAttributeValues": {":now": value(session.created_at)},
                }
            }
        return {
            "Update": {
                "TableName": self.table,
                "Key": key(session.session_id, "SESSION"),
                "UpdateExpression": "SET active_turn_id = :turn, updated_at = :now REMOVE purge_at, gsi4pk, gsi4sk",
                # The conversation the new turn continues must still be the session's (not deleted, and
                # within its retention: the sweeper retires an expired session's snapshots).
                "ConditionExpression": "attribute_not_exists(active_turn_id) AND "
                "(attribute_not_exists(deleted_generation) OR attribute_type(deleted_generation, :null)) AND "
                "(attribute_not_exists(purge_at) OR attribute_type(purge_at, :null) OR purge_at > :now) AND "
                "attribute_not_exists(retiring) AND "
                + ("snapshot_key = :seen" if seen.snapshot_key else "attribute_type(snapshot_key, :null)"),
                "ExpressionAttributeValues": {
                    ":turn": value(turn.turn_id),
                    ":now": value(session.updated_at),
                    ":null": {"S": "NULL"},
                    **({":seen": value(seen.snapshot_key)} if seen.snapshot_key else {}),
                },
            }
        }

    @aws_call
    def load_tree(self, session_id: str, root_turn_id: str) -> TurnTree | None:
        root: TurnRecord | None = None
        children: list[TurnRecord] = []
        interactions: list[InteractionRecord] = []
        actions: list[ActionRecord] = []
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :tree)",
            # The turns, interactions and approved actions (a settled turn shows those in doubt; see
            # TurnView), not the outbox.
            "FilterExpression": "entity IN (:turn, :interaction, :action)",
            "ExpressionAttributeValues": {
                ":pk": value(pk(session_id)),
                ":tree": value(root_sk(root_turn_id)),
                ":turn": value("turn"),
                ":interaction": value("interaction"),
                ":action": value("action"),
            },
            "ConsistentRead": True,
        }
        while True:
            page = self.dynamodb.query(**request)
            for item in page.get("Items", []):
                fields = decode(item)
                if fields["entity"] == "interaction":
                    interactions.append(InteractionRecord.model_validate(fields))
                elif fields["entity"] == "action":
                    actions.append(ActionRecord.model_validate(fields))
                elif fields["turn_id"] == root_turn_id:
                    root = TurnRecord.model_validate(fields)
                else:
                    children.append(TurnRecord.model_validate(fields))
            if "LastEvaluatedKey" not in page:
                break
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        if root is None:
            return None
        return TurnTree(root=root, children=children, interactions=interactions, actions=actions)

    @aws_call
    def get_task_token(self, session_id: str, root_turn_id: str) -> str | None:
        item = self.dynamodb.get_item(
            TableName=self.table,
            Key=key(session_id, root_sk(root_turn_id)),
            ProjectionExpression="task_token",
            ConsistentRead=True,
        ).get("Item", {})
        token = python(dict(item["task_token"])) if "task_token" in item else None
        return token if isinstance(token, str) else None

    @aws_call
    def callback_told(self, root: TurnRecord, told: Literal["delivered", "closed"]) -> bool:
        return self._reindexed(
            root.model_copy(update={"callback_told": told}),
            "callback_told = :told",
            {":told": value(told), ":null": {"S": "NULL"}},
            # (once: a record made from a turn that has moved on since would index it as it was)
            " AND (attribute_not_exists(callback_told) OR attribute_type(callback_told, :null))",
        )

    @aws_call
    def reindex_settled(self, root: TurnRecord) -> bool:
        return self._reindexed(root)

    def _reindexed(
        self, root: TurnRecord, sets: str = "", values: dict[str, Any] | None = None, also: str = ""
    ) -> bool:
        """Root turn ``root`` in the sweeper's index where its record says (``sets`` with it), on condition
        that its version is as read (``also``: and more); whether it was."""
        index = sweeper_keys(root, self.shards)
        said = [sets] if sets else []
        given = {**(values or {}), ":version": value(root.version)}
        if index is not None:
            said.append("gsi4pk = :partition, gsi4sk = :at")
            given |= {":partition": value(index["gsi4pk"]), ":at": value(index["gsi4sk"])}
        update = (f"SET {', '.join(said)}" if said else "") + ("" if index is not None else " REMOVE gsi4pk, gsi4sk")
        return self.written(
            self.dynamodb.update_item,
            TableName=self.table,
            Key=key(root.session_id, turn_sk(root)),
            UpdateExpression=update.strip(),
            ConditionExpression="version = :version" + also,
            ExpressionAttributeValues=given,
        )

    # -- leases ---------------------------------------------------------------------------------------

    @aws_call
    def acquire_lease(
        self, session_id: str, root_turn_id: str, lease_owner: str, now: float, until: float, *, takeover: bool
    ) -> TurnRecord | None:
        condition = (
            "#status = :running AND (attribute_not_exists(lease_owner) OR lease_expires_at < :now) "
            "AND cancel_requested = :false"
            if takeover
            else "#status = :waiting AND open_interactions = :zero AND cancel_requested = :false"
        )
        try:
            item = self.dynamodb.update_item(
                TableName=self.table,
                Key=key(session_id, root_sk(root_turn_id)),
                UpdateExpression="SET #status = :running, lease_owner = :owner, lease_expires_at = :until, "
                "updated_at = :now, gsi4pk = :unsettled, gsi4sk = :until ADD lease_generation :one",
                ConditionExpression=condition,
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":running": value("running"),
                    ":owner": value(lease_owner),
                    ":until": value(until),
                    ":now": value(now),
                    ":false": value(False),
                    ":one": value(1),
                    ":unsettled": value(self.sharded(UNSETTLED, session_id)),
                    **({} if takeover else {":waiting": value("waiting"), ":zero": value(0)}),
                },
                ReturnValues="ALL_NEW",
            )["Attributes"]
        except ClientError as error:
            if refusal(error) is None:
                raise
            return None
        return TurnRecord.model_validate(decode(item))

    @aws_call
    def renew_lease(self, turn: TurnRecord, lease_owner: str, now: float, until: float) -> TurnRecord:
        try:
            item = self.dynamodb.update_item(
                TableName=self.table,
                Key=key(turn.session_id, turn_sk(turn)),
                UpdateExpression="SET lease_expires_at = :until",
                ConditionExpression="lease_owner = :owner AND #status = :running",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":until": value(until),
                    ":owner": value(lease_owner),
                    ":running": value("running"),
                },
                ReturnValues="ALL_NEW",
            )["Attributes"]
        except ClientError as error:
            if refusal(error) is None:
                raise
            raise LeaseLostError(
                f"turn {turn.turn_id} is no longer leased by {lease_owner}: another invocation took it over or it "
                "settled, so this run stops without committing anything"
            ) from error
        return TurnRecord.model_validate(decode(item))

    @aws_call
    def check_lease(self, turn: TurnRecord, lease_owner: str) -> bool:
        item = self.dynamodb.get_item(
            TableName=self.table,
            Key=key(turn.session_id, turn_sk(turn)),
            ConsistentRead=True,
            ProjectionExpression="lease_owner, #status, cancel_requested",
            ExpressionAttributeNames={"#status": "status"},
        ).get("Item")
        held = item is not None and item.get("lease_owner") == value(lease_owner) and item["status"] == value("running")
        if not held:
            raise LeaseLostError(
                f"turn {turn.turn_id} is no longer leased by {lease_owner}: another invocation took it over or it "
                "settled, so this run stops without committing anything"
            )
        return item is not None and item.get("cancel_requested") == value(True)

    @aws_call
    def release_lease(
        self, turn: TurnRecord, lease_owner: str, status: TurnStatus, now: float, error: str | None = None
    ) -> None:
        try:
            self.dynamodb.update_item(
                TableName=self.table,
                Key=key(turn.session_id, turn_sk(turn)),
                # (no error: removed, not stored as NULL, as ``codec.present`` leaves a turn's empty fields out)
                UpdateExpression="SET #status = :status, updated_at = :now, "
                + ("" if error is None else "#error = :error, ")
                + "gsi4pk = :unsettled, gsi4sk = :now REMOVE lease_owner, lease_expires_at"
                + (", #error" if error is None else ""),
                ConditionExpression="lease_owner = :owner AND #status = :running",
                ExpressionAttributeNames={"#status": "status", "#error": "error"},
                ExpressionAttributeValues={
                    ":status": value(status),
                    ":now": value(now),
                    ":owner": value(lease_owner),
                    ":running": value("running"),
                    ":unsettled": value(self.sharded(UNSETTLED, turn.session_id)),
                    **({} if error is None else {":error": value(error)}),
                },
            )
        except ClientError as lost:
            if refusal(lost) is None:
                raise
            raise LeaseLostError(
                f"turn {turn.turn_id} is no longer leased by {lease_owner}: it was not released (another "
                "invocation holds it now)"
            ) from lost

    @aws_call
    def request_cancel(self, session_id: str, root_turn_id: str, now: float) -> TurnRecord | None:
        try:
            item = self.dynamodb.update_item(
                TableName=self.table,
                Key=key(session_id, root_sk(root_turn_id)),
                # Due a look at once: a cancel that dies before it settles the tree is the sweeper's.
                UpdateExpression="SET cancel_requested = :true, updated_at = :now, gsi4pk = :unsettled, gsi4sk = :now",
                ConditionExpression="#status IN (:running, :waiting)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":true": value(True),
                    ":now": value(now),
                    ":running": value("running"),
                    ":waiting": value("waiting"),
                    ":unsettled": value(self.sharded(UNSETTLED, session_id)),
                },
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )["Attributes"]
        except ClientError as error:
            refused = refusal(error)
            if refused is None:
                raise
            old = refused.item()
            return TurnRecord.model_validate(decode(old)) if old else None
        return TurnRecord.model_validate(decode(item))

    @aws_call
    def tree_items(self, session_id: str, root_turn_id: str) -> list[dict[str, Any]]:
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :tree)",
            "ExpressionAttributeValues": {":pk": value(pk(session_id)), ":tree": value(root_sk(root_turn_id))},
            "ConsistentRead": True,
        }
        return [decode(item) for item in self._query_items(request)]

"""The action journal's entries in DynamoDB: an approved action started (with the lease renewed in
the same transaction), finished (in time, or late), never ran, or was found with its outcome unknown."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from botocore.exceptions import ClientError

from resumable.exceptions import GrantLapsedError, LeaseLostError
from resumable.store.audit import audit_put
from resumable.store.codec import action_sk, decode, encode, event_put, key, root_sk, value
from resumable.store.grants import grant_check
from resumable.store.outbox import action_reported
from resumable.store.records import ActionRecord, AuditRecord, GrantRecord, OutboxEvent
from resumable.store.table import (
    Table,
    aws_call,
    refusal,
)


class ActionItems(Table):
    def _leased_by(self, session_id: str, root_turn_id: str, lease_owner: str, *, uncanceled: bool) -> dict[str, Any]:
        """The condition that ``lease_owner`` still runs the root turn (and, ``uncanceled``, that no
        cancel was requested)."""
        values = {":owner": value(lease_owner), ":running": value("running")}
        if uncanceled:
            values[":false"] = value(False)
        return {
            "TableName": self.table,
            "Key": key(session_id, root_sk(root_turn_id)),
            "ConditionExpression": "lease_owner = :owner AND #status = :running"
            + (" AND cancel_requested = :false" if uncanceled else ""),
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": values,
        }

    def _reported(self, session_id: str, root_turn_id: str, action: ActionRecord, kind: str) -> dict[str, Any]:
        """The outbox item that reports what became known of an action after its runner lost the turn."""
        event = action_reported(root_turn_id, action, kind)
        digest = hashlib.sha256(action.key.encode()).hexdigest()
        # The lease generation tells apart two reports of one action (an action found not run, admitted
        # again by a later holder, and found not run again): each is an event of its own.
        sk = f"TURN#{root_turn_id}#EVENT#action#{kind}#{digest}#{action.lease_generation:08d}"
        return event_put(self.table, session_id, sk, event)

    @aws_call
    def begin_action(
        self,
        session_id: str,
        root_turn_id: str,
        action: ActionRecord,
        lease_owner: str,
        until: float,
        grant: GrantRecord | None = None,
        granted: OutboxEvent | None = None,
    ) -> ActionRecord | None:
        renewal = self._leased_by(session_id, root_turn_id, lease_owner, uncanceled=True)
        renewal["UpdateExpression"] = "SET lease_expires_at = :until"
        renewal["ExpressionAttributeValues"][":until"] = value(until)
        entry = {
            "Put": {
                "TableName": self.table,
                "Item": {
                    **key(session_id, action_sk(root_turn_id, action.key)),
                    # No NULL attributes: outcome_unknown_at is set later with if_not_exists.
                    **encode({"entity": "action", **action.model_dump(exclude_none=True)}),
                },
                # An approval whose action never ran (its runner lost the turn first) runs now.
                "ConditionExpression": "attribute_not_exists(pk) OR #status = :not_run",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {":not_run": value("not_run")},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }
        checked: list[dict[str, Any]] = []
        if grant is not None:  # (the grant must hold as the entry begins: a revoke committed first wins)
            checked.append(grant_check(self.table, grant, action.started_at))
            if granted is not None:
                digest = hashlib.sha256(action.key.encode()).hexdigest()
                told = f"TURN#{root_turn_id}#EVENT#action#granted#{digest}#{action.lease_generation:08d}"
                checked.append(event_put(self.table, session_id, told, granted))
        try:
            self._transact_write([entry, {"Update": renewal}, *checked])
        except ClientError as error:
            refused = refusal(error)
            if refused is None:
                raise
            earlier = refused.item(0)
            if earlier:
                return ActionRecord.model_validate(decode(earlier))
            if refused.transaction and not refused.refused(1) and checked and refused.refused(2):
                raise GrantLapsedError(
                    f"the standing grant {grant.grant_id if grant else ''} was revoked or had expired when the "
                    f"approved action {action.key!r} was about to begin: it did not begin"
                ) from None
            raise LeaseLostError(
                f"turn {root_turn_id} was canceled, taken over or settled before the approved action {action.key!r} "
                "started: it was not started, and this run stops without committing"
            ) from error
        return None

    @aws_call
    def finish_action(
        self,
        session_id: str,
        root_turn_id: str,
        action: ActionRecord,
        result: dict[str, Any],
        now: float,
        lease_owner: str,
        audit: AuditRecord | None = None,
    ) -> bool:
        audited = [audit_put(self.table, audit, self.shards)] if audit is not None else []
        record: dict[str, dict[str, Any]] = {
            "Update": {
                "TableName": self.table,
                "Key": key(session_id, action_sk(root_turn_id, action.key)),
                "UpdateExpression": "SET #status = :finished, #result = :result, finished_at = :now, late = :late",
                "ConditionExpression": "#status = :started",
                "ExpressionAttributeNames": {"#status": "status", "#result": "result"},
                "ExpressionAttributeValues": {
                    ":finished": value("finished"),
                    ":started": value("started"),
                    ":result": value(json.dumps(result)),
                    ":now": value(now),
                    ":late": value(False),
                },
            }
        }
        leased = {"ConditionCheck": self._leased_by(session_id, root_turn_id, lease_owner, uncanceled=False)}
        try:
            self._transact_write([record, leased, *audited])
            return True
        except ClientError as error:
            refused = refusal(error)
            if refused is None or refused.refused(0):
                raise
        # The runner lost the turn while the action ran: its result is still recorded, as late, and
        # reported; the turn (another runner's, or settled) is not touched.
        record["Update"]["ExpressionAttributeValues"][":late"] = value(True)
        finished = action.model_copy(update={"status": "finished", "finished_at": now, "late": True})
        late = audit.model_copy(update={"late": True}) if audit is not None else None
        self._record_and_report(record, self._reported(session_id, root_turn_id, finished, "finished_late"), late)
        return False

    @aws_call
    def mark_action_not_run(
        self, session_id: str, root_turn_id: str, action: ActionRecord, now: float, audit: AuditRecord | None = None
    ) -> None:
        entry = {
            "Update": {
                "TableName": self.table,
                "Key": key(session_id, action_sk(root_turn_id, action.key)),
                "UpdateExpression": "SET #status = :not_run, finished_at = :now",
                "ConditionExpression": "#status = :started",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {
                    ":not_run": value("not_run"),
                    ":started": value("started"),
                    ":now": value(now),
                },
            }
        }
        not_run = action.model_copy(update={"finished_at": now})
        self._record_and_report(entry, self._reported(session_id, root_turn_id, not_run, "not_run"), audit)

    def _record_and_report(self, record: dict[str, Any], report: dict[str, Any], audit: AuditRecord | None) -> None:
        """Write ``record`` (a journal entry's update) with ``report`` (its Action Reported event) and
        ``audit`` (its audit record); of a deleted session, the entry and its audit record alone: nothing of a
        deleted session is published after its deletion (its audit trail outlives it)."""
        audited = [audit_put(self.table, audit, self.shards)] if audit is not None else []
        reported = {**record["Update"]}
        reported["ConditionExpression"] = (
            f"({record['Update']['ConditionExpression']}) AND "
            "(attribute_not_exists(deleted_generation) OR attribute_type(deleted_generation, :null))"
        )
        reported["ExpressionAttributeValues"] = {
            **record["Update"]["ExpressionAttributeValues"],
            ":null": {"S": "NULL"},
        }
        try:
            self._transact_write([{"Update": reported}, report, *audited])
            return
        except ClientError as error:
            if refusal(error) is None:
                raise
        self._transact_write([record, *audited])  # its session was deleted (or its condition fails, which raises)

    @aws_call
    def mark_action_unknown(
        self, session_id: str, root_turn_id: str, action_key: str, now: float, audit: AuditRecord | None = None
    ) -> ActionRecord:
        if audit is not None:  # the first run to find it so says so in the audit trail, in the same transaction
            first = {
                "Update": {
                    "TableName": self.table,
                    "Key": key(session_id, action_sk(root_turn_id, action_key)),
                    "UpdateExpression": "SET outcome_unknown_at = :now",
                    "ConditionExpression": "#status = :started AND attribute_not_exists(outcome_unknown_at)",
                    "ExpressionAttributeNames": {"#status": "status"},
                    "ExpressionAttributeValues": {":now": value(now), ":started": value("started")},
                }
            }
            try:
                self._transact_write([first, audit_put(self.table, audit, self.shards)])
            except ClientError as error:
                if refusal(error) is None:
                    raise
        try:
            item = self.dynamodb.update_item(
                TableName=self.table,
                Key=key(session_id, action_sk(root_turn_id, action_key)),
                UpdateExpression="SET outcome_unknown_at = if_not_exists(outcome_unknown_at, :now)",
                ConditionExpression="#status = :started",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":now": value(now), ":started": value("started")},
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )["Attributes"]
        except ClientError as error:
            refused = refusal(error)
            if refused is None:
                raise
            item = refused.item() or {}
        return ActionRecord.model_validate(decode(item))

    def action_fence(self, session_id: str, root_turn_id: str, action: ActionRecord) -> dict[str, Any]:
        return {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": key(session_id, action_sk(root_turn_id, action.key)),
                "ConditionExpression": "#status = :started AND lease_generation = :generation "
                "AND attribute_not_exists(outcome_unknown_at)",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {
                    ":started": value("started"),
                    ":generation": value(action.lease_generation),
                },
            }
        }

    @aws_call
    def abandon_action(self, session_id: str, root_turn_id: str, action_key: str) -> None:
        entry = key(session_id, action_sk(root_turn_id, action_key))
        try:
            self.dynamodb.delete_item(
                TableName=self.table,
                Key=entry,
                ConditionExpression="#status = :started AND attribute_not_exists(outcome_unknown_at)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":started": value("started")},
            )
        except ClientError as error:
            if refusal(error) is None:
                raise
            # A takeover already told the model its outcome is unknown: what happened stays on record.
            self.dynamodb.update_item(
                TableName=self.table,
                Key=entry,
                UpdateExpression="SET #status = :not_run",
                ConditionExpression="#status = :started",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":started": value("started"), ":not_run": value("not_run")},
            )

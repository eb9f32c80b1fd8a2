"""The store on DynamoDB (one table) and S3 (snapshots): the only code that calls boto3 for them.

Item layout, all in the session's partition ``pk = SESSION#<sessionId>``:

| item | sk |
|---|---|
| session | ``SESSION`` |
| root turn | ``TURN#<root>`` |
| child turn | ``TURN#<root>#CHILD#<turnId>`` |
| interaction | ``TURN#<root>#INTERACTION#<requestId>`` (GSI1 by status for the session) |
| action journal entry | ``TURN#<root>#ACTION#<sha256 of the key>`` |
| outbox event | ``TURN#<root>#EVENT#<version>#<n>`` |

So a whole turn tree is one Query. Every change to a tree goes through a condition on the root turn.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from resumable.config import Settings
from resumable.exceptions import LeaseLostError, ResumableError, SnapshotError, StaleCommitError, StoreError
from resumable.runtime.tools import APPROVAL_INTERRUPT
from resumable.store.base import AnswerOutcome, Commit, Store
from resumable.store.records import (
    ActionRecord,
    InteractionRecord,
    InteractionStatus,
    OutboxEvent,
    SessionRecord,
    TurnRecord,
    TurnStatus,
    TurnTree,
)
from resumable.store.resources import INTERACTIONS_INDEX, SUPERSEDED_TAG

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

MAX_TRANSACTION_ITEMS = 100

# Fields held as JSON text: any JSON survives unchanged (DynamoDB has no float type).
_JSON_FIELDS = frozenset({"reason", "response", "result", "detail", "input"})


def _value(value: Any) -> dict[str, Any]:
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int | float):
        return {"N": repr(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, list):
        return {"L": [_value(v) for v in value]}
    if isinstance(value, dict):
        return {"M": {k: _value(v) for k, v in value.items()}}
    raise TypeError(f"cannot store {type(value).__name__} in DynamoDB: {value!r}")


def _python(attribute: dict[str, Any]) -> Any:
    kind, value = next(iter(attribute.items()))
    if kind == "NULL":
        return None
    if kind == "N":
        return float(value) if any(c in value for c in ".eE") else int(value)
    if kind == "L":
        return [_python(v) for v in value]
    if kind == "M":
        return {k: _python(v) for k, v in value.items()}
    return value


def _encode(fields: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: _value(json.dumps(v) if k in _JSON_FIELDS else v) for k, v in fields.items()}


def _decode(item: dict[str, Any]) -> dict[str, Any]:
    fields = {k: _python(v) for k, v in item.items()}
    for name in _JSON_FIELDS & fields.keys():
        fields[name] = json.loads(fields[name])
    return fields


def _pk(session_id: str) -> str:
    return f"SESSION#{session_id}"


def _turn_sk(turn: TurnRecord) -> str:
    if turn.parent_turn_id is None:
        return f"TURN#{turn.turn_id}"
    return f"TURN#{turn.root_turn_id}#CHILD#{turn.turn_id}"


def _interaction_sk(root_turn_id: str, request_id: str) -> str:
    return f"TURN#{root_turn_id}#INTERACTION#{request_id}"


def _action_sk(root_turn_id: str, key: str) -> str:
    return f"TURN#{root_turn_id}#ACTION#{hashlib.sha256(key.encode()).hexdigest()}"


def _key(session_id: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": _pk(session_id)}, "sk": {"S": sk}}


def _turn_item(turn: TurnRecord) -> dict[str, Any]:
    return {**_key(turn.session_id, _turn_sk(turn)), **_encode({"entity": "turn", **turn.model_dump()})}


def _interaction_item(interaction: InteractionRecord) -> dict[str, Any]:
    return {
        **_key(interaction.session_id, _interaction_sk(interaction.root_turn_id, interaction.request_id)),
        **_encode(
            {
                "entity": "interaction",
                "gsi1pk": f"SESSION#{interaction.session_id}#INTERACTIONS",
                "gsi1sk": f"{interaction.status}#{interaction.request_id}",
                **interaction.model_dump(),
            }
        ),
    }


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _aws(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Any failure of an AWS call surfaces as ``StoreError``: an error of resumable, which the agent
    loop never turns into a tool result (it would use up a person's answer)."""

    @functools.wraps(method)
    def translated(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except ResumableError:
            raise
        except Exception as error:
            raise StoreError(
                f"the AWS call behind {method.__name__} failed: {error}. Nothing after it happened; what was "
                "written before it stands and a turn is left resumable: retry the request, or call recover"
            ) from error

    return translated


_CONFLICT_ATTEMPTS = 5


def _reasons(error: Exception) -> list[dict[str, Any]]:
    response: dict[str, Any] = getattr(error, "response", {})
    reasons: list[dict[str, Any]] = response.get("CancellationReasons", [])
    return reasons


def _condition_failed(error: Exception) -> bool:
    """Whether a canceled transaction was refused by one of its conditions (a lost race, an answer to
    give the caller), rather than for any other reason (a malformed item, throttling, a conflict that
    outlasted the retries), which is an AWS failure: ``StoreError``, never a refusal."""
    return any(reason.get("Code") == "ConditionalCheckFailed" for reason in _reasons(error))


class DynamoDBStore(Store):
    """``Store`` on one DynamoDB table and one S3 bucket."""

    def __init__(self, settings: Settings, dynamodb: DynamoDBClient | None = None, s3: S3Client | None = None) -> None:
        self.table = settings.table_name
        self.bucket = settings.bucket_name
        if dynamodb is None or s3 is None:
            from resumable.aws.clients import client

            dynamodb = dynamodb or client("dynamodb", settings)
            s3 = s3 or client("s3", settings)
        self.dynamodb: DynamoDBClient = dynamodb
        self.s3: S3Client = s3
        self._conditional_failure = self.dynamodb.exceptions.ConditionalCheckFailedException
        self._canceled = self.dynamodb.exceptions.TransactionCanceledException

    def _transact_write(self, items: list[dict[str, Any]]) -> None:
        """TransactWriteItems, retried with backoff while DynamoDB cancels it only for a conflict with
        another transaction on the same items (never when a condition failed: that is an answer)."""
        for attempt in range(_CONFLICT_ATTEMPTS):
            try:
                self.dynamodb.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
                return
            except self._canceled as error:
                codes = {r.get("Code") for r in _reasons(error)}
                if "TransactionConflict" not in codes or "ConditionalCheckFailed" in codes:
                    raise
                if attempt == _CONFLICT_ATTEMPTS - 1:
                    raise
                time.sleep(0.02 * 2**attempt * (1 + random.random()))

    # -- sessions and turns ---------------------------------------------------------------------------

    @_aws
    def get_session(self, session_id: str) -> SessionRecord | None:
        item = self.dynamodb.get_item(TableName=self.table, Key=_key(session_id, "SESSION"), ConsistentRead=True).get(
            "Item"
        )
        return SessionRecord.model_validate(_decode(item)) if item else None

    @_aws
    def begin_turn(self, seen: SessionRecord | None, session: SessionRecord, turn: TurnRecord) -> bool:
        if seen is None:
            session_write: dict[str, Any] = {
                "Put": {
                    "TableName": self.table,
                    "Item": {**_key(session.session_id, "SESSION"), **_encode(session.model_dump())},
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
        else:
            session_write = {
                "Update": {
                    "TableName": self.table,
                    "Key": _key(session.session_id, "SESSION"),
                    "UpdateExpression": "SET active_turn_id = :turn, updated_at = :now",
                    # The conversation the new turn continues must still be the session's.
                    "ConditionExpression": "attribute_not_exists(active_turn_id) AND "
                    + ("snapshot_key = :seen" if seen.snapshot_key else "attribute_type(snapshot_key, :null)"),
                    "ExpressionAttributeValues": {
                        ":turn": _value(turn.turn_id),
                        ":now": _value(session.updated_at),
                        **({":seen": _value(seen.snapshot_key)} if seen.snapshot_key else {":null": {"S": "NULL"}}),
                    },
                }
            }
        turn_write = {
            "Put": {
                "TableName": self.table,
                "Item": _turn_item(turn),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
        try:
            self._transact_write([session_write, turn_write])
        except self._canceled as error:
            if _condition_failed(error):
                return False
            raise
        return True

    @_aws
    def load_tree(self, session_id: str, root_turn_id: str) -> TurnTree | None:
        root: TurnRecord | None = None
        children: list[TurnRecord] = []
        interactions: list[InteractionRecord] = []
        actions: list[ActionRecord] = []
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :tree)",
            # The turns and interactions, and the approved actions whose outcome a run could not know.
            "FilterExpression": "entity IN (:turn, :interaction) "
            "OR (entity = :action AND attribute_type(outcome_unknown_at, :number))",
            "ExpressionAttributeValues": {
                ":pk": _value(_pk(session_id)),
                ":tree": _value(f"TURN#{root_turn_id}"),
                ":turn": _value("turn"),
                ":interaction": _value("interaction"),
                ":action": _value("action"),
                ":number": {"S": "N"},
            },
            "ConsistentRead": True,
        }
        while True:
            page = self.dynamodb.query(**request)
            for item in page.get("Items", []):
                fields = _decode(item)
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

    @_aws
    def get_task_token(self, session_id: str, root_turn_id: str) -> str | None:
        item = self.dynamodb.get_item(
            TableName=self.table,
            Key=_key(session_id, f"TURN#{root_turn_id}"),
            ProjectionExpression="task_token",
            ConsistentRead=True,
        ).get("Item", {})
        token = _python(dict(item["task_token"])) if "task_token" in item else None
        return token if isinstance(token, str) else None

    @_aws
    def acquire_lease(
        self, session_id: str, root_turn_id: str, owner: str, now: float, until: float, *, takeover: bool
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
                Key=_key(session_id, f"TURN#{root_turn_id}"),
                UpdateExpression="SET #status = :running, lease_owner = :owner, lease_expires_at = :until, "
                "updated_at = :now ADD lease_generation :one",
                ConditionExpression=condition,
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":running": _value("running"),
                    ":owner": _value(owner),
                    ":until": _value(until),
                    ":now": _value(now),
                    ":false": _value(False),
                    ":one": _value(1),
                    **({} if takeover else {":waiting": _value("waiting"), ":zero": _value(0)}),
                },
                ReturnValues="ALL_NEW",
            )["Attributes"]
        except self._conditional_failure:
            return None
        return TurnRecord.model_validate(_decode(item))

    @_aws
    def renew_lease(self, turn: TurnRecord, owner: str, now: float, until: float) -> TurnRecord:
        try:
            item = self.dynamodb.update_item(
                TableName=self.table,
                Key=_key(turn.session_id, _turn_sk(turn)),
                UpdateExpression="SET lease_expires_at = :until",
                ConditionExpression="lease_owner = :owner AND #status = :running",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":until": _value(until),
                    ":owner": _value(owner),
                    ":running": _value("running"),
                },
                ReturnValues="ALL_NEW",
            )["Attributes"]
        except self._conditional_failure as error:
            raise LeaseLostError(
                f"turn {turn.turn_id} is no longer leased by {owner}: another invocation took it over or it settled, "
                "so this run stops without committing anything"
            ) from error
        return TurnRecord.model_validate(_decode(item))

    @_aws
    def release_lease(
        self, turn: TurnRecord, owner: str, status: TurnStatus, now: float, error: str | None = None
    ) -> None:
        try:
            self.dynamodb.update_item(
                TableName=self.table,
                Key=_key(turn.session_id, _turn_sk(turn)),
                UpdateExpression="SET #status = :status, updated_at = :now, #error = :error "
                "REMOVE lease_owner, lease_expires_at",
                ConditionExpression="lease_owner = :owner AND #status = :running",
                ExpressionAttributeNames={"#status": "status", "#error": "error"},
                ExpressionAttributeValues={
                    ":status": _value(status),
                    ":now": _value(now),
                    ":owner": _value(owner),
                    ":running": _value("running"),
                    ":error": _value(error),
                },
            )
        except self._conditional_failure as lost:
            raise LeaseLostError(
                f"turn {turn.turn_id} is no longer leased by {owner}: it was not released (another invocation "
                "holds it now)"
            ) from lost

    @_aws
    def request_cancel(self, session_id: str, root_turn_id: str, now: float) -> TurnRecord | None:
        try:
            item = self.dynamodb.update_item(
                TableName=self.table,
                Key=_key(session_id, f"TURN#{root_turn_id}"),
                UpdateExpression="SET cancel_requested = :true, updated_at = :now",
                ConditionExpression="#status IN (:running, :waiting)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":true": _value(True),
                    ":now": _value(now),
                    ":running": _value("running"),
                    ":waiting": _value("waiting"),
                },
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )["Attributes"]
        except self._conditional_failure as error:
            old = getattr(error, "response", {}).get("Item")
            return TurnRecord.model_validate(_decode(old)) if old else None
        return TurnRecord.model_validate(_decode(item))

    @_aws
    def commit(self, commit: Commit) -> None:
        root = commit.root
        expectation = "version = :expected_version AND #status = :expected_status AND " + (
            "lease_owner = :expected_owner"
            if commit.expected_lease_owner is not None
            else "attribute_not_exists(lease_owner)"
        )
        expected_values = {
            ":expected_version": _value(commit.expected_version),
            ":expected_status": _value(commit.expected_status),
            **({":expected_owner": _value(commit.expected_lease_owner)} if commit.expected_lease_owner else {}),
        }
        if commit.refuse_if_canceling:
            expectation += " AND cancel_requested = :not_canceling"
            expected_values[":not_canceling"] = _value(False)
        if commit.expected_lease_expired_by is not None:
            expectation += " AND lease_expires_at < :expired_by"
            expected_values[":expired_by"] = _value(commit.expected_lease_expired_by)
        fields = root.model_dump(
            include={
                "agent",
                "agent_path",
                "status",
                "version",
                "snapshot_key",
                "agent_snapshots",
                "output",
                "error",
                "open_interactions",
                "updated_at",
            }
        )
        # Every attribute through a placeholder: several of these names are DynamoDB reserved words.
        names = {"#status": "status", **{f"#{f}": f for f in fields}}
        sets = ", ".join(f"#{f} = :{f}" for f in fields)
        update = f"SET {sets}" + (
            " REMOVE lease_owner, lease_expires_at" if root.lease_owner is None else ", lease_expires_at = :lease"
        )
        root_values = {f":{f}": v for f, v in _encode(fields).items()}
        if root.lease_owner is not None:
            root_values[":lease"] = _value(root.lease_expires_at)
        final: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": _key(root.session_id, _turn_sk(root)),
                    "UpdateExpression": update,
                    "ConditionExpression": expectation,
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": {**root_values, **expected_values},
                }
            }
        ]
        if commit.settle_session or commit.session_snapshot_key is not None:
            session_sets = ["updated_at = :now"]
            session_values: dict[str, Any] = {":now": _value(root.updated_at), ":turn": _value(root.turn_id)}
            if commit.session_snapshot_key is not None:
                session_sets.append("snapshot_key = :snapshot")
                session_values[":snapshot"] = _value(commit.session_snapshot_key)
            if commit.agent_snapshots is not None:
                session_sets.append("agent_snapshots = :agent_snapshots")
                session_values[":agent_snapshots"] = _value(commit.agent_snapshots)
            final.append(
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": _key(root.session_id, "SESSION"),
                        "UpdateExpression": "SET "
                        + ", ".join(session_sets)
                        + (" REMOVE active_turn_id" if commit.settle_session else ""),
                        "ConditionExpression": "active_turn_id = :turn",
                        "ExpressionAttributeValues": session_values,
                    }
                }
            )
        others: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": _interaction_item(i),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
            for i in commit.new_interactions
        ]
        others += [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": _interaction_item(changed),
                    "ConditionExpression": "#status = :from",
                    "ExpressionAttributeNames": {"#status": "status"},
                    "ExpressionAttributeValues": {":from": _value(from_status)},
                }
            }
            for changed, from_status in commit.interaction_changes
        ]
        others += [{"Put": {"TableName": self.table, "Item": _turn_item(child)}} for child in commit.children]
        others += [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": {
                        **_key(root.session_id, f"TURN#{root.turn_id}#EVENT#{root.version:08d}#{n:03d}"),
                        **_encode({"entity": "event", **event.model_dump()}),
                    },
                }
            }
            for n, event in enumerate(commit.events)
        ]
        # A tree bigger than one transaction commits in several. The earlier ones each carry a
        # condition check on the root turn, so they apply only while this commit still holds it; items
        # they write are invisible to answers until the last one moves the root out of its state.
        room = MAX_TRANSACTION_ITEMS - len(final)
        guard = {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": _key(root.session_id, _turn_sk(root)),
                "ConditionExpression": expectation,
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": expected_values,
            }
        }
        while len(others) > room:
            chunk, others = others[: MAX_TRANSACTION_ITEMS - 1], others[MAX_TRANSACTION_ITEMS - 1 :]
            self._transact([guard, *chunk], root)
        self._transact(final + others, root)

    def _transact(self, items: list[dict[str, Any]], root: TurnRecord) -> None:
        try:
            self._transact_write(items)
        except self._canceled as error:
            if not _condition_failed(error):
                raise
            codes = [r.get("Code") for r in _reasons(error)]
            raise StaleCommitError(
                f"commit of turn {root.turn_id} (version {root.version}) was rejected, nothing was written: {codes}"
            ) from error

    # -- interactions --------------------------------------------------------------------------------

    @_aws
    def settle_interaction(
        self,
        session_id: str,
        root_turn_id: str,
        request_id: str,
        response: Any,
        answered_by: str,
        now: float,
        *,
        approval_shaped: bool,
        owner_turn_id: str | None = None,
        session_owner: str | None = None,
    ) -> AnswerOutcome:
        condition = "#status = :requested AND expires_at > :now"
        names = {"#status": "status", "#response": "response"}
        values = {
            ":answered": _value("answered"),
            ":requested": _value("requested"),
            ":response": _value(json.dumps(response)),
            ":by": _value(answered_by),
            ":now": _value(now),
            ":gsi1sk": _value(f"answered#{request_id}"),
        }
        if owner_turn_id is not None:
            condition += " AND turn_id = :owner"
            values[":owner"] = _value(owner_turn_id)
        if session_owner is not None:
            # A session started by the application itself (no principal) has no owner to match.
            condition += (
                " AND (attribute_not_exists(#session_owner) OR attribute_type(#session_owner, :null_type)"
                " OR #session_owner = :session_owner)"
            )
            names["#session_owner"] = "owner"
            values[":session_owner"] = _value(session_owner)
            values[":null_type"] = {"S": "NULL"}
        if not approval_shaped:
            condition += " AND #name <> :approval"
            names["#name"] = "name"
            values[":approval"] = _value(APPROVAL_INTERRUPT)
        answered_event = OutboxEvent(
            type="interaction.answered", turn_id=root_turn_id, detail={"requestId": request_id}, created_at=now
        )
        try:
            self._transact_write(
                [
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": _key(session_id, _interaction_sk(root_turn_id, request_id)),
                            "UpdateExpression": "SET #status = :answered, #response = :response, "
                            "answered_by = :by, answered_at = :now, updated_at = :now, gsi1sk = :gsi1sk",
                            "ConditionExpression": condition,
                            "ExpressionAttributeNames": names,
                            "ExpressionAttributeValues": values,
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        }
                    },
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": _key(session_id, f"TURN#{root_turn_id}"),
                            "UpdateExpression": "SET updated_at = :now ADD open_interactions :minus, version :one",
                            "ConditionExpression": "#status = :waiting AND cancel_requested = :false "
                            "AND open_interactions > :zero",
                            "ExpressionAttributeNames": {"#status": "status"},
                            "ExpressionAttributeValues": {
                                ":now": _value(now),
                                ":minus": _value(-1),
                                ":one": _value(1),
                                ":waiting": _value("waiting"),
                                ":false": _value(False),
                                ":zero": _value(0),
                            },
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        }
                    },
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": {
                                **_key(session_id, f"TURN#{root_turn_id}#EVENT#answered#{request_id}"),
                                **_encode({"entity": "event", **answered_event.model_dump()}),
                            },
                        }
                    },
                ]
            )
        except self._canceled as error:
            if not _condition_failed(error):
                raise
            interaction_reason, turn_reason, _ = _reasons(error)
            if interaction_reason.get("Code") == "ConditionalCheckFailed":
                item = interaction_reason.get("Item")
                if not item:
                    return AnswerOutcome("missing")
                return AnswerOutcome("refused", interaction=InteractionRecord.model_validate(_decode(item)))
            turn_item = turn_reason.get("Item")
            return AnswerOutcome("turn_busy", turn=TurnRecord.model_validate(_decode(turn_item)) if turn_item else None)
        return AnswerOutcome("settled")

    @_aws
    def list_interactions(self, session_id: str, status: InteractionStatus | None) -> list[InteractionRecord]:
        condition = "gsi1pk = :pk" + (" AND begins_with(gsi1sk, :status)" if status else "")
        values = {":pk": _value(f"SESSION#{session_id}#INTERACTIONS")}
        if status:
            values[":status"] = _value(f"{status}#")
        request: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": INTERACTIONS_INDEX,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
        }
        found: list[InteractionRecord] = []
        while True:
            page = self.dynamodb.query(**request)
            found += [InteractionRecord.model_validate(_decode(item)) for item in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                return sorted(found, key=lambda i: (i.created_at, i.request_id))
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    # -- the action journal --------------------------------------------------------------------------

    def _turn_leased_by(
        self, session_id: str, root_turn_id: str, lease_owner: str, *, uncanceled: bool
    ) -> dict[str, Any]:
        """The condition that ``lease_owner`` still runs the root turn (and, ``uncanceled``, that no
        cancel was requested)."""
        values = {":owner": _value(lease_owner), ":running": _value("running")}
        if uncanceled:
            values[":false"] = _value(False)
        return {
            "TableName": self.table,
            "Key": _key(session_id, f"TURN#{root_turn_id}"),
            "ConditionExpression": "lease_owner = :owner AND #status = :running"
            + (" AND cancel_requested = :false" if uncanceled else ""),
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": values,
        }

    def _action_event(self, session_id: str, root_turn_id: str, action: ActionRecord, kind: str) -> dict[str, Any]:
        """The outbox item that reports what became known of an action after its runner lost the turn."""
        event = OutboxEvent(
            type=f"action.{kind}",
            turn_id=root_turn_id,
            detail={"turnId": action.turn_id, "tool": action.tool, "agentPath": action.agent_path},
            created_at=action.finished_at or action.started_at,
        )
        digest = hashlib.sha256(action.key.encode()).hexdigest()
        return {
            "Put": {
                "TableName": self.table,
                "Item": {
                    **_key(session_id, f"TURN#{root_turn_id}#EVENT#action#{kind}#{digest}"),
                    **_encode({"entity": "event", **event.model_dump()}),
                },
            }
        }

    @_aws
    def begin_action(
        self, session_id: str, root_turn_id: str, action: ActionRecord, lease_owner: str, until: float
    ) -> ActionRecord | None:
        renewal = self._turn_leased_by(session_id, root_turn_id, lease_owner, uncanceled=True)
        renewal["UpdateExpression"] = "SET lease_expires_at = :until"
        renewal["ExpressionAttributeValues"][":until"] = _value(until)
        try:
            self._transact_write(
                [
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": {
                                **_key(session_id, _action_sk(root_turn_id, action.key)),
                                **_encode({"entity": "action", **action.model_dump(exclude_none=True)}),
                            },
                            # An approval whose action never ran (its runner lost the turn first) runs now.
                            "ConditionExpression": "attribute_not_exists(pk) OR #status = :not_run",
                            "ExpressionAttributeNames": {"#status": "status"},
                            "ExpressionAttributeValues": {":not_run": _value("not_run")},
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        }
                    },
                    {"Update": renewal},
                ]
            )
        except self._canceled as error:
            if not _condition_failed(error):
                raise
            action_reason = _reasons(error)[0]
            if action_reason.get("Code") == "ConditionalCheckFailed" and action_reason.get("Item"):
                return ActionRecord.model_validate(_decode(action_reason["Item"]))
            raise LeaseLostError(
                f"turn {root_turn_id} was canceled, taken over or settled before the approved action {action.key!r} "
                "started: it was not started, and this run stops without committing"
            ) from error
        return None

    @_aws
    def finish_action(
        self,
        session_id: str,
        root_turn_id: str,
        action: ActionRecord,
        result: dict[str, Any],
        now: float,
        lease_owner: str,
    ) -> bool:
        record: dict[str, dict[str, Any]] = {
            "Update": {
                "TableName": self.table,
                "Key": _key(session_id, _action_sk(root_turn_id, action.key)),
                "UpdateExpression": "SET #status = :finished, #result = :result, finished_at = :now, late = :late",
                "ConditionExpression": "#status = :started",
                "ExpressionAttributeNames": {"#status": "status", "#result": "result"},
                "ExpressionAttributeValues": {
                    ":finished": _value("finished"),
                    ":started": _value("started"),
                    ":result": _value(json.dumps(result)),
                    ":now": _value(now),
                    ":late": _value(False),
                },
            }
        }
        try:
            self._transact_write(
                [
                    record,
                    {"ConditionCheck": self._turn_leased_by(session_id, root_turn_id, lease_owner, uncanceled=False)},
                ]
            )
            return True
        except self._canceled as error:
            if not _condition_failed(error) or _reasons(error)[0].get("Code") == "ConditionalCheckFailed":
                raise
        # The runner lost the turn while the action ran: its result is still recorded, as late, and
        # reported; the turn (another runner's, or settled) is not touched.
        record["Update"]["ExpressionAttributeValues"][":late"] = _value(True)
        finished = action.model_copy(update={"status": "finished", "finished_at": now, "late": True})
        self._transact_write([record, self._action_event(session_id, root_turn_id, finished, "finished_late")])
        return False

    @_aws
    def mark_action_not_run(self, session_id: str, root_turn_id: str, action: ActionRecord, now: float) -> None:
        self._transact_write(
            [
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": _key(session_id, _action_sk(root_turn_id, action.key)),
                        "UpdateExpression": "SET #status = :not_run, finished_at = :now",
                        "ConditionExpression": "#status = :started",
                        "ExpressionAttributeNames": {"#status": "status"},
                        "ExpressionAttributeValues": {
                            ":not_run": _value("not_run"),
                            ":started": _value("started"),
                            ":now": _value(now),
                        },
                    }
                },
                self._action_event(session_id, root_turn_id, action.model_copy(update={"finished_at": now}), "not_run"),
            ]
        )

    @_aws
    def mark_action_unknown(self, session_id: str, root_turn_id: str, key: str, now: float) -> ActionRecord:
        item = self.dynamodb.update_item(
            TableName=self.table,
            Key=_key(session_id, _action_sk(root_turn_id, key)),
            UpdateExpression="SET outcome_unknown_at = if_not_exists(outcome_unknown_at, :now)",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":now": _value(now)},
            ReturnValues="ALL_NEW",
        )["Attributes"]
        return ActionRecord.model_validate(_decode(item))

    @_aws
    def abandon_action(self, session_id: str, root_turn_id: str, key: str) -> None:
        self.dynamodb.delete_item(
            TableName=self.table,
            Key=_key(session_id, _action_sk(root_turn_id, key)),
            ConditionExpression="#status = :started",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":started": _value("started")},
        )

    # -- snapshots -----------------------------------------------------------------------------------

    @_aws
    def put_snapshot(self, key: str, snapshot: dict[str, Any]) -> None:
        try:
            self.s3.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=json.dumps(snapshot, separators=(",", ":")).encode(),
                ContentType="application/json",
                IfNoneMatch="*",
            )
        except self.s3.exceptions.ClientError as error:
            # Keys are new (they carry a uuid), so "already there" can only be an earlier attempt of
            # this same write whose reply was lost and that botocore retried: the object is ours.
            if error.response.get("Error", {}).get("Code") != "PreconditionFailed":
                raise

    @_aws
    def mark_superseded(self, keys: list[str]) -> None:
        for key in keys:
            self.s3.put_object_tagging(
                Bucket=self.bucket,
                Key=key,
                Tagging={"TagSet": [SUPERSEDED_TAG]},  # type: ignore[list-item]
            )

    @_aws
    def get_snapshot(self, key: str) -> Any:
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except self.s3.exceptions.NoSuchKey as error:
            raise SnapshotError(
                f"snapshot s3://{self.bucket}/{key} does not exist: nothing was restored; the turn stays as it is "
                "until the object is put back, then recover resumes it"
            ) from error
        try:
            return json.loads(body)
        except ValueError as error:
            raise SnapshotError(
                f"snapshot s3://{self.bucket}/{key} is not JSON ({error}): nothing was restored; the turn stays as "
                "it is until the object is repaired, then recover resumes it"
            ) from error

"""Interactions in DynamoDB: an answer recorded exactly once, and a session's interactions by status."""

from __future__ import annotations

import json
import time
from typing import Any, Literal

from resumable.exceptions import AwsError
from resumable.runtime.interrupts import APPROVAL_INTERRUPT
from resumable.store.audit import audit_put
from resumable.store.base import AnswerOutcome, Votes
from resumable.store.codec import (
    INBOX,
    INBOX_KEYS,
    UNSETTLED,
    decode,
    event_put,
    inbox_unexpired_after,
    interaction_sk,
    key,
    principal_inbox,
    root_sk,
    value,
)
from resumable.store.outbox import interaction_answered
from resumable.store.records import AuditRecord, InteractionRecord, InteractionStatus, OutboxEvent, TurnRecord
from resumable.store.resources import INBOX_INDEX, INTERACTIONS_INDEX, PRINCIPAL_INBOX_INDEX
from resumable.store.table import Table, aws_call, condition_failed, refused_item


class InteractionItems(Table):
    @aws_call
    def answer_interaction(
        self,
        session_id: str,
        root_turn_id: str,
        request_id: str,
        response: Any,
        answered_by: str,
        now: float,
        *,
        approval_shaped: bool,
        child_turn_id: str | None = None,
        principal: str | None = None,
        ruled: bool = False,
        votes: Votes | None = None,
        at_expiry: bool = False,
        audit: AuditRecord | None = None,
        via: str | None = None,
    ) -> AnswerOutcome:
        answered = interaction_answered(root_turn_id, request_id, response, answered_by, now)
        answer = self._open_interaction(
            session_id,
            root_turn_id,
            request_id,
            now,
            child_turn_id=child_turn_id,
            principal=principal,
            approval_shaped=approval_shaped,
            rule="any" if ruled else "none",
            expired=at_expiry,
        )
        answer["UpdateExpression"] = (
            "SET #status = :answered, #response = :response, answered_by = :by, answered_at = :now, "
            "answered_via = :via, updated_at = :now, gsi1sk = :gsi1sk REMOVE " + ", ".join(INBOX_KEYS)
        )
        answer["ExpressionAttributeNames"]["#response"] = "response"
        answer["ExpressionAttributeValues"] |= {
            ":answered": value("answered"),
            ":response": value(json.dumps(response)),
            ":by": value(answered_by),
            ":via": value(via),
            ":gsi1sk": value(f"answered#{request_id}"),
        }
        if votes is not None:
            _with_votes(answer, votes)
        sk = f"TURN#{root_turn_id}#EVENT#answered#{request_id}"
        try:
            self._transact_write(
                [
                    {"Update": answer},
                    self._one_answer_fewer(session_id, root_turn_id, now),
                    event_put(self.table, session_id, sk, answered),
                    *([audit_put(self.table, audit)] if audit is not None else []),
                ]
            )
        except self._canceled as error:
            return _refusal(error)
        return AnswerOutcome("answered")

    @aws_call
    def vote_interaction(
        self,
        session_id: str,
        root_turn_id: str,
        request_id: str,
        votes: Votes,
        now: float,
        *,
        child_turn_id: str | None = None,
        principal: str | None = None,
        audit: AuditRecord | None = None,
    ) -> AnswerOutcome:
        vote = self._open_interaction(
            session_id, root_turn_id, request_id, now, child_turn_id=child_turn_id, principal=principal, rule="some"
        )
        vote["UpdateExpression"] = "SET updated_at = :now"
        _with_votes(vote, votes)
        try:
            audited = [audit_put(self.table, audit)] if audit is not None else []
            self._transact_write([{"Update": vote}, self._waiting(session_id, root_turn_id), *audited])
        except self._canceled as error:
            return _refusal(error)
        return AnswerOutcome("voted")

    @aws_call
    def escalate_interaction(self, interaction: InteractionRecord, now: float, event: OutboxEvent) -> bool:
        sk = f"TURN#{interaction.root_turn_id}#EVENT#escalated#{interaction.request_id}"
        try:
            self._transact_write(
                [
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": key(
                                interaction.session_id, interaction_sk(interaction.root_turn_id, interaction.request_id)
                            ),
                            "UpdateExpression": "SET escalated_at = :now, updated_at = :now",
                            "ConditionExpression": "#status = :requested AND expires_at > :now AND "
                            "(attribute_not_exists(escalated_at) OR attribute_type(escalated_at, :null_type))",
                            "ExpressionAttributeNames": {"#status": "status"},
                            "ExpressionAttributeValues": {
                                ":now": value(now),
                                ":requested": value("requested"),
                                ":null_type": {"S": "NULL"},
                            },
                        }
                    },
                    event_put(self.table, interaction.session_id, sk, event),
                    # (a turn being canceled, whose cancel died before it settled it, escalates nothing)
                    self._waiting(interaction.session_id, interaction.root_turn_id),
                ]
            )
        except self._canceled as error:
            if not condition_failed(error):
                raise
            return False
        return True

    @aws_call
    def set_dismissed(self, interaction: InteractionRecord, dismissed_by: list[str], now: float) -> bool:
        """Write ``dismissed_by`` on the requested interaction, if it still holds the list it was read
        with (False: it changed, or is no longer requested: read it again)."""
        held = "dismissed_by = :held"
        if not interaction.dismissed_by:  # (stored before dismissals: none)
            held = f"(attribute_not_exists(dismissed_by) OR {held})"
        values = {
            ":now": value(now),
            ":requested": value("requested"),
            ":list": value(dismissed_by),
            ":held": value(interaction.dismissed_by),
        }
        try:
            self.dynamodb.update_item(
                TableName=self.table,
                Key=key(interaction.session_id, interaction_sk(interaction.root_turn_id, interaction.request_id)),
                UpdateExpression="SET dismissed_by = :list, updated_at = :now",
                ConditionExpression=f"#status = :requested AND {held}",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=values,
            )
        except self._conditional_failure:
            return False
        return True

    def _waiting(self, session_id: str, root_turn_id: str) -> dict[str, Any]:
        """A transaction's check that the root turn waits for answers and is not being canceled."""
        return {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": key(session_id, root_sk(root_turn_id)),
                "ConditionExpression": _WAITING,
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {":waiting": value("waiting"), ":false": value(False), ":zero": value(0)},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _open_interaction(
        self,
        session_id: str,
        root_turn_id: str,
        request_id: str,
        now: float,
        *,
        child_turn_id: str | None,
        principal: str | None,
        approval_shaped: bool = True,
        rule: Literal["none", "some", "any"],
        expired: bool = False,
    ) -> dict[str, Any]:
        """An update of the interaction (its changes for the caller to add) on every condition an answer
        must meet: it is requested and unexpired (``expired``: the answer its expiry gives, so expired),
        the asking child turn's, the principal's session's, approval-shaped for an approval, and under
        no approval rule, some, or ``any``."""
        condition = "#status = :requested AND " + ("expires_at <= :now" if expired else "expires_at > :now")
        names = {"#status": "status"}
        values: dict[str, Any] = {":requested": value("requested"), ":now": value(now)}
        if child_turn_id is not None:
            condition += " AND turn_id = :asker"
            values[":asker"] = value(child_turn_id)
        if principal is not None:
            # A session started by the application itself (no principal) is anyone's.
            condition += (
                " AND (attribute_not_exists(#principal) OR attribute_type(#principal, :null_type)"
                " OR #principal = :principal)"
            )
            names["#principal"] = "principal"
            values[":principal"] = value(principal)
            values[":null_type"] = {"S": "NULL"}
        if not approval_shaped:
            condition += " AND #name <> :approval"
            names["#name"] = "name"
            values[":approval"] = value(APPROVAL_INTERRUPT)
        if rule != "any":  # (one stored before rules has no attribute; one without a rule, null)
            condition += (
                " AND (attribute_not_exists(#rule) OR #rule = :no_rule)"
                if rule == "none"
                else " AND attribute_exists(#rule) AND #rule <> :no_rule"
            )
            names["#rule"] = "rule"
            values[":no_rule"] = value(json.dumps(None))
        return {
            "TableName": self.table,
            "Key": key(session_id, interaction_sk(root_turn_id, request_id)),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _one_answer_fewer(self, session_id: str, root_turn_id: str, now: float) -> dict[str, Any]:
        """The root turn waits on one answer fewer; it must be waiting, and not being canceled. It is due
        the sweeper's look at once (should its resume be lost, the sweeper resumes it)."""
        return {
            "Update": {
                "TableName": self.table,
                "Key": key(session_id, root_sk(root_turn_id)),
                "UpdateExpression": "SET updated_at = :now, gsi4pk = :unsettled, gsi4sk = :now "
                "ADD open_interactions :minus, version :one",
                "ConditionExpression": _WAITING,
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {
                    ":now": value(now),
                    ":minus": value(-1),
                    ":one": value(1),
                    ":waiting": value("waiting"),
                    ":false": value(False),
                    ":zero": value(0),
                    ":unsettled": value(UNSETTLED),
                },
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    @aws_call
    def get_interaction(self, session_id: str, root_turn_id: str, request_id: str) -> InteractionRecord | None:
        item = self.dynamodb.get_item(
            TableName=self.table, Key=key(session_id, interaction_sk(root_turn_id, request_id)), ConsistentRead=True
        ).get("Item")
        return InteractionRecord.model_validate(decode(item)) if item else None

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
        found: list[InteractionRecord] = []
        for start in range(0, len(wanted), _BATCH):
            request: dict[str, Any] = {self.table: {"Keys": wanted[start : start + _BATCH], "ConsistentRead": True}}
            for attempt in range(_ATTEMPTS):
                page = self.dynamodb.batch_get_item(RequestItems=request)
                found += [InteractionRecord.model_validate(decode(i)) for i in page["Responses"].get(self.table, [])]
                request = page.get("UnprocessedKeys") or {}
                if not request:
                    break
                time.sleep(0.05 * 2**attempt)  # (DynamoDB left some unread: throttled)
            else:
                raise AwsError("DynamoDB left interactions unread after retries (throttled): read the page again")
        return found

    @aws_call
    def list_inbox(
        self, principal: str | None, now: float, limit: int, start: dict[str, Any] | None = None
    ) -> tuple[list[InteractionRecord], dict[str, Any] | None]:
        """Up to ``limit`` requested interactions not yet expired at ``now``, most urgent first (the hour
        they expire in, then the riskiest, then the expiry): every session's (``principal`` None) or
        those of ``principal``'s sessions; one Query, and where the next page starts (None: this was
        the last; a page that met expired ones is shorter)."""
        index, partition = self.inbox_partition(principal)
        bound = inbox_unexpired_after(now)
        if start is not None and start.get(f"{index}sk", {}).get("S", "") <= bound:
            # A page that ended before the unexpired ones (in an hour now gone): everything after it that
            # could be listed is at or after the bound (DynamoDB refuses a start key outside it).
            start = None
        request: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": index,
            "KeyConditionExpression": f"{index}pk = :pk AND {index}sk > :hour",
            "FilterExpression": "expires_at > :now",
            "ExpressionAttributeValues": {
                ":pk": value(partition),
                ":hour": value(bound),
                ":now": value(now),
            },
            "Limit": limit,
        }
        if start is not None:
            request["ExclusiveStartKey"] = start
        page = self.dynamodb.query(**request)
        found = [InteractionRecord.model_validate(decode(item)) for item in page.get("Items", [])]
        return found, page.get("LastEvaluatedKey")

    @staticmethod
    def inbox_partition(principal: str | None) -> tuple[str, str]:
        """The index and partition key a principal's inbox is read from."""
        return (INBOX_INDEX, INBOX) if principal is None else (PRINCIPAL_INBOX_INDEX, principal_inbox(principal))


_BATCH = 100  # BatchGetItem's most keys
_ATTEMPTS = 6

_WAITING = "#status = :waiting AND cancel_requested = :false AND open_interactions > :zero"
"""What a root turn must be to take an answer or a vote: waiting for answers, not being canceled."""


def _refusal(error: Exception) -> AnswerOutcome:
    """Why a transaction of an interaction's write (first) and its root turn's (second) was refused."""
    if not condition_failed(error):
        raise error
    interaction = refused_item(error, 0)
    if interaction is not None:
        if not interaction:
            return AnswerOutcome("missing")
        return AnswerOutcome("refused", interaction=InteractionRecord.model_validate(decode(interaction)))
    turn = refused_item(error, 1)
    return AnswerOutcome("turn_busy", turn=TurnRecord.model_validate(decode(turn)) if turn else None)


def _with_votes(update: dict[str, Any], votes: Votes) -> None:
    """Make ``update`` write ``votes`` on the condition that the interaction still holds the number it
    was read with (any vote given meanwhile refuses it: the voter reads again)."""
    held = "vote_count = :counted"
    if votes.counted == 0:  # (an interaction stored before votes has no count)
        held = f"(attribute_not_exists(vote_count) OR {held})"
    update["ConditionExpression"] += f" AND {held}"
    update["UpdateExpression"] = update["UpdateExpression"].replace(
        "SET ", "SET votes = :votes, vote_count = :count, ", 1
    )
    update["ExpressionAttributeValues"] |= {
        ":counted": value(votes.counted),
        ":count": value(len(votes.votes)),
        ":votes": value(json.dumps({who: vote.model_dump() for who, vote in votes.votes.items()})),
    }

"""Interactions in DynamoDB: an answer recorded exactly once, and a session's interactions by status."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from resumable.runtime.interrupts import APPROVAL_INTERRUPT
from resumable.store.answers import AnswerCondition, AnswerOutcome, Votes
from resumable.store.audit import audit_put
from resumable.store.codec import (
    INBOX_KEYS,
    UNSETTLED,
    decode,
    event_put,
    interaction_sk,
    key,
    root_sk,
    value,
)
from resumable.store.grants import grant_put
from resumable.store.outbox import interaction_answered
from resumable.store.records import AuditRecord, GrantRecord, InteractionRecord, OutboxEvent, TurnRecord
from resumable.store.table import (
    Refusal,
    Table,
    aws_call,
    refusal,
)


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
        condition: AnswerCondition | None = None,
        *,
        approval_shaped: bool | None = None,
        audit: AuditRecord | None = None,
        via: str | None = None,
        grant: GrantRecord | None = None,
    ) -> AnswerOutcome:
        if condition is None:
            shaped = True if approval_shaped is None else approval_shaped
            condition = AnswerCondition.unruled(approval_shaped=shaped, asker=None, principal=None)
        elif approval_shaped is not None:
            raise TypeError("answer_interaction: approval_shaped is the condition's; give one or the other")
        answered = interaction_answered(root_turn_id, request_id, response, answered_by, now)
        answer = self._open_interaction(session_id, root_turn_id, request_id, now, condition)
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
        if condition.votes is not None:
            _with_votes(answer, condition.votes)
        sk = f"TURN#{root_turn_id}#EVENT#answered#{request_id}"
        try:
            self._transact_write(
                [
                    {"Update": answer},
                    self._one_answer_fewer(session_id, root_turn_id, now),
                    event_put(self.table, session_id, sk, answered),
                    *([audit_put(self.table, audit, self.shards)] if audit is not None else []),
                    *([grant_put(self.table, grant)] if grant is not None else []),
                ]
            )
        except ClientError as error:
            refused = refusal(error)
            if refused is None:
                raise
            return _outcome(refused)
        return AnswerOutcome("answered")

    @aws_call
    def vote_interaction(
        self,
        session_id: str,
        root_turn_id: str,
        request_id: str,
        condition: AnswerCondition,
        now: float,
        *,
        audit: AuditRecord | None = None,
        event: OutboxEvent | None = None,
    ) -> AnswerOutcome:
        vote = self._open_interaction(session_id, root_turn_id, request_id, now, condition)
        if condition.votes is None:
            raise TypeError("vote_interaction: a vote's condition holds the votes (AnswerCondition.vote)")
        vote["UpdateExpression"] = "SET updated_at = :now"
        _with_votes(vote, condition.votes)
        try:
            audited = [audit_put(self.table, audit, self.shards)] if audit is not None else []
            # (its event, under the count it brings the votes to: the one vote that lands at that count writes it)
            sk = f"TURN#{root_turn_id}#EVENT#voted#{request_id}#{condition.votes.counted + 1:03d}"
            told = [event_put(self.table, session_id, sk, event)] if event is not None else []
            self._transact_write([{"Update": vote}, self._waiting(session_id, root_turn_id), *audited, *told])
        except ClientError as error:
            refused = refusal(error)
            if refused is None:
                raise
            return _outcome(refused)
        return AnswerOutcome("voted")

    @aws_call
    def escalate_interaction(self, interaction: InteractionRecord, now: float, event: OutboxEvent) -> bool:
        sk = f"TURN#{interaction.root_turn_id}#EVENT#escalated#{interaction.request_id}"
        return self.written(
            self._transact_write,
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
            ],
        )

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
        return self.written(
            self.dynamodb.update_item,
            TableName=self.table,
            Key=key(interaction.session_id, interaction_sk(interaction.root_turn_id, interaction.request_id)),
            UpdateExpression="SET dismissed_by = :list, updated_at = :now",
            ConditionExpression=f"#status = :requested AND {held}",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues=values,
        )

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
        held: AnswerCondition,
    ) -> dict[str, Any]:
        """An update of the interaction (its changes for the caller to add) on every condition an answer
        must meet: it is requested and unexpired (the answer its expiry gives: expired), and ``held``
        holds (see ``AnswerCondition``)."""
        condition = "#status = :requested AND " + ("expires_at <= :now" if held.at_expiry else "expires_at > :now")
        names = {"#status": "status"}
        values: dict[str, Any] = {":requested": value("requested"), ":now": value(now)}
        if held.asker is not None:
            condition += " AND turn_id = :asker"
            values[":asker"] = value(held.asker)
        principal = held.principal
        if principal is not None:
            # A session started by the application itself (no principal) is anyone's.
            condition += (
                " AND (attribute_not_exists(#principal) OR attribute_type(#principal, :null_type)"
                " OR #principal = :principal)"
            )
            names["#principal"] = "principal"
            values[":principal"] = value(principal)
            values[":null_type"] = {"S": "NULL"}
        if not held.approval_shaped:
            condition += " AND #name <> :approval"
            names["#name"] = "name"
            values[":approval"] = value(APPROVAL_INTERRUPT)
        if held.rule != "any":  # (one stored before rules has no attribute; one without a rule, null)
            condition += (
                " AND (attribute_not_exists(#rule) OR #rule = :no_rule)"
                if held.rule == "none"
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
                    ":unsettled": value(self.sharded(UNSETTLED, session_id)),
                },
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }


_WAITING = "#status = :waiting AND cancel_requested = :false AND open_interactions > :zero"
"""What a root turn must be to take an answer or a vote: waiting for answers, not being canceled."""


def _outcome(refused: Refusal) -> AnswerOutcome:
    """Why a transaction of an interaction's write (first) and its root turn's (second) was refused."""
    interaction = refused.item(0)
    if interaction is not None:
        if not interaction:
            return AnswerOutcome("missing")
        return AnswerOutcome("refused", interaction=InteractionRecord.model_validate(decode(interaction)))
    turn = refused.item(1)
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

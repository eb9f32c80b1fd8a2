"""One-click decision links: an item beside the question (``LINK#<linkId>`` in its session's partition)
written when the link is issued, naming the question and the principal it answers as, and marked used
by a conditional update when the link's decision is taken. A link whose item was never written was
never issued (even a leaked key mints nothing), and a second use of one (a reload that posts again,
a forwarded mail) is refused. Kept until the question's records go (``purge_at``)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from resumable.store.codec import decode, key, value
from resumable.store.records import IssuedLink, LinkClaim
from resumable.store.resources import TTL_ATTRIBUTE
from resumable.store.table import CONDITION_FAILED, Table, aws_call, code_of


def link_sk(link_id: str) -> str:
    return f"LINK#{link_id}"


class DecisionLinkItems(Table):
    @aws_call
    def record_link(
        self, session_id: str, link_id: str, turn_id: str, request_id: str, principal: str, purge_at: float
    ) -> None:
        """Write that the link was issued (once: a link issued again, by an event published again, keeps
        its item as it is, used or not)."""
        try:
            self.dynamodb.put_item(
                TableName=self.table,
                Item={
                    **key(session_id, link_sk(link_id)),
                    "entity": value("decision_link"),
                    "turn_id": value(turn_id),
                    "request_id": value(request_id),
                    "principal": value(principal),
                    TTL_ATTRIBUTE: value(int(purge_at)),
                },
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as error:
            if code_of(error) != CONDITION_FAILED:
                raise

    @aws_call
    def issued_link(self, session_id: str, link_id: str) -> IssuedLink | None:
        """The item of the link, read consistently; None where it was never issued (or is purged)."""
        item = self.dynamodb.get_item(
            TableName=self.table, Key=key(session_id, link_sk(link_id)), ConsistentRead=True
        ).get("Item")
        if item is None or "request_id" not in item:
            return None
        return IssuedLink.model_validate(decode(item))

    @aws_call
    def claim_link(self, session_id: str, link_id: str, now: float) -> LinkClaim:
        """Mark the issued link used: ``used`` where it was used already, ``unissued`` where it was never issued."""
        try:
            self.dynamodb.update_item(
                TableName=self.table,
                Key=key(session_id, link_sk(link_id)),
                UpdateExpression="SET used_at = :now",
                ConditionExpression="attribute_exists(request_id) AND attribute_not_exists(used_at)",
                ExpressionAttributeValues={":now": value(now)},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if code_of(error) == CONDITION_FAILED:
                held: Any = error.response.get("Item") or {}
                return "used" if "request_id" in held else "unissued"
            raise
        return "claimed"

    @aws_call
    def release_link(self, session_id: str, link_id: str) -> None:
        """Let the link be used again: its decision could not be recorded (the turn was busy, AWS failed)."""
        try:
            self.dynamodb.update_item(
                TableName=self.table,
                Key=key(session_id, link_sk(link_id)),
                UpdateExpression="REMOVE used_at",
                ConditionExpression="attribute_exists(request_id)",
            )
        except ClientError as error:
            if code_of(error) != CONDITION_FAILED:
                raise

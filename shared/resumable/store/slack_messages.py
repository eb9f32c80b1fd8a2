"""Where each question's Slack message is, so that it can be updated in place once the question
settles: an item beside the question (``SLACK#<requestId>`` in its session's partition) holding the
channel and ``ts`` of the message, who is posting it (a claim, so that a redelivered event posts no
second message), the question as it was asked (to draw the settled message), and how it settled.
EventBridge delivers events at least once and in any order: each write returns the whole item as
it left it, so whichever of posting and settling writes second sees what the other wrote and
updates the message: none is lost."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError
from pydantic import BaseModel

from resumable.store.codec import decode, key, value
from resumable.store.resources import TTL_ATTRIBUTE
from resumable.store.table import Table, aws_call, refusal

CLAIM_SECONDS = 60  # a claim older than this (its poster died before it posted) may be taken over


class SlackMessage(BaseModel):
    """What the item holds: the question (its ``Interaction Requested`` detail, as JSON), the message
    once posted, and how the question settled once it has."""

    asked: str | None = None
    channel: str | None = None
    ts: str | None = None
    outcome: str | None = None


def slack_sk(request_id: str) -> str:
    return f"SLACK#{request_id}"


class SlackMessages(Table):
    @aws_call
    def claim_post(
        self, session_id: str, request_id: str, asked: str, now: float, purge_at: float
    ) -> SlackMessage | None:
        """Claim the posting of the question's message: the item as it now is, or None where another
        has posted it, or claimed it less than ``CLAIM_SECONDS`` ago."""
        try:
            reply = self.dynamodb.update_item(
                TableName=self.table,
                Key=key(session_id, slack_sk(request_id)),
                UpdateExpression="SET entity = :entity, asked = :asked, claimed_at = :now, #ttl = :purge",
                ConditionExpression=(
                    "attribute_not_exists(ts) AND (attribute_not_exists(claimed_at) OR claimed_at < :stale)"
                ),
                ExpressionAttributeNames={"#ttl": TTL_ATTRIBUTE},
                ExpressionAttributeValues={
                    ":entity": value("slack_message"),
                    ":asked": value(asked),
                    ":now": value(now),
                    ":stale": value(now - CLAIM_SECONDS),
                    ":purge": value(int(purge_at)),
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if refusal(error) is None:
                raise
            return None
        return _message(reply["Attributes"])

    @aws_call
    def get(self, session_id: str, request_id: str) -> SlackMessage | None:
        """The item as it is now (a consistent read), or None where no message was claimed."""
        item = self.dynamodb.get_item(
            TableName=self.table, Key=key(session_id, slack_sk(request_id)), ConsistentRead=True
        ).get("Item")
        return None if item is None else _message(item)

    @aws_call
    def posted(self, session_id: str, request_id: str, channel: str, ts: str) -> SlackMessage:
        """Record where the message was posted: the item as it now is (its outcome, if the question
        settled meanwhile)."""
        reply = self.dynamodb.update_item(
            TableName=self.table,
            Key=key(session_id, slack_sk(request_id)),
            UpdateExpression="SET channel = :channel, ts = :ts",
            ExpressionAttributeValues={":channel": value(channel), ":ts": value(ts)},
            ReturnValues="ALL_NEW",
        )
        return _message(reply["Attributes"])

    @aws_call
    def settle(self, session_id: str, request_id: str, outcome: str, purge_at: float) -> SlackMessage:
        """Record how the question settled (the first outcome stands): the item as it now is (where its
        message is, if it was posted)."""
        try:
            reply = self.dynamodb.update_item(
                TableName=self.table,
                Key=key(session_id, slack_sk(request_id)),
                UpdateExpression="SET entity = :entity, outcome = :outcome, #ttl = if_not_exists(#ttl, :purge)",
                ConditionExpression="attribute_not_exists(outcome)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ExpressionAttributeNames={"#ttl": TTL_ATTRIBUTE},
                ExpressionAttributeValues={
                    ":entity": value("slack_message"),
                    ":outcome": value(outcome),
                    ":purge": value(int(purge_at)),
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            refused = refusal(error)
            if refused is None:
                raise
            return _message(refused.item() or {})  # (ALL_OLD, settled before: first outcome and all)
        return _message(reply["Attributes"])


def _message(item: dict[str, Any]) -> SlackMessage:
    return SlackMessage.model_validate({k: v for k, v in decode(item).items() if k in SlackMessage.model_fields})

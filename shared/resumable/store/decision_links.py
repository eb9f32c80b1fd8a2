"""One-click decision links, each used once: an item beside the question (``LINK#<linkId>`` in its
session's partition) written by a conditional put when the link's decision is taken, so a second
use of the link (a reload that posts again, a forwarded mail) is refused. Kept until the question's
records go (``purge_at``)."""

from __future__ import annotations

from botocore.exceptions import ClientError

from resumable.store.codec import key, value
from resumable.store.resources import TTL_ATTRIBUTE
from resumable.store.table import CONDITION_FAILED, Table, aws_call, code_of


def link_sk(link_id: str) -> str:
    return f"LINK#{link_id}"


class DecisionLinkItems(Table):
    @aws_call
    def claim_link(self, session_id: str, link_id: str, now: float, purge_at: float) -> bool:
        """Mark the link used; False where it was used already."""
        try:
            self.dynamodb.put_item(
                TableName=self.table,
                Item={
                    **key(session_id, link_sk(link_id)),
                    "entity": value("decision_link"),
                    "used_at": value(now),
                    TTL_ATTRIBUTE: value(int(purge_at)),
                },
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as error:
            if code_of(error) == CONDITION_FAILED:
                return False
            raise
        return True

    @aws_call
    def release_link(self, session_id: str, link_id: str) -> None:
        """Let the link be used again: its decision could not be recorded (the turn was busy, AWS failed)."""
        self.dynamodb.delete_item(TableName=self.table, Key=key(session_id, link_sk(link_id)))

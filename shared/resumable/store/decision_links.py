"""One-click decision links: an item beside the question (``LINK#<linkId>`` in its session's partition)
written when the link is issued, naming the question, the principal it answers as and the digest of
each random secret a token of it holds (one per e-mail that carried it), and marked used by a
conditional update when the link's decision is taken. A token whose secret no digest names was never issued
(the key, or a read of the table, mints nothing), and a second use of a link (a reload that posts
again, a forwarded mail) is refused. Kept until the question's records go (``purge_at``)."""

from __future__ import annotations

from botocore.exceptions import ClientError

from resumable.store.codec import decode, key, value
from resumable.store.records import IssuedLink, LinkClaim
from resumable.store.resources import TTL_ATTRIBUTE
from resumable.store.table import Table, aws_call, refusal


def link_sk(link_id: str) -> str:
    return f"LINK#{link_id}"


class DecisionLinkItems(Table):
    @aws_call
    def record_link(
        self,
        session_id: str,
        link_id: str,
        question: tuple[str, str, str],
        digest: str,
        purge_at: float,
    ) -> bool:
        """Write that the link was issued for ``question`` (turn, request, principal) with a secret of
        ``digest``: False (nothing written) where it was used already. A link issued again (its event
        delivered, and mailed, again) adds its secret: every e-mail's link works, and the first used
        spends them all."""
        turn_id, request_id, principal = question
        return self.written(
            self.dynamodb.update_item,
            TableName=self.table,
            Key=key(session_id, link_sk(link_id)),
            UpdateExpression=(
                "SET entity = :entity, turn_id = :turn, request_id = :request, principal = :principal, "
                f"{TTL_ATTRIBUTE} = if_not_exists({TTL_ATTRIBUTE}, :purge) ADD digests :digest"
            ),
            ConditionExpression="attribute_not_exists(used_at)",
            ExpressionAttributeValues={
                ":entity": value("decision_link"),
                ":turn": value(turn_id),
                ":request": value(request_id),
                ":principal": value(principal),
                ":purge": value(int(purge_at)),
                ":digest": {"SS": [digest]},
            },
        )

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
    def claim_link(self, session_id: str, link_id: str, digest: str, now: float) -> LinkClaim:
        """Mark the issued link used: ``used`` where it was used already, ``unissued`` where it was never
        issued with a secret of ``digest``."""
        try:
            self.dynamodb.update_item(
                TableName=self.table,
                Key=key(session_id, link_sk(link_id)),
                UpdateExpression="SET used_at = :now",
                ConditionExpression=(
                    "attribute_exists(request_id) AND attribute_not_exists(used_at) AND contains(digests, :digest)"
                ),
                ExpressionAttributeValues={":now": value(now), ":digest": value(digest)},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            refused = refusal(error)
            if refused is None:
                raise
            return "used" if "used_at" in (refused.item() or {}) else "unissued"
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
            if refusal(error) is None:
                raise

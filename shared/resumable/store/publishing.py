"""The publisher's side of the outbox: a session's events numbered 1, 2, 3, ... in the order they are
published (the session item keeps the last number given), each number given once; published items
marked, so DynamoDB's TTL deletes them; those the bus never took handed to the publisher again."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from resumable.exceptions import AwsError, NotPublishedError
from resumable.store.codec import key, pk, value
from resumable.store.outbox import COMMIT_EVENT
from resumable.store.resources import TTL_ATTRIBUTE
from resumable.store.table import (
    MAX_TRANSACTION_ITEMS,
    TRANSACTION_CANCELED,
    Table,
    aws_call,
    code_of,
    reasons,
    refusal,
)

# A published outbox item is deleted by DynamoDB's TTL this long after it was put on the bus: longer
# than the stream keeps a record (24 hours), so a redelivered record always finds its item (and its
# number). One the bus never took has no expiry: it waits to be published again.
PURGE_AFTER_SECONDS = 3 * 24 * 3600


def _gone(session_id: str, sk: str) -> NotPublishedError:
    return NotPublishedError(
        f"outbox item {sk!r} of session {session_id!r} is gone: its event cannot be numbered or published "
        "(was the session deleted?)"
    )


class OutboxItems(Table):
    """The publisher's side of the outbox (see the module)."""

    @aws_call
    def last_sequence(self, session_id: str) -> int:
        """The last number given to one of the session's events (0: none yet)."""
        item = self.dynamodb.get_item(
            TableName=self.table,
            Key=key(session_id, "SESSION"),
            ConsistentRead=True,
            ProjectionExpression="published_sequence",
        ).get("Item", {})
        return int(item["published_sequence"]["N"]) if "published_sequence" in item else 0

    @aws_call
    def last_sequences(self, session_ids: list[str]) -> dict[str, int]:
        """``last_sequence`` of each session: a ``BatchGetItem`` per 100."""
        found = dict.fromkeys(session_ids, 0)
        keys = [key(s, "SESSION") for s in found]
        for item in self._batch_get(
            keys, "event counters", "nothing was numbered", ProjectionExpression="pk, published_sequence"
        ):
            if "published_sequence" in item:
                found[item["pk"]["S"].removeprefix("SESSION#")] = int(item["published_sequence"]["N"])
        return found

    @aws_call
    def number_sessions(self, wanted: list[tuple[str, list[str], int]]) -> set[str]:
        """Number several sessions' outbox items at once. For each (session, sks, after): the items at
        ``sks`` (in the order they are to be numbered, each commit's events together and in its
        order, none numbered before) get ``after + 1``, ``after + 2``, ..., and the session's counter
        moves on. A transaction holds as many sessions whole as its 100 items fit. The sessions
        numbered: those whose writes a condition refused (a counter not at ``after``; an item numbered
        before, or gone), or that met another transaction, are not, nor any of a transaction that
        failed otherwise, nor a session of more than 99 items (number those one by one with
        ``number_event``, which tells these apart)."""
        numbered: set[str] = set()
        writes: list[tuple[str, dict[str, Any]]] = []  # (each with its session)
        for session_id, sks, after in wanted:
            if not sks or len(sks) >= MAX_TRANSACTION_ITEMS:  # (with its counter, more than a transaction holds)
                continue
            adding = [(session_id, w) for w in self._numbering(session_id, sks, after)]
            if len(writes) + len(adding) > MAX_TRANSACTION_ITEMS:
                numbered |= self._pack(writes)
                writes = []
            writes += adding
        return numbered | (self._pack(writes) if writes else set())

    def _pack(self, writes: list[tuple[str, dict[str, Any]]]) -> set[str]:
        """The sessions numbered by ``writes`` (each with its session) in one transaction: those of the
        writes a condition refused (or that met another transaction) are left out and the rest sent
        again; none when it fails otherwise."""
        while writes:
            try:
                self._transact_write([write for _, write in writes])
                return {session_id for session_id, _ in writes}
            except ClientError as error:
                if code_of(error) != TRANSACTION_CANCELED:
                    return set()
                # Refused by a condition, or in conflict with another write past the retries: those
                # writes' sessions are left out (numbered one by one), the rest sent again.
                refused = {writes[n][0] for n, reason in enumerate(reasons(error)) if reason.get("Code") != "None"}
                if not refused:
                    return set()
                writes = [(session_id, write) for session_id, write in writes if session_id not in refused]
        return set()

    def _numbering(self, session_id: str, sks: list[str], after: int) -> list[dict[str, Any]]:
        """The writes that number ``sks`` ``after + 1``, ... if the session's counter is at ``after``
        and none of them was numbered: the counter's, then each item's."""
        counted = "attribute_exists(pk) AND " + (
            "attribute_not_exists(published_sequence)" if after == 0 else "published_sequence = :after"
        )
        writes: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": key(session_id, "SESSION"),
                    "UpdateExpression": "SET published_sequence = :next",
                    "ConditionExpression": counted,
                    "ExpressionAttributeValues": {
                        ":next": value(after + len(sks)),
                        **({":after": value(after)} if after else {}),
                    },
                }
            }
        ]
        writes += [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": key(session_id, item_sk),
                    "UpdateExpression": "SET #sequence = :number",
                    "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(#sequence)",
                    "ExpressionAttributeNames": {"#sequence": "sequence"},
                    "ExpressionAttributeValues": {":number": value(after + 1 + n)},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
            for n, item_sk in enumerate(sks)
        ]
        return writes

    @aws_call
    def number_event(self, session_id: str, sk: str, after: int) -> tuple[int, int] | None:
        """The number of the outbox item at ``sk``: the one it was given before (a redelivery), or the
        next of the session's (its counter moved from ``after``, in the same transaction). The events of
        one commit are numbered together, in the order the commit lists them (DynamoDB Streams does
        not promise the order of one transaction's records). None: the session's counter was not at
        ``after`` (read it again and retry). Also returns where the counter is now, as far as this
        call knows."""
        commit = COMMIT_EVENT.match(sk)
        if commit is None:
            return self._give(session_id, [sk], sk, after)
        group = self.dynamodb.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :commit)",
            ExpressionAttributeValues={":pk": value(pk(session_id)), ":commit": value(commit.group(1))},
            ProjectionExpression="sk, #sequence",
            ExpressionAttributeNames={"#sequence": "sequence"},
            ConsistentRead=True,
        ).get("Items", [])
        numbers = {item["sk"]["S"]: item.get("sequence") for item in group}
        if sk not in numbers:
            raise _gone(session_id, sk)
        given = numbers[sk]
        if given is not None:
            return int(given["N"]), after
        return self._give(session_id, sorted(s for s, n in numbers.items() if n is None), sk, after)

    def _give(self, session_id: str, sks: list[str], wanted: str, after: int) -> tuple[int, int] | None:
        """Number ``sks`` ``after + 1``, ``after + 2``, ... (a transaction per 99, each moving the
        counter); the number ``wanted`` got, or had. None: the counter or an item moved meanwhile."""
        for start in range(0, len(sks), 99):
            chunk = sks[start : start + 99]
            writes = self._numbering(session_id, chunk, after + start)
            try:
                self._transact_write(writes)
            except ClientError as error:
                refused = refusal(error)
                if refused is None:
                    raise
                if len(sks) == 1:
                    earlier = refused.item(1)
                    if earlier is not None:
                        if "sequence" not in earlier:
                            raise _gone(session_id, wanted) from error
                        return int(earlier["sequence"]["N"]), after
                return None
        return after + 1 + sks.index(wanted), after + len(sks)

    @aws_call
    def mark_all_published(self, items: list[tuple[str, str]], now: float) -> list[Exception | None]:
        """``mark_published`` for each (session, sk) of ``items``: a transaction per 100, and one by
        one those of a transaction that was refused (one of its items is gone, or it failed). For each,
        None once it is marked (or gone), or the error that left it unmarked."""
        marked: list[Exception | None] = [None] * len(items)
        for start in range(0, len(items), MAX_TRANSACTION_ITEMS):
            chunk = items[start : start + MAX_TRANSACTION_ITEMS]
            try:
                self._transact_write([{"Update": self._published(session_id, sk, now)} for session_id, sk in chunk])
                continue
            except Exception:  # (one by one: each tells its own)
                pass
            for n, (session_id, sk) in enumerate(chunk, start):
                try:
                    self.mark_published(session_id, sk, now)
                except AwsError as error:
                    marked[n] = error
        return marked

    def _published(self, session_id: str, sk: str, now: float) -> dict[str, Any]:
        return {
            "TableName": self.table,
            "Key": key(session_id, sk),
            "UpdateExpression": "SET published_at = :now, #purge = :purge",
            "ConditionExpression": "attribute_exists(pk)",
            "ExpressionAttributeNames": {"#purge": TTL_ATTRIBUTE},
            "ExpressionAttributeValues": {":now": value(now), ":purge": value(int(now + PURGE_AFTER_SECONDS))},
        }

    @aws_call
    def mark_published(self, session_id: str, sk: str, now: float) -> None:
        """The outbox item at ``sk`` is on the bus: it is deleted (DynamoDB's TTL) ``PURGE_AFTER_SECONDS``
        from now. (An item the bus never took keeps no expiry: it waits to be published again.)"""
        try:
            self.dynamodb.update_item(**self._published(session_id, sk, now))
        except ClientError as error:  # gone meanwhile: nothing is left to expire
            if refusal(error) is None:
                raise

    @aws_call
    def republish(self, session_id: str, now: float) -> int:
        """Have the stream deliver the session's unpublished outbox items again (those the bus never
        took: the publisher never got to them, or the mapping gave up on them): each is marked
        ``republish_at``, a change the publisher's filter lets in once more. How many."""
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "FilterExpression": "entity = :event AND attribute_not_exists(published_at)",
            "ProjectionExpression": "sk",
            "ExpressionAttributeValues": {":pk": value(pk(session_id)), ":event": value("event")},
            "ConsistentRead": True,
        }
        marked = 0
        for item in self._query_items(request):
            try:
                self.dynamodb.update_item(
                    TableName=self.table,
                    Key=key(session_id, item["sk"]["S"]),
                    UpdateExpression="SET republish_at = :now",
                    ConditionExpression="attribute_exists(pk) AND attribute_not_exists(published_at)",
                    ExpressionAttributeValues={":now": value(now)},
                )
                marked += 1
            except ClientError as error:
                if refusal(error) is None:
                    raise
                # (published meanwhile)
        return marked

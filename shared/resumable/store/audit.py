"""The audit trail in DynamoDB: records written once, inside the transaction of what they record, in a
partition per UTC day of their own, apart from every session (deleting one never touches them).

| item | pk | sk |
|---|---|---|
| audit record | ``AUDIT#<YYYY-MM-DD>[#<shard>]`` | ``<ISO 8601 time, µs>#<requestId>#<n><kind>#<who or what>`` |
| a refusal's mark | ``AUDIT#<YYYY-MM-DD>[#<shard>]`` | ``REFUSED#<requestId>#<who>#<refusal>`` |
| a question's refusals of the day | ``AUDIT#<YYYY-MM-DD>[#<shard>]`` | ``REFUSED#<requestId>`` |
| the delivered trail's head | ``AUDIT#DELIVERY`` | ``HEAD`` |

A refused answer is recorded once a day per question, principal and refusal, and at most so many a
day per question: its record is written with a mark its put requires be absent and a count its
update requires be under the most, so a flood of the same refused press writes one record, and a
flood from many principals that many (marks and counts sort after every time, outside every read of
the day's records).

A day is sharded like the inbox (``codec.sharded``, by the record's session), so no partition key
takes every decision of the deployment; its records are one Query per shard, merged in time order.
Nothing updates or deletes a record: its put requires that no item holds its key, and only DynamoDB's
TTL removes it, at its own ``purge_at``.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from resumable.store.codec import sharded, shards_of, value
from resumable.store.records import AuditRecord
from resumable.store.table import Table, aws_call

_ORDER = {"refused": 0, "vote": 1, "decision": 2, "action": 3, "grant": 4}


def audit_day(at: float) -> str:
    """The UTC day (``YYYY-MM-DD``) whose partition holds a record made at ``at``."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")


def audit_time(at: float) -> str:
    """``at`` as a record's sort key starts: ISO 8601 UTC to the microsecond, so text order is time order."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def audit_pk(day: str) -> str:
    return f"AUDIT#{day}"


def audit_sk(record: AuditRecord) -> str:
    who = (record.by if record.kind != "action" else record.outcome) or ""
    kind = f"{_ORDER[record.kind]}{record.kind}"  # (made in the same instant: a vote, the decision, its action)
    return f"{audit_time(record.at)}#{record.request_id}#{kind}#{hashlib.sha256(who.encode()).hexdigest()[:16]}"


def audit_put(table: str, record: AuditRecord, shards: int) -> dict[str, Any]:
    """The transaction item that appends ``record`` (to its session's shard of ``shards``): refused, like
    its whole transaction, should a record already hold its key (nothing overwrites a record)."""
    return {
        "Put": {
            "TableName": table,
            "Item": {
                "pk": value(sharded(audit_pk(audit_day(record.at)), record.session_id, shards)),
                "sk": value(audit_sk(record)),
                "entity": value("audit"),
                "purge_at": value(record.purge_at),
                "record": value(json.dumps(record.model_dump(exclude_defaults=True), ensure_ascii=False)),
            },
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


class AuditItems(Table):
    @aws_call
    def record_refused(self, audit: AuditRecord, most: int) -> bool:
        pk = sharded(audit_pk(audit_day(audit.at)), audit.session_id, self.shards)
        who = hashlib.sha256((audit.by or "").encode()).hexdigest()[:16]
        counted = {  # (the question's refused records of the day, whoever tried: at most ``most``)
            "Update": {
                "TableName": self.table,
                "Key": {"pk": value(pk), "sk": value(f"REFUSED#{audit.request_id}")},
                "UpdateExpression": "SET entity = :entity, purge_at = :purge ADD refused :one",
                "ConditionExpression": "attribute_not_exists(refused) OR refused < :most",
                "ExpressionAttributeValues": {
                    ":entity": value("audit_mark"),
                    ":purge": value(audit.purge_at),
                    ":one": value(1),
                    ":most": value(most),
                },
            }
        }
        mark = {
            "Put": {
                "TableName": self.table,
                "Item": {
                    "pk": value(pk),
                    "sk": value(f"REFUSED#{audit.request_id}#{who}#{audit.refusal}"),
                    "entity": value("audit_mark"),
                    "purge_at": value(audit.purge_at),
                },
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
        return self.written(self._transact_write, [counted, mark, audit_put(self.table, audit, self.shards)])

    @aws_call
    def list_audit(
        self, day: str, after: str | None, since: float, until: float, limit: int
    ) -> tuple[list[tuple[str, AuditRecord]], bool]:
        """Up to ``limit`` records of ``day`` made in [``since``, ``until``), oldest first, after the
        sort key ``after`` (None: from the first), each with its sort key; and whether the day holds more."""
        requests: list[dict[str, Any]] = []
        # (a day's partition holds that day's records: one whose time is another day's was not written there
        # by the service, and is never listed; nor is it delivered, so the trail's check names it nowhere)
        start = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
        since, until = max(since, start), min(until, start + 86_400)
        if since >= until:
            return [], False
        for shard in shards_of(audit_pk(day), self.shards):
            request = self._day_query(shard, since, until)
            if after is not None:
                request["ExclusiveStartKey"] = {"pk": value(shard), "sk": value(after)}
            requests.append(request)
        merged = self.merged(requests, "sk", limit)
        found = [
            (item["sk"]["S"], AuditRecord.model_validate(json.loads(item["record"]["S"]))) for item in merged.items
        ]
        return found, merged.more

    def _day_query(self, shard: str, since: float, until: float) -> dict[str, Any]:
        """The Query of one shard of a day's partition for its records made in [``since``, ``until``)."""
        return {
            "TableName": self.table,
            # Consistent: a read a moment after a record committed shows it, so a cursor (or an export
            # chained on its ``until``) never passes it by. Twice the read units of an eventually
            # consistent read: 1 per 4 KB read instead of 0.5.
            "ConsistentRead": True,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :since AND :until",
            "ExpressionAttributeValues": {
                ":pk": value(shard),
                # (a record made exactly at ``until`` sorts after its bare time: outside)
                ":since": value(audit_time(since)),
                ":until": value(audit_time(until)),
            },
        }

    @aws_call
    def audit_items(self, since: float, until: float) -> list[tuple[str, str, str, float]]:
        """Every record made in [``since``, ``until``) as stored: its partition key, sort key, record
        (JSON text) and ``purge_at``, ordered by sort key then partition key (a consistent read)."""
        found: list[tuple[str, str, str, float]] = []
        day = since - since % 86_400
        while day < until:
            for shard in shards_of(audit_pk(audit_day(day)), self.shards):  # (a day's own records only)
                request = self._day_query(shard, max(since, day), min(until, day + 86_400))
                while True:
                    page = self.dynamodb.query(**request)
                    found += [
                        # (an item without purge_at, which the service never writes, is kept: never expired)
                        (i["pk"]["S"], i["sk"]["S"], i["record"]["S"], float(i.get("purge_at", {"N": "1e12"})["N"]))
                        for i in page.get("Items", [])
                        if "record" in i
                    ]
                    if "LastEvaluatedKey" not in page:
                        break
                    request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
            day += 86_400
        return sorted(found, key=lambda item: (item[1], item[0]))

    @aws_call
    def delivery_head(self) -> dict[str, str] | None:
        """The last hour delivered to the trail's bucket (``hour``), its digest's key and SHA-256, and the
        first hour delivered (``first_hour``); None: nothing delivered yet."""
        item = self.dynamodb.get_item(TableName=self.table, Key=_HEAD, ConsistentRead=True).get("Item")
        held = ("hour", "digest_key", "digest_sha256", "first_hour")
        return None if item is None else {k: item[k]["S"] for k in held if k in item}

    @aws_call
    def advance_delivery(self, previous: str | None, head: dict[str, str]) -> bool:
        """The head is now ``head``, if it was still at the hour ``previous`` (None: none): two deliveries
        at once cannot both move it. False: another moved it first."""
        request: dict[str, Any] = {
            "TableName": self.table,
            "Item": {**_HEAD, "entity": value("audit_delivery"), **{k: value(v) for k, v in head.items()}},
            "ConditionExpression": "attribute_not_exists(pk)",
        }
        if previous is not None:
            request |= {
                "ConditionExpression": "#hour = :previous",  # (hour is one of DynamoDB's reserved words)
                "ExpressionAttributeNames": {"#hour": "hour"},
                "ExpressionAttributeValues": {":previous": value(previous)},
            }
        return self.written(self.dynamodb.put_item, **request)


_HEAD = {"pk": value("AUDIT#DELIVERY"), "sk": value("HEAD")}

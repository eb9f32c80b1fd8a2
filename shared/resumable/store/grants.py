"""Standing grants on DynamoDB: one partition (``GRANTS``) holds every grant, keyed by its scope
(``GRANT#SESSION#<session>#<id>``, ``GRANT#PRINCIPAL#<principal>#<id>``), so a run reads the grants
that may cover its calls in two queries, and the list is one. A grant is written in the transaction
of the approval that gives it; a revoke is one conditional update; the action journal's entry of a
call a grant approved begins in a transaction that checks the grant (``grant_check``), so a revoke
and that entry are ordered by DynamoDB: whichever commits first. The table lets a grant go a week after it
ends (``purge_at``); the audit trail keeps the approval that gave it and every call it approved."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from resumable.store.audit import audit_put
from resumable.store.codec import decode, encode, value
from resumable.store.records import AuditRecord, GrantRecord
from resumable.store.table import Table, aws_call, refusal

GRANTS_PK = "GRANTS"
KEPT_AFTER_END = 7 * 86400
"""How long the table keeps a grant after it expired or was revoked: it is listed that long."""


def grant_sk(grant: GrantRecord) -> str:
    scoped = f"SESSION#{grant.session_id}" if grant.scope == "session" else f"PRINCIPAL#{grant.principal}"
    return f"GRANT#{scoped}#{grant.grant_id}"


def grant_key(grant: GrantRecord) -> dict[str, Any]:
    return {"pk": {"S": GRANTS_PK}, "sk": {"S": grant_sk(grant)}}


def grant_put(table: str, grant: GrantRecord) -> dict[str, Any]:
    """The transaction item that writes a new grant (refused where one of its id exists)."""
    return {
        "Put": {
            "TableName": table,
            "Item": {**grant_key(grant), **encode({"entity": "grant", **grant.model_dump(exclude_none=True)})},
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


def grant_check(table: str, grant: GrantRecord, now: float) -> dict[str, Any]:
    """The ``ConditionCheck`` that holds only while ``grant`` is neither revoked nor expired at ``now``."""
    return {
        "ConditionCheck": {
            "TableName": table,
            "Key": grant_key(grant),
            "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(revoked_at) AND expires_at > :now",
            "ExpressionAttributeValues": {":now": value(now)},
        }
    }


class GrantItems(Table):
    @aws_call
    def live_grants(self, session_id: str, principal: str | None, now: float) -> list[GrantRecord]:
        scopes = [f"GRANT#SESSION#{session_id}#"] + ([f"GRANT#PRINCIPAL#{principal}#"] if principal else [])
        found = [
            GrantRecord.model_validate(decode(item))
            for prefix in scopes
            for item in self._query_items(
                {
                    "TableName": self.table,
                    "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
                    "ExpressionAttributeValues": {":pk": value(GRANTS_PK), ":prefix": value(prefix)},
                    "ConsistentRead": True,
                }
            )
        ]
        mine = [  # (a prefix alone is not enough: a principal may hold '#', and so begin like another's key)
            g
            for g in found
            if (g.session_id == session_id if g.scope == "session" else g.principal == principal) and g.live(now)
        ]
        return sorted(mine, key=lambda g: g.granted_at)

    @aws_call
    def all_grants(self) -> list[GrantRecord]:
        items = self._query_items(
            {
                "TableName": self.table,
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": {":pk": value(GRANTS_PK)},
                "ConsistentRead": True,
            }
        )
        return sorted((GrantRecord.model_validate(decode(item)) for item in items), key=lambda g: g.granted_at)

    @aws_call
    def revoke_grant(self, grant: GrantRecord, by: str, now: float, audit: AuditRecord) -> GrantRecord:
        revoke = {
            "Update": {
                "TableName": self.table,
                "Key": grant_key(grant),
                "UpdateExpression": "SET revoked_by = :by, revoked_at = :now, purge_at = :purge",
                "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(revoked_at)",
                "ExpressionAttributeValues": {
                    ":by": value(by),
                    ":now": value(now),
                    ":purge": value(int(min(grant.purge_at, now + KEPT_AFTER_END))),
                },
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }
        try:
            self._transact_write([revoke, audit_put(self.table, audit, self.shards)])
        except ClientError as error:
            refused = refusal(error)
            if refused is None:
                raise
            found = refused.item(0) or {}
            # (revoked already: as it is; let go by the table, having ended: as read)
            return GrantRecord.model_validate(decode(found)) if "grant_id" in found else grant
        return grant.model_copy(update={"revoked_by": by, "revoked_at": now})

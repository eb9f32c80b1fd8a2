"""The commit: one atomic change of a turn tree in DynamoDB, guarded by the root turn's version,
status and lease; split over several transactions when the tree is bigger than one holds."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from botocore.exceptions import ClientError

from resumable.exceptions import StaleCommitError
from resumable.store.base import Commit
from resumable.store.codec import (
    DUE_KEYS,
    EXPIRING,
    action_sk,
    encode,
    event_put,
    interaction_item,
    interaction_sk,
    key,
    present,
    sweeper_keys,
    turn_item,
    turn_sk,
    value,
)
from resumable.store.outbox import COMMIT_EVENTS, commit_event_sk
from resumable.store.records import TurnRecord
from resumable.store.resources import TTL_ATTRIBUTE
from resumable.store.table import (
    MAX_TRANSACTION_ITEMS,
    Table,
    aws_call,
    refusal,
)

# The root turn's attributes a commit writes.
_ROOT_FIELDS = {
    "agent",
    "agent_path",
    "status",
    "version",
    "snapshot_key",
    "agent_snapshots",
    "output",
    "error",
    "open_interactions",
    "purge_at",
    "updated_at",
}


def _expectation(commit: Commit) -> tuple[str, dict[str, Any]]:
    """The condition on the root turn that makes the commit apply only as its caller expects."""
    condition = "version = :expected_version AND #status = :expected_status AND " + (
        "lease_owner = :expected_owner"
        if commit.expected_lease_owner is not None
        else "attribute_not_exists(lease_owner)"
    )
    values = {
        ":expected_version": value(commit.expected_version),
        ":expected_status": value(commit.expected_status),
        **({":expected_owner": value(commit.expected_lease_owner)} if commit.expected_lease_owner else {}),
    }
    if commit.refuse_if_canceling:
        condition += " AND cancel_requested = :not_canceling"
        values[":not_canceling"] = value(False)
    if commit.expected_lease_expired_by is not None:
        condition += " AND lease_expires_at < :expired_by"
        values[":expired_by"] = value(commit.expected_lease_expired_by)
    return condition, values


class CommitItems(Table):
    @aws_call
    def commit(self, commit: Commit) -> None:
        condition, expected = _expectation(commit)
        final = [self._root_update(commit, condition, expected)]
        session = self._session_update(commit)
        if session is not None:
            final.append(session)
        others = self._tree_writes(commit, stamped=False)
        events = self._event_writes(commit)
        # A settling commit gives the tree's other items their retention only where the whole commit is
        # one transaction (so only with the root's settling, never on a turn whose last transaction
        # failed): else the sweeper does, at the root's.
        expiry = self._expiry_writes(commit)
        if expiry and len(final) + len(others) + len(events) + len(expiry) <= MAX_TRANSACTION_ITEMS:
            others = self._tree_writes(commit, stamped=True) + expiry
        # A tree bigger than one transaction commits in several. The earlier ones each carry a
        # condition check on the root turn, so they apply only while this commit still holds it; items
        # they write are invisible to answers until the last one moves the root out of its state. The
        # outbox items go in the last one (so no event tells of a commit that did not land), unless
        # there are more than it holds: then the first of them (the questions asked, which the earlier
        # transactions write too) go before.
        root = commit.root
        guard = {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": key(root.session_id, turn_sk(root)),
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": expected,
            }
        }
        room = MAX_TRANSACTION_ITEMS - len(final)
        spilled = max(0, len(events) - room)
        others, events = others + events[:spilled], events[spilled:]
        final += events
        room -= len(events)
        while len(others) > room:
            chunk, others = others[: MAX_TRANSACTION_ITEMS - 1], others[MAX_TRANSACTION_ITEMS - 1 :]
            self._transact([guard, *chunk], root)
        self._transact(final + others, root)

    def _root_update(self, commit: Commit, condition: str, expected: dict[str, Any]) -> dict[str, Any]:
        root = commit.root
        # A commit moves the turn on: the sweeper's count of its attempts starts again, and the turn
        # is due a look as its new state says (or, settled, when its retention ends).
        fields = {**root.model_dump(include=_ROOT_FIELDS), "sweeps": 0}
        index = sweeper_keys(root, self.shards, commit.new_interactions)
        fields |= index or {}
        nothing = sorted(f for f, v in fields.items() if v is None)  # (removed, not stored as NULL: ``present``)
        fields = present(fields)
        # Every attribute through a placeholder: several of these names are DynamoDB reserved words.
        names = {"#status": "status", **{f"#{f}": f for f in (*fields, *nothing)}}
        sets = ", ".join(f"#{f} = :{f}" for f in fields)
        removed = [f"#{f}" for f in nothing]
        removed += [] if root.lease_owner is not None else ["lease_owner", "lease_expires_at"]
        removed += list(DUE_KEYS) if index is None else []
        update = f"SET {sets}" + ("" if root.lease_owner is None else ", lease_expires_at = :lease")
        update += f" REMOVE {', '.join(removed)}" if removed else ""
        values = {f":{f}": v for f, v in encode(fields).items()}
        if root.lease_owner is not None:
            values[":lease"] = value(root.lease_expires_at)
        return {
            "Update": {
                "TableName": self.table,
                "Key": key(root.session_id, turn_sk(root)),
                "UpdateExpression": update,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": {**values, **expected},
            }
        }

    def _session_update(self, commit: Commit) -> dict[str, Any] | None:
        """The session's new conversation (a completed turn) and its freeing (a settled one)."""
        if not commit.settle_session and commit.session_snapshot_key is None:
            return None
        root = commit.root
        sets = ["updated_at = :now"]
        values: dict[str, Any] = {":now": value(root.updated_at), ":turn": value(root.turn_id)}
        if commit.settle_session and root.purge_at is not None:
            # No turn is active: the session's retention counts from now, as its last turn's does.
            sets += ["purge_at = :purge", "gsi4pk = :expiring", "gsi4sk = :purge"]
            values |= {":purge": value(root.purge_at), ":expiring": value(self.sharded(EXPIRING, root.session_id))}
        if commit.session_snapshot_key is not None:
            sets.append("snapshot_key = :snapshot")
            values[":snapshot"] = value(commit.session_snapshot_key)
        if commit.agent_snapshots is not None:
            sets.append("agent_snapshots = :agent_snapshots")
            values[":agent_snapshots"] = value(commit.agent_snapshots)
        return {
            "Update": {
                "TableName": self.table,
                "Key": key(root.session_id, "SESSION"),
                "UpdateExpression": "SET "
                + ", ".join(sets)
                + (" REMOVE active_turn_id" if commit.settle_session else ""),
                "ConditionExpression": "active_turn_id = :turn",
                "ExpressionAttributeValues": values,
            }
        }

    def _tree_writes(self, commit: Commit, *, stamped: bool) -> list[dict[str, Any]]:
        """New interactions, changed interactions and child turns (``stamped``: with the settled root's
        retention)."""
        purge_at = commit.root.purge_at if commit.root.settled else None
        if stamped and purge_at is not None:
            commit = replace(
                commit,
                new_interactions=[i.model_copy(update={"purge_at": purge_at}) for i in commit.new_interactions],
                interaction_changes=[
                    (i.model_copy(update={"purge_at": purge_at}), s) for i, s in commit.interaction_changes
                ],
                children=[c.model_copy(update={"purge_at": purge_at}) for c in commit.children],
            )
        writes: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": interaction_item(i, self.shards),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
            for i in commit.new_interactions
        ]
        writes += [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": interaction_item(changed, self.shards),
                    # (as read: a vote given since would be lost with the record's rewrite)
                    "ConditionExpression": "#status = :from"
                    " AND (attribute_not_exists(vote_count) OR vote_count = :votes)",
                    "ExpressionAttributeNames": {"#status": "status"},
                    "ExpressionAttributeValues": {":from": value(from_status), ":votes": value(changed.vote_count)},
                }
            }
            for changed, from_status in commit.interaction_changes
        ]
        writes += [
            {"Put": {"TableName": self.table, "Item": turn_item(child, self.shards)}} for child in commit.children
        ]
        return writes

    def _expiry_writes(self, commit: Commit) -> list[dict[str, Any]]:
        """The retention of the settled tree's items that the commit does not write otherwise."""
        root, tree = commit.root, commit.expiring
        if not root.settled or root.purge_at is None or tree is None:
            return []
        purge_at = root.purge_at
        written = {turn_sk(c) for c in commit.children}
        written |= {interaction_sk(root.turn_id, i.request_id) for i in commit.new_interactions}
        written |= {interaction_sk(root.turn_id, i.request_id) for i, _ in commit.interaction_changes}
        items = [turn_sk(c) for c in tree.children]
        items += [interaction_sk(root.turn_id, i.request_id) for i in tree.interactions]
        items += [action_sk(root.turn_id, a.key) for a in tree.actions]
        return [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": key(root.session_id, sk),
                    # Unconditional: an entry deleted meanwhile (an action abandoned) leaves a stub that
                    # expires by itself, rather than refusing the commit.
                    "UpdateExpression": "SET #purge = :purge",
                    "ExpressionAttributeNames": {"#purge": TTL_ATTRIBUTE},
                    "ExpressionAttributeValues": {":purge": value(purge_at)},
                }
            }
            for sk in dict.fromkeys(items)
            if sk not in written
        ]

    def _event_writes(self, commit: Commit) -> list[dict[str, Any]]:
        root = commit.root
        puts = [
            event_put(self.table, root.session_id, commit_event_sk(root.turn_id, root.version, n), event)
            for n, event in enumerate(commit.events)
        ]
        for put in puts:  # (so the publisher numbers them all together without reading which there are)
            put["Put"]["Item"][COMMIT_EVENTS] = value(len(puts))
        return puts

    def _transact(self, items: list[dict[str, Any]], root: TurnRecord) -> None:
        try:
            self._transact_write(items)
        except ClientError as error:
            refused = refusal(error)
            if refused is None:
                raise
            codes = [r.get("Code") for r in refused.reasons]
            raise StaleCommitError(
                f"commit of turn {root.turn_id} (version {root.version}) was rejected, nothing was written: {codes}"
            ) from error

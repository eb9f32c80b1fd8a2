"""Open questions written straight into the table, as a commit writes them: for the inbox's tests and
its benchmark, which need many sessions' questions without running as many turns."""

from __future__ import annotations

import hashlib

from resumable.store import DynamoDBStore
from resumable.store.codec import interaction_item
from resumable.store.records import InteractionRecord


def open_questions(
    store: DynamoDBStore, sessions: int, now: float, principal: str | None, *, sooner_later: bool = True
) -> list[str]:
    """``sessions`` requested interactions, one per session, of ``principal``; their request ids, most
    urgent first. ``sooner_later``: the later a session, the sooner its question expires."""
    records = [
        question(n, f"many-{n:05d}", now + 3600 + (-n if sooner_later else n), now, principal=principal)
        for n in range(sessions)
    ]
    write_interactions(store, records)
    return [r.request_id for r in sorted(records, key=lambda r: r.expires_at)]


def question(
    n: int,
    session_id: str,
    expires_at: float,
    now: float,
    *,
    principal: str | None,
    risk: str | None = None,
    dismissed_by: tuple[str, ...] = (),
) -> InteractionRecord:
    """The ``n``-th requested interaction (ids of its own), of a root turn of ``session_id``."""
    root = hashlib.sha256(session_id.encode()).hexdigest()[:32]
    return InteractionRecord(
        session_id=session_id,
        root_turn_id=root,
        turn_id=root,
        request_id=f"r{n:024x}",
        interrupt_id=f"v1:tool:{n}",
        name="approval",
        reason={"agent": "a", "tool": "t", "input": {"n": n}},
        agent_path=["a"],
        principal=principal,
        status="requested",
        risk=risk,
        dismissed_by=list(dismissed_by),
        expires_at=expires_at,
        created_at=now,
        updated_at=now,
    )


def write_interactions(store: DynamoDBStore, records: list[InteractionRecord]) -> None:
    """``records`` written as a commit writes them, in ``store``'s shards."""
    for chunk in range(0, len(records), 25):
        store.dynamodb.batch_write_item(
            RequestItems={
                store.table: [
                    {"PutRequest": {"Item": interaction_item(r, store.shards)}} for r in records[chunk : chunk + 25]
                ]
            }
        )

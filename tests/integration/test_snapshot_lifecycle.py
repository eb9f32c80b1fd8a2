"""Snapshots no turn points at are retired (tagged for the bucket's lifecycle; kept as items of the
table, given an expiry); the ones records point at never are. Each case runs with the snapshots in the
bucket and, ``SNAPSHOT_ITEM_BYTES`` over their size, in the table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest

from resumable import Agent, ScriptedModel
from resumable.exceptions import StaleCommitError
from resumable.service import AgentContext, Service
from resumable.service.advancing.commit import _no_longer_pointed_at
from resumable.store import DynamoDBStore, S3Session, S3Snapshots
from resumable.store.records import TurnRecord
from resumable.store.resources import BUCKET_LIFECYCLE_RULES, RETIRED_TAG
from resumable.store.snapshots import ITEM
from tests.agents import calls, says
from tests.factories import delete_record
from tests.integration.helpers import APPROVE, session_items, table_and_bucket


def pointed_at(store: DynamoDBStore, session_id: str) -> set[str]:
    """Every snapshot key a record of the session points at."""
    keys: set[str] = set()
    for item in session_items(store, session_id):
        keys |= {item.get("snapshot_key"), item.get("base_snapshot_key")}
        keys |= set((item.get("agent_snapshots") or {}).values())
        keys |= set((item.get("base_agent_snapshots") or {}).values())
    return {k for k in keys if k}


def snapshot_items(store: DynamoDBStore, session_id: str) -> dict[str, dict[str, Any]]:
    """The session's snapshots kept as items of the table, by their keys (a Scan: this test's table)."""
    quoted = quote(session_id, safe="")
    found = {}
    for head in (f"SNAPSHOT#snapshots/{quoted}/", f"SNAPSHOT#sessions/{quoted}/"):
        request: dict[str, Any] = {
            "TableName": store.table,
            "FilterExpression": "begins_with(pk, :head)",
            "ExpressionAttributeValues": {":head": {"S": head}},
            "ConsistentRead": True,
        }
        for item in store.dynamodb.scan(**request)["Items"]:
            found[ITEM + item["pk"]["S"].removeprefix("SNAPSHOT#")] = item
    return found


def retired(store: DynamoDBStore, session_id: str) -> tuple[set[str], set[str]]:
    """The session's snapshots, objects and items: (all, those retired: tagged, or given an expiry)."""
    objects = {key for key, _, _ in table_and_bucket(store, session_id).objects}
    s3, bucket = S3Snapshots(store.settings).s3, store.settings.bucket_name
    tagged = {key for key in objects if RETIRED_TAG in s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]}
    items = snapshot_items(store, session_id)
    return objects | set(items), tagged | {key for key, item in items.items() if "purge_at" in item}


@pytest.fixture(params=["bucket", "table"])
def kept(request: pytest.FixtureRequest) -> dict[str, int]:
    """Where snapshots are kept: the settings that keep them there."""
    return {"snapshot_item_bytes": 0 if request.param == "bucket" else 64 * 1024}


def in_their_place(store: DynamoDBStore, session_id: str, kept: dict[str, int]) -> None:
    """Every snapshot of the session is where ``kept`` keeps it (this case is the one it says it is)."""
    objects = {key for key, _, _ in table_and_bucket(store, session_id).objects}
    items = snapshot_items(store, session_id)
    if kept["snapshot_item_bytes"]:
        assert not objects and items, (objects, items)
    else:
        assert objects and not items, (objects, items)


def assert_only_unreferenced_are_tagged(store: DynamoDBStore, session_id: str) -> set[str]:
    objects, tagged = retired(store, session_id)
    referenced = pointed_at(store, session_id)
    assert referenced <= objects
    assert not tagged & referenced, "a snapshot a record points at is marked for deletion"
    assert objects - referenced == tagged, "a snapshot nothing points at is kept forever"
    return tagged


def test_the_embedded_bucket_has_the_lifecycle(store: DynamoDBStore) -> None:
    rules = S3Snapshots(store.settings).s3.get_bucket_lifecycle_configuration(Bucket=store.settings.bucket_name)
    assert [r["ID"] for r in rules["Rules"]] == [r["ID"] for r in BUCKET_LIFECYCLE_RULES]
    assert rules["Rules"][0]["Filter"] == {"Tag": RETIRED_TAG} and rules["Rules"][0]["Expiration"]["Days"] == 7


@pytest.mark.parametrize("factory", ["nested", "nested_preserving", "looks_then_deletes"])
def test_after_each_commit_exactly_the_snapshots_nothing_points_at_are_tagged(
    make_service: Callable[..., Service], session_id: str, store: DynamoDBStore, factory: str, kept: dict[str, int]
) -> None:
    started = make_service(factory, **kept).start_turn(session_id, "delete the prod-db record")
    assert started.status == "waiting"
    assert_only_unreferenced_are_tagged(store, session_id)
    done = make_service(factory, **kept).submit_approval(
        session_id, started.turn_id, started.interactions[0].request_id, APPROVE
    )
    assert done.status == "completed"
    assert assert_only_unreferenced_are_tagged(store, session_id)  # the waiting state at least
    # A second turn of the session (its script is spent: it fails) keeps the first one's final state,
    # which the session's conversation is.
    make_service(factory, **kept).start_turn(session_id, "delete the prod-db record")
    assert_only_unreferenced_are_tagged(store, session_id)
    in_their_place(store, session_id, kept)


def test_the_snapshots_of_a_run_whose_commit_was_refused_are_tagged(
    make_service: Callable[..., Service],
    session_id: str,
    store: DynamoDBStore,
    monkeypatch: pytest.MonkeyPatch,
    kept: dict[str, int],
) -> None:
    service = make_service("nested_preserving", **kept)

    def refused(commit: Any) -> None:
        raise StaleCommitError("another invocation moved the turn on")

    monkeypatch.setattr(service.store, "commit", refused)
    service.start_turn(session_id, "delete the prod-db record")
    objects, tagged = retired(store, session_id)
    assert objects and objects == tagged  # the root's snapshot and db_admin's save: nobody points at them
    in_their_place(store, session_id, kept)


def two_turns_preserving(context: AgentContext) -> Agent:
    """orchestrator -> db_admin (preserve_context=True, its own S3Session), scripted for two turns."""
    db_admin = Agent(
        name="db_admin",
        model=ScriptedModel(
            [
                calls(("w-1", "delete_record", {"name": "a-db"})),
                says("a-db is deleted"),
                calls(("w-2", "delete_record", {"name": "b-db"})),
                says("b-db is deleted"),
            ]
        ),
        tools=[delete_record],
        session=context.session,
    )
    return Agent(
        name="orchestrator",
        model=ScriptedModel(
            [
                calls(("o-1", "db_admin", {"prompt": "delete a-db"})),
                says("a-db is gone"),
                calls(("o-2", "db_admin", {"prompt": "delete b-db"})),
                says("b-db is gone"),
            ]
        ),
        tools=[db_admin.as_tool(preserve_context=True)],
    )


def test_the_sessions_own_agent_snapshots_are_kept_while_a_later_turn_replaces_them(
    make_service: Callable[..., Service], session_id: str, store: DynamoDBStore, kept: dict[str, int]
) -> None:
    first = make_service(two_turns_preserving, **kept).start_turn(session_id, "delete a-db")
    make_service(two_turns_preserving, **kept).submit_approval(
        session_id, first.turn_id, first.interactions[0].request_id, APPROVE
    )
    second = make_service(two_turns_preserving, **kept).start_turn(session_id, "delete b-db")
    assert second.status == "waiting"
    assert_only_unreferenced_are_tagged(store, session_id)  # db_admin's state after turn 1 is the session's
    assert make_service(two_turns_preserving, **kept).cancel(session_id, second.turn_id).status == "canceled"
    assert_only_unreferenced_are_tagged(store, session_id)
    in_their_place(store, session_id, kept)


def test_a_turn_begun_before_base_agent_snapshots_were_recorded_tags_none_of_its_agents_earlier_snapshots(
    store: DynamoDBStore,
) -> None:
    """Which of its agent snapshots the session points at is unknown for such a turn: keep them all.
    (A turn that knows the session had none tags the agent's earlier snapshot it replaced.)"""
    root = TurnRecord(
        session_id="s",
        turn_id="t",
        root_turn_id="t",
        agent="root",
        agent_path=["root"],
        status="running",
        snapshot_key="snapshots/s/t/1.json",
        agent_snapshots={"db_admin": "sessions/s/agents/db_admin/k1.json"},
        created_at=0,
        updated_at=0,
    )
    session = S3Session(S3Snapshots(store.settings), "s", {"db_admin": "sessions/s/agents/db_admin/k2.json"})
    session.written = ["sessions/s/agents/db_admin/k2.json"]
    assert root.base_agent_snapshots is None
    assert _no_longer_pointed_at(root, "snapshots/s/t/2.json", session) == ["snapshots/s/t/1.json"]
    known = root.model_copy(update={"base_agent_snapshots": {}})
    assert _no_longer_pointed_at(known, "snapshots/s/t/2.json", session) == [
        "snapshots/s/t/1.json",
        "sessions/s/agents/db_admin/k1.json",
    ]

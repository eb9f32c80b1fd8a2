"""The embedded AWS's lagging reads (resumable.local.lag): an index read, or a read without
``ConsistentRead``, may miss a new item, show an item's old version, or still show one that was
deleted, for a number of requests drawn under a seed; a consistent read never does."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from resumable.config import Settings
from resumable.local import lag
from resumable.local.lag import lagging
from resumable.store import DynamoDBStore
from resumable.store.resources import INBOX_INDEX

PK = "lag-session"


@pytest.fixture
def dynamodb(aws: Settings) -> Any:
    return DynamoDBStore(aws).dynamodb


def _put(dynamodb: Any, table: str, sk: str, note: str, indexed: bool = True) -> None:
    item = {"pk": {"S": PK}, "sk": {"S": sk}, "note": {"S": note}}
    if indexed:
        item |= {"gsi2pk": {"S": "LAGTEST"}, "gsi2sk": {"S": sk}}
    dynamodb.put_item(TableName=table, Item=item)


def _indexed(dynamodb: Any, table: str) -> dict[str, str]:
    """What the inbox index shows of the test's items: sort key -> note."""
    page = dynamodb.query(
        TableName=table,
        IndexName=INBOX_INDEX,
        KeyConditionExpression="gsi2pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "LAGTEST"}},
    )
    return {item["sk"]["S"]: item["note"]["S"] for item in page["Items"]}


def _got(dynamodb: Any, table: str, sk: str, consistent: bool) -> str | None:
    item = dynamodb.get_item(TableName=table, Key={"pk": {"S": PK}, "sk": {"S": sk}}, ConsistentRead=consistent).get(
        "Item"
    )
    return item["note"]["S"] if item else None


def _requests(dynamodb: Any, table: str, n: int) -> None:
    """``n`` requests that move the lag on (each is a request to the embedded AWS)."""
    for _ in range(n):
        dynamodb.describe_table(TableName=table)


def test_each_kind_of_staleness_shows_for_its_lag_and_a_consistent_read_never_lags(
    aws: Settings, dynamodb: Any
) -> None:
    table = aws.table_name
    with lagging(4, least=4):
        _put(dynamodb, table, "a", "first")
        # missing: a new item is not in the index yet, nor in a read without ConsistentRead
        assert _indexed(dynamodb, table) == {}
        assert _got(dynamodb, table, "a", consistent=False) is None
        assert _got(dynamodb, table, "a", consistent=True) == "first"
        _requests(dynamodb, table, 1)
        assert _indexed(dynamodb, table) == {"a": "first"}  # (four requests after the put)

        # an old version: an update shows late
        dynamodb.update_item(
            TableName=table,
            Key={"pk": {"S": PK}, "sk": {"S": "a"}},
            UpdateExpression="SET note = :n",
            ExpressionAttributeValues={":n": {"S": "second"}},
        )
        assert _indexed(dynamodb, table) == {"a": "first"}
        assert _got(dynamodb, table, "a", consistent=False) == "first"
        assert _got(dynamodb, table, "a", consistent=True) == "second"
        _requests(dynamodb, table, 1)
        assert _indexed(dynamodb, table) == {"a": "second"}

        # not yet removed: a deleted item, and one that left the index, still show
        _put(dynamodb, table, "b", "indexed")
        _requests(dynamodb, table, 4)
        assert _indexed(dynamodb, table) == {"a": "second", "b": "indexed"}
        dynamodb.delete_item(TableName=table, Key={"pk": {"S": PK}, "sk": {"S": "a"}})
        _put(dynamodb, table, "b", "out of the index", indexed=False)
        assert _indexed(dynamodb, table) == {"a": "second", "b": "indexed"}
        assert _got(dynamodb, table, "a", consistent=True) is None
        _requests(dynamodb, table, 2)
        assert _indexed(dynamodb, table) == {}
    _put(dynamodb, table, "c", "lag off")
    assert _indexed(dynamodb, table) == {"c": "lag off"}


def test_an_items_writes_show_in_order_and_a_refused_transaction_leaves_none(aws: Settings, dynamodb: Any) -> None:
    table = aws.table_name
    with lagging(30, seed=7):
        for n in range(12):
            _put(dynamodb, table, "a", f"v{n}")
        seen: list[str] = []
        for _ in range(60):
            note = _indexed(dynamodb, table).get("a")
            if note is not None and (not seen or seen[-1] != note):
                seen.append(note)
        assert seen == sorted(seen, key=lambda v: int(v[1:])) and seen[-1] == "v11", seen

    with lagging(3, least=3):  # (a write shows 3 requests after it, each of them one request after the one before)
        _put(dynamodb, table, "a", "before")
        refused = {
            "Put": {
                "TableName": table,
                "Item": {
                    "pk": {"S": PK},
                    "sk": {"S": "a"},
                    "note": {"S": "never"},
                    "gsi2pk": {"S": "LAGTEST"},
                    "gsi2sk": {"S": "a"},
                },
            }
        }
        check = {
            "ConditionCheck": {
                "TableName": table,
                "Key": {"pk": {"S": PK}, "sk": {"S": "nothing"}},
                "ConditionExpression": "attribute_exists(pk)",
            }
        }
        with pytest.raises(ClientError, match="TransactionCanceled"):
            dynamodb.transact_write_items(TransactItems=[refused, check])
        _put(dynamodb, table, "a", "after")
        shown = [_indexed(dynamodb, table).get("a") for _ in range(5)]
        assert "never" not in shown and shown[-1] == "after", shown


def _history(dynamodb: Any, table: str, seed: int) -> list[tuple[str, ...]]:
    """What the index showed after each of a few writes, under ``seed``."""
    shown = []
    with lagging(6, seed=seed):
        for n in range(8):
            _put(dynamodb, table, f"k{n % 3}", f"v{n}")
            shown.append(tuple(sorted(_indexed(dynamodb, table).values())))
    _requests(dynamodb, table, 10)
    for n in range(3):
        dynamodb.delete_item(TableName=table, Key={"pk": {"S": PK}, "sk": {"S": f"k{n}"}})
    return shown


def test_the_same_seed_lags_the_same_way_and_another_seed_another(aws: Settings, dynamodb: Any) -> None:
    table = aws.table_name
    first, again, other = (_history(dynamodb, table, seed) for seed in (3, 3, 4))
    assert first == again
    assert first != other


def test_the_lag_is_asked_for_in_the_environment_and_a_bad_setting_is_said_plainly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = (lag.LAG.most, lag.LAG.seed, lag.LAG.least)
    try:
        monkeypatch.setenv("RESUMABLE_INDEX_LAG", "2-9")
        monkeypatch.setenv("RESUMABLE_INDEX_LAG_SEED", "5")
        lag.configure_from_environment()
        assert (lag.LAG.least, lag.LAG.most, lag.LAG.seed) == (2, 9, 5)
        for bad in ("nine", "9-2", "-3"):
            monkeypatch.setenv("RESUMABLE_INDEX_LAG", bad)
            with pytest.raises(SystemExit, match="RESUMABLE_INDEX_LAG"):
                lag.configure_from_environment()
    finally:
        lag.configure(before[0], before[1], before[2])


def test_the_embedded_aws_started_again_in_a_process_wraps_moto_once(aws: Settings, dynamodb: Any) -> None:
    """Each embedded AWS started applies the patches; a second time changes nothing (a patch wrapping
    another's wrapper again ran each transaction's rollback, and the lag's undo, twice)."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.responses import DynamoHandler

    from resumable.local import moto_patches

    before = (DynamoDBBackend.transact_write_items, DynamoHandler.call_action, DynamoHandler.query)
    moto_patches.apply()
    assert (DynamoDBBackend.transact_write_items, DynamoHandler.call_action, DynamoHandler.query) == before
    with lagging(3, least=3):
        check = {
            "ConditionCheck": {
                "TableName": aws.table_name,
                "Key": {"pk": {"S": PK}, "sk": {"S": "nothing"}},
                "ConditionExpression": "attribute_exists(pk)",
            }
        }
        with pytest.raises(ClientError, match="TransactionCanceled"):
            dynamodb.transact_write_items(TransactItems=[check])

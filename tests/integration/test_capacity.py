"""The bill's meter counts DynamoDB's units as DynamoDB's rules do (item sizes, transactions twice,
index writes, reads by 4 KB, strongly or eventually consistent), and what the bill is made of adds
up to its total; the durable row's operations are those a durable function's execution records, and
docs/scale.md shows the row bench/results.json holds."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench.capacity import Meter, index_writes, item_size, value_size
from bench.cost import DURABLE, PRICES, dollars_per_million
from resumable.aws.clients import client
from resumable.config import Settings

ROOT = Path(__file__).resolve().parents[2]
SCALE = ROOT / "docs" / "scale.md"


def _item(sk: str, filler: int, **more: str) -> dict[str, Any]:
    """An item whose size is exactly ``filler`` bytes plus its key's (and ``more``'s)."""
    item = {"pk": {"S": "P"}, "sk": {"S": sk}, "f": {"S": "x" * (filler - 1)}}
    item.update({name: {"S": value} for name, value in more.items()})
    return item


def test_an_item_is_sized_as_dynamodb_sizes_it() -> None:
    assert item_size({"ab": {"S": "héllo"}}) == 2 + 6  # names and strings in UTF-8
    assert value_size({"N": "12345"}) == 4  # a byte a pair of significant digits, and one more
    assert value_size({"N": "1000.000"}) == 2  # leading and trailing zeros are not stored
    assert value_size({"B": "AAAA"}) == 3  # base64 in a request: its bytes
    assert value_size({"BOOL": True}) == value_size({"NULL": True}) == 1
    assert value_size({"L": [{"S": "ab"}, {"N": "1"}]}) == 3 + (2 + 1) + (2 + 1)
    assert value_size({"M": {"k": {"S": "ab"}}}) == 3 + 1 + 2 + 1


def test_an_index_write_follows_the_item_into_out_of_and_across_the_index() -> None:
    small = {"pk": {"S": "P"}, "sk": {"S": "S"}}
    indexed = {**small, "gsi2pk": {"S": "INBOX"}, "gsi2sk": {"S": "1"}}
    moved = {**indexed, "gsi2sk": {"S": "2"}}
    assert index_writes(None, small) == {}  # in no index
    assert index_writes(None, indexed) == {"gsi2": 1}  # a put there
    assert index_writes(indexed, moved) == {"gsi2": 2}  # a delete and a put
    assert index_writes(indexed, small) == {"gsi2": 1}  # a delete
    assert index_writes(indexed, {**indexed, "x": {"S": "y"}}) == {"gsi2": 1}  # an update in place
    assert index_writes(indexed, indexed) == {}  # nothing changed
    # A keys-only index holds the keys: written when the item enters or leaves it, whatever its size.
    keyed = {**small, "request_id": {"S": "r1"}, "f": {"S": "x" * 5000}}
    assert index_writes(None, keyed) == {"gsi5": 1}
    assert index_writes(keyed, {**keyed, "f": {"S": "y" * 5000}}) == {}
    assert index_writes(keyed, small) == {"gsi5": 1}


@pytest.fixture
def metered(aws: Settings) -> tuple[Meter, Any]:
    meter = Meter(aws)
    dynamodb = client("dynamodb", aws)
    meter.attach(dynamodb)
    return meter, dynamodb


def test_writes_cost_a_unit_a_kb_twice_in_a_transaction_and_again_in_each_index(
    metered: tuple[Meter, Any], aws: Settings
) -> None:
    meter, dynamodb = metered
    table = aws.table_name
    dynamodb.put_item(TableName=table, Item=_item("a", 1500))  # 2 KB, in no index
    assert meter.take()["write_units"] == 2
    dynamodb.transact_write_items(TransactItems=[{"Put": {"TableName": table, "Item": _item("b", 1500)}}])
    assert meter.take()["write_units"] == 4
    inboxed = _item("c", 1010, gsi2pk="INBOX", gsi2sk="1")  # over 1 KB with its key and index keys
    dynamodb.put_item(TableName=table, Item=inboxed)
    taken = meter.take()
    assert (taken["write_units"], taken["gsi2_write_units"]) == (2 + 2, 2)
    dynamodb.update_item(
        TableName=table,
        Key={"pk": {"S": "P"}, "sk": {"S": "c"}},
        UpdateExpression="REMOVE gsi2pk, gsi2sk",
    )
    assert meter.take()["write_units"] == 2 + 2  # the larger of before and after; out of the index
    dynamodb.transact_write_items(
        TransactItems=[
            {
                "ConditionCheck": {
                    "TableName": table,
                    "Key": {"pk": {"S": "P"}, "sk": {"S": "a"}},
                    "ConditionExpression": "attribute_exists(pk)",
                }
            }
        ]
    )
    assert meter.take()["write_units"] == 4  # a check is a transaction's item too, and writes no index


def test_a_write_refused_by_its_condition_is_counted_and_a_canceled_transaction_is_not(
    metered: tuple[Meter, Any], aws: Settings
) -> None:
    meter, dynamodb = metered
    dynamodb.put_item(TableName=aws.table_name, Item=_item("a", 3000))
    meter.take()
    with pytest.raises(dynamodb.exceptions.ConditionalCheckFailedException):
        dynamodb.put_item(TableName=aws.table_name, Item=_item("a", 10), ConditionExpression="attribute_not_exists(pk)")
    assert meter.take()["write_units"] == 3
    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": aws.table_name,
                        "Item": _item("a", 10),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
            ]
        )
    assert meter.take()["write_units"] == 0


def test_reads_cost_a_unit_a_4_kb_half_that_eventually_consistent_the_whole_item_though_projected(
    metered: tuple[Meter, Any], aws: Settings
) -> None:
    meter, dynamodb = metered
    table = aws.table_name
    dynamodb.put_item(TableName=table, Item=_item("big", 5000))
    for sk in ("k1", "k2", "k3"):
        dynamodb.put_item(TableName=table, Item=_item(sk, 1000))
    meter.take()
    key = {"pk": {"S": "P"}, "sk": {"S": "big"}}
    dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True)
    assert meter.take()["read_units"] == 2
    dynamodb.get_item(TableName=table, Key=key, ProjectionExpression="f")  # 5 KB read, eventually consistent
    assert meter.take()["read_units"] == 1
    dynamodb.query(
        TableName=table,
        KeyConditionExpression="pk = :p AND sk BETWEEN :a AND :c",
        ExpressionAttributeValues={":p": {"S": "P"}, ":a": {"S": "k1"}, ":c": {"S": "k3"}},
        ProjectionExpression="sk",
        ConsistentRead=True,
    )
    assert meter.take()["read_units"] == 1  # 3 KB read, summed before rounding up to 4 KB units
    dynamodb.query(
        TableName=table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "P"}},
        Select="COUNT",
    )
    assert meter.take()["read_units"] == 1  # 8 KB counted, eventually consistent
    missing = {"pk": {"S": "P"}, "sk": {"S": "none"}}
    dynamodb.batch_get_item(RequestItems={table: {"Keys": [key, missing], "ProjectionExpression": "pk"}})
    assert meter.take()["read_units"] == 1 + 0.5  # each key a read of its own; one that finds nothing the least
    dynamodb.transact_get_items(TransactItems=[{"Get": {"TableName": table, "Key": key}}])
    assert meter.take()["read_units"] == 4
    with pytest.raises(NotImplementedError, match="Scan"):
        dynamodb.scan(TableName=table)


def test_a_delete_leaves_each_index_and_a_condition_check_writes_none(
    metered: tuple[Meter, Any], aws: Settings
) -> None:
    meter, dynamodb = metered
    table = aws.table_name
    dynamodb.put_item(TableName=table, Item=_item("c", 100, gsi2pk="INBOX", gsi2sk="1", gsi4pk="UNSETTLED", gsi4sk="2"))
    meter.take()
    check = {
        "TableName": table,
        "Key": {"pk": {"S": "P"}, "sk": {"S": "c"}},
        "ConditionExpression": "attribute_exists(pk)",
    }
    dynamodb.transact_write_items(TransactItems=[{"ConditionCheck": check}])
    taken = meter.take()
    assert (taken["write_units"], taken["table_write_units"]) == (2, 2)
    dynamodb.delete_item(TableName=table, Key={"pk": {"S": "P"}, "sk": {"S": "c"}})
    taken = meter.take()
    assert (taken["table_write_units"], taken["gsi2_write_units"], taken["gsi4_write_units"]) == (1, 1, 1)


def test_events_are_billed_by_64_kb_and_s3_requests_by_class(aws: Settings) -> None:
    meter = Meter(aws)
    events, s3 = client("events", aws), client("s3", aws)
    meter.attach(events, s3)
    detail = '{"a": "' + "x" * 70_000 + '"}'
    entries = [{"Source": "bench", "DetailType": "t", "Detail": d} for d in (detail, "{}", "not JSON")]
    assert events.put_events(Entries=entries)["FailedEntryCount"] == 1
    taken = meter.take()
    assert (taken["events"], taken["put_events_calls"]) == (2 + 1, 1)  # the refused entry is not billed
    s3.put_object(Bucket=aws.bucket_name, Key="bench/k", Body=b"x" * 300)
    s3.get_object(Bucket=aws.bucket_name, Key="bench/k")
    s3.put_object_tagging(Bucket=aws.bucket_name, Key="bench/k", Tagging={"TagSet": [{"Key": "a", "Value": "b"}]})
    taken = meter.take()
    assert (taken["s3_put"], taken["s3_get"], taken["s3_objects"], taken["s3_object_bytes"]) == (2, 1, 1, 300)


def test_the_bill_by_service_adds_up_to_its_total() -> None:
    usage = {"write_units": 10, "read_units": 4, "s3_put": 2, "events": 3, "api_requests": 2, "lambda_requests": 2}
    bill = dollars_per_million(usage)
    assert bill["DynamoDB"] == pytest.approx(10 * PRICES["write_units"].dollars + 4 * PRICES["read_units"].dollars)
    assert bill["S3"] == pytest.approx(2 * 1000 * PRICES["s3_put"].dollars)
    assert bill["total"] == pytest.approx(sum(d for s, d in bill.items() if s != "total"))
    assert "Step Functions" not in bill


def test_the_bill_counts_every_step_of_a_turn_and_its_events_published(aws: Settings) -> None:
    from bench.cost import bill

    measured = bill(aws, turns=2)
    approval, plain = measured["usage"]["approval turn"], measured["usage"]["turn with no approval"]
    # start and approve: a snapshot put on pausing; read, put again and the old one tagged on resuming
    assert (approval["s3_put"], approval["s3_get"], approval["events"]) == (3, 1, 3)
    assert (approval["api_requests"], approval["lambda_requests"]) == (2, 2 + 3 / 100)
    assert (plain["s3_put"], plain.get("s3_get", 0), plain["events"], plain["api_requests"]) == (1, 0, 1, 1)
    assert approval["write_units"] > plain["write_units"] > 0
    # every write is put down to the item it wrote; an approval turn writes each of these kinds
    by_item = measured["approval_turn_write_units_by_item"]
    assert sum(by_item.values()) == approval["write_units"]
    assert {"turn", "interaction", "event", "session", "action", "audit"} <= set(by_item)
    # the plain row stores the turn's state as large as the snapshot the turns here wrote
    assert 0 < measured["snapshot_bytes"] < 4096
    # the durable row: the same turn started by StartTurn invoked directly (no API request), the durable
    # function invoked twice, and the operations its execution's history records, as docs/scale.md says
    durable = measured["usage"][DURABLE]
    assert (durable["api_requests"], durable["lambda_requests"]) == (1, 4 + 3 / 100)
    assert (durable["s3_put"], durable["s3_get"], durable["events"]) == (3, 1, 3)
    kinds = {"execution": 1, "context": 1, "callback": 1, "step": 1, "callback completed": 1}
    assert measured["durable_operations_by_kind"] == kinds
    assert durable["durable_operations"] == sum(kinds.values()) == _stated_durable_operations()


def _stated_durable_operations() -> int:
    """The durable operations a turn that docs/scale.md says the bill counted."""
    stated = re.search(r"\*\*(\d+) durable operations\*\* a turn", SCALE.read_text())
    assert stated, "docs/scale.md no longer says how many durable operations a turn takes"
    return int(stated.group(1))


def test_docs_scale_md_shows_the_durable_row_bench_results_hold() -> None:
    cost = json.loads((ROOT / "bench" / "results.json").read_text())["cost"]
    text = SCALE.read_text()
    header = re.search(r"^\| a million \|.*$", text, re.MULTILINE)
    row = re.search(r"^\| approval turns a durable function waits for .*$", text, re.MULTILINE)
    assert header and row, "docs/scale.md's bill has no durable row"
    shown = {
        service.strip(): float(cell.strip().strip("*"))
        for service, cell in zip(header.group(0).split("|")[2:-1], row.group(0).split("|")[2:-1], strict=True)
        if cell.strip()
    }
    assert shown == pytest.approx(cost["per_million"][DURABLE], abs=0.005)
    assert cost["usage"][DURABLE]["durable_operations"] == _stated_durable_operations()

"""The embedded AWS keeps DynamoDB's promise where resumable depends on it: a transaction that is
canceled writes nothing, not even to the table's stream (its rollback restores only what it names,
so this is checked here); and a client of this process, which reaches it without a socket, meets
what a client over the socket meets."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from resumable.config import Settings
from resumable.store import DynamoDBStore


def _item(pk: str, sk: str, **attributes: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}, **{name: {"S": value} for name, value in attributes.items()}}


def test_a_canceled_transaction_leaves_every_item_it_named_as_it_was(aws: Settings) -> None:
    dynamodb = DynamoDBStore(aws).dynamodb
    table = aws.table_name
    dynamodb.put_item(TableName=table, Item=_item("p", "kept", value="1"))
    dynamodb.put_item(TableName=table, Item=_item("p", "deleted", value="1"))
    dynamodb.put_item(TableName=table, Item=_item("q", "replaced", value="1"))
    before = dynamodb.scan(TableName=table)["Items"]
    writes: list[dict[str, Any]] = [
        {"Put": {"TableName": table, "Item": _item("p", "new", value="2")}},
        {"Put": {"TableName": table, "Item": _item("fresh", "new", value="2")}},
        {"Put": {"TableName": table, "Item": _item("q", "replaced", value="2")}},
        {
            "Update": {
                "TableName": table,
                "Key": _item("p", "kept"),
                "UpdateExpression": "SET #v = :v",
                "ExpressionAttributeNames": {"#v": "value"},
                "ExpressionAttributeValues": {":v": {"S": "2"}},
            }
        },
        {"Delete": {"TableName": table, "Key": _item("p", "deleted")}},
        {
            "ConditionCheck": {
                "TableName": table,
                "Key": _item("p", "absent"),
                "ConditionExpression": "attribute_exists(pk)",
            }
        },
    ]
    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(TransactItems=writes)  # type: ignore[arg-type]

    def key(item: dict[str, Any]) -> tuple[str, str]:
        return item["pk"]["S"], item["sk"]["S"]

    assert sorted(dynamodb.scan(TableName=table)["Items"], key=key) == sorted(before, key=key)
    assert (
        dynamodb.query(
            TableName=table, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "fresh"}}
        )["Items"]
        == []
    )
    # The publisher reads the stream: a canceled commit must not announce anything.
    assert _stream_records(aws) == [("INSERT", "p", "kept"), ("INSERT", "p", "deleted"), ("INSERT", "q", "replaced")]


def _stream_records(aws: Settings) -> list[tuple[str, str, str]]:
    """What the table's stream holds: (event, pk, sk) of every record, oldest first."""
    from resumable.aws.clients import client

    streams = client("dynamodbstreams", aws)
    arn = DynamoDBStore(aws).dynamodb.describe_table(TableName=aws.table_name)["Table"]["LatestStreamArn"]
    records: list[tuple[str, str, str]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        for record in streams.get_records(ShardIterator=iterator)["Records"]:
            keys = record["dynamodb"]["Keys"]
            records.append((record["eventName"], keys["pk"]["S"], keys["sk"]["S"]))
    return records


def test_a_request_from_this_process_is_applied_once_whichever_session_made_its_client(aws: Settings) -> None:
    """Clients of this process reach the embedded AWS without a socket; each request is applied once,
    from boto3's default session and from a session made since the embedded AWS started."""
    import boto3

    options: dict[str, Any] = {
        "region_name": aws.region,
        "endpoint_url": aws.endpoint_url,
        "aws_access_key_id": aws.access_key_id,
        "aws_secret_access_key": aws.secret_access_key,
    }
    clients = {
        "default": DynamoDBStore(aws).dynamodb,
        "new session": boto3.session.Session().client("dynamodb", **options),
    }
    for name, client in clients.items():
        client.update_item(
            TableName=aws.table_name,
            Key=_item("counter", name),
            UpdateExpression="ADD applied :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )
        item = client.get_item(TableName=aws.table_name, Key=_item("counter", name), ConsistentRead=True)["Item"]
        assert item["applied"] == {"N": "1"}, (
            f"a request from a client of the {name} was applied {item['applied']} times"
        )


def test_clients_of_this_process_do_not_need_the_servers_socket() -> None:
    """The server's socket is for other processes (the command, the tests' subprocesses): with it closed,
    a client of this process still writes and reads the table and the bucket."""
    import boto3

    from resumable.local.embedded_aws import _IN_PROCESS, _start_server, create_resources

    server, endpoint = _start_server()
    server.stop()  # the socket is closed; the app is still this process's
    try:
        settings = Settings(
            table_name="closed-socket",
            bucket_name="closed-socket",
            region="us-east-1",
            endpoint_url=endpoint,
            access_key_id="embedded",
            secret_access_key="embedded",
        )
        create_resources(settings)
        dynamodb = DynamoDBStore(settings).dynamodb
        dynamodb.put_item(TableName=settings.table_name, Item=_item("p", "s", value="1"))
        assert dynamodb.get_item(TableName=settings.table_name, Key=_item("p", "s"))["Item"]["value"] == {"S": "1"}
        s3 = boto3.client(
            "s3",
            region_name="us-east-1",
            endpoint_url=endpoint,
            aws_access_key_id="embedded",
            aws_secret_access_key="embedded",
        )
        s3.put_object(Bucket=settings.bucket_name, Key="k", Body=b"snapshot")
        assert s3.get_object(Bucket=settings.bucket_name, Key="k")["Body"].read() == b"snapshot"
    finally:
        _IN_PROCESS.forget(endpoint)


@pytest.mark.parametrize(
    ("expression", "refused"),
    [
        ("SET #a = :v, #b = :v SET #c = :v", 'The "SET" section can only be used once'),
        ("SET #a = :v, #b = :v, #c = :v, #a = :v", "overlap"),
        ("SET #a = :v REMOVE #b REMOVE #c", 'The "REMOVE" section can only be used once'),
        ("SET #a = :v,, #b = :v", "Invalid UpdateExpression"),
    ],
    ids=["set twice", "overlapping paths", "remove twice", "malformed"],
)
def test_an_update_expression_dynamodb_refuses_is_refused_every_time_it_is_sent(
    aws: Settings, expression: str, refused: str
) -> None:
    """The embedded AWS parses each distinct expression once and checks its clauses at its top: what
    DynamoDB refuses it still refuses, the second time as the first."""
    dynamodb = DynamoDBStore(aws).dynamodb
    dynamodb.put_item(TableName=aws.table_name, Item=_item("p", "s", a="1"))
    for _ in range(2):
        with pytest.raises(dynamodb.exceptions.ClientError, match=refused):
            dynamodb.update_item(
                TableName=aws.table_name,
                Key=_item("p", "s"),
                UpdateExpression=expression,
                ExpressionAttributeNames={"#a": "a", "#b": "b", "#c": "c"},
                ExpressionAttributeValues={":v": {"S": "2"}},
            )
    assert dynamodb.get_item(TableName=aws.table_name, Key=_item("p", "s"))["Item"] == _item("p", "s", a="1")


def test_a_condition_sent_again_with_other_values_is_judged_on_them(aws: Settings) -> None:
    """The embedded AWS parses each distinct condition (expression, names and values) once: the same
    expression with other values is another condition."""
    dynamodb = DynamoDBStore(aws).dynamodb
    dynamodb.put_item(TableName=aws.table_name, Item=_item("p", "s", a="1"))

    def update_if_a_is(value: str) -> None:
        dynamodb.update_item(
            TableName=aws.table_name,
            Key=_item("p", "s"),
            UpdateExpression="SET #b = :b",
            ConditionExpression="#a = :a",
            ExpressionAttributeNames={"#a": "a", "#b": "b"},
            ExpressionAttributeValues={":a": {"S": value}, ":b": {"S": value}},
        )

    update_if_a_is("1")
    with pytest.raises(dynamodb.exceptions.ConditionalCheckFailedException):
        update_if_a_is("2")
    update_if_a_is("1")
    assert dynamodb.get_item(TableName=aws.table_name, Key=_item("p", "s"))["Item"] == _item("p", "s", a="1", b="1")


def test_a_query_finds_its_partitions_items_in_order_a_page_at_a_time_in_the_table_and_in_an_index(
    aws: Settings,
) -> None:
    """The embedded AWS reads only the partition a Query asks of the table (and the items, unsorted, for
    an index): what it finds, in what order, page by page, is what DynamoDB finds."""
    dynamodb = DynamoDBStore(aws).dynamodb
    table = aws.table_name
    for n in range(30):  # three partitions, and an index partition across them
        item = _item(f"P{n % 3}", f"s{n:02d}", gsi2pk="INBOX", gsi2sk=f"{(n * 7) % 30:02d}")
        dynamodb.put_item(TableName=table, Item=item)

    def pages(**query: Any) -> list[str]:
        found, start = [], None
        while True:
            page = dynamodb.query(TableName=table, Limit=4, **query, **({"ExclusiveStartKey": start} if start else {}))
            found += [i["sk"]["S"] for i in page["Items"]]
            if "LastEvaluatedKey" not in page:
                return found
            start = page["LastEvaluatedKey"]

    in_p1 = [f"s{n:02d}" for n in range(30) if n % 3 == 1]
    partition = {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "P1"}}}
    assert pages(**partition) == in_p1
    assert pages(**partition, ScanIndexForward=False) == in_p1[::-1]
    index = {
        "IndexName": "gsi2",
        "KeyConditionExpression": "gsi2pk = :i",
        "ExpressionAttributeValues": {":i": {"S": "INBOX"}},
    }
    assert pages(**index) == [f"s{n:02d}" for n in sorted(range(30), key=lambda n: (n * 7) % 30)]
    assert pages(**partition | {"ExpressionAttributeValues": {":p": {"S": "none"}}}) == []
    assert len(dynamodb.scan(TableName=table)["Items"]) == 30


def test_a_long_poll_of_an_empty_queue_holds_no_other_request_up_and_a_message_sent_meanwhile_ends_it(
    aws: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As SQS's long polling: the wait holds up nobody (a DynamoDB write, the SendMessage), and what is
    sent during it is what it receives. (Waiting inside the request held every other call until it ran
    out, and the message arrived only after the poll had returned empty.)"""
    import threading

    from moto.sqs.models import Queue

    from resumable.aws.clients import client

    waiting = threading.Event()
    wait = Queue.wait_for_messages

    def seen_waiting(queue: Any, timeout: int) -> None:
        waiting.set()
        wait(queue, timeout)

    monkeypatch.setattr(Queue, "wait_for_messages", seen_waiting)
    sqs = client("sqs", aws)
    queue = sqs.create_queue(QueueName=f"long-poll-{aws.table_name}")["QueueUrl"]
    received: list[Any] = []
    poll = threading.Thread(
        target=lambda: received.extend(sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=10).get("Messages", []))
    )
    poll.start()
    waiting.wait()
    DynamoDBStore(aws).dynamodb.put_item(TableName=aws.table_name, Item=_item("p", "during the poll"))
    client("sqs", aws).send_message(QueueUrl=queue, MessageBody="wake up")
    poll.join()
    assert [m["Body"] for m in received] == ["wake up"]


def test_a_request_moto_fails_on_is_a_500_with_or_without_the_socket(aws: Settings) -> None:
    """An operation the emulator lacks fails as over its socket: an AWS error with status 500 (which
    botocore retries, then raises as ClientError), never a Python exception of moto's own; and every
    reply says its length."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError

    def dynamodb(endpoint: str) -> Any:
        return boto3.client(
            "dynamodb",
            region_name=aws.region,
            endpoint_url=endpoint,
            aws_access_key_id=aws.access_key_id,
            aws_secret_access_key=aws.secret_access_key,
            config=Config(retries={"mode": "standard", "max_attempts": 1}),
        )

    assert aws.endpoint_url is not None and "127.0.0.1" in aws.endpoint_url
    in_process, over_the_socket = (
        dynamodb(aws.endpoint_url),
        dynamodb(aws.endpoint_url.replace("127.0.0.1", "localhost")),
    )
    statuses = []
    for client in (in_process, over_the_socket):
        with pytest.raises(ClientError) as failed:
            client.describe_contributor_insights(TableName=aws.table_name)
        statuses.append(failed.value.response["ResponseMetadata"]["HTTPStatusCode"])
    assert statuses == [500, 500]
    reply = in_process.describe_table(TableName=aws.table_name)["ResponseMetadata"]
    assert int(reply["HTTPHeaders"]["content-length"]) > 0


def test_a_head_request_says_the_length_of_the_object_not_of_its_empty_reply(aws: Settings) -> None:
    from resumable.aws.clients import client

    s3 = client("s3", aws)
    s3.put_object(Bucket=aws.bucket_name, Key="head", Body=b"x" * 1234)
    assert s3.head_object(Bucket=aws.bucket_name, Key="head")["ContentLength"] == 1234


# -- AWS's hard limits, which the embedded AWS applies where moto does not: every test meets them -------


def test_a_transaction_over_4_mb_is_refused_as_dynamodb_refuses_it_and_writes_nothing(aws: Settings) -> None:
    from botocore.exceptions import ClientError

    dynamodb = DynamoDBStore(aws).dynamodb
    big = "x" * (300 * 1024)  # (each item under DynamoDB's 400 KB; fifteen of them over 4 MB)
    writes = [{"Put": {"TableName": aws.table_name, "Item": _item("limits", f"i{n}", value=big)}} for n in range(15)]
    with pytest.raises(ClientError, match="Transaction request cannot be larger than 4 MB") as refused:
        dynamodb.transact_write_items(TransactItems=writes)
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert (
        dynamodb.query(
            TableName=aws.table_name,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "limits"}},
        )["Items"]
        == []
    )
    dynamodb.transact_write_items(TransactItems=writes[:13])  # (just under: written)


def test_put_events_over_256_kb_is_refused_as_eventbridge_refuses_it(aws: Settings) -> None:
    from botocore.exceptions import ClientError

    from resumable.aws.clients import client

    events = client("events", aws)
    entry = {"Source": "resumable", "DetailType": "Turn Settled"}  # (on the default bus)
    with pytest.raises(ClientError, match="Total size of the entries in the request is over the limit"):
        events.put_events(Entries=[entry | {"Detail": '{"output": "' + "x" * (256 * 1024) + '"}'}])
    accepted = events.put_events(Entries=[entry | {"Detail": '{"output": "' + "x" * (200 * 1024) + '"}'}])
    assert accepted["FailedEntryCount"] == 0


def test_a_task_output_over_256_kb_is_refused_as_step_functions_refuses_it(aws: Settings) -> None:
    from botocore.exceptions import ClientError

    from resumable.aws.clients import client

    states = client("stepfunctions", aws)
    with pytest.raises(ClientError, match="Member must have length less than or equal to 262144") as refused:
        states.send_task_success(taskToken="any", output='"' + "x" * (256 * 1024) + '"')
    assert refused.value.response["Error"]["Code"] == "ValidationException"


def test_an_item_over_400_kb_and_a_transaction_of_101_items_are_refused_as_dynamodb_refuses_them(
    aws: Settings,
) -> None:
    """moto's own limits (the embedded AWS adds none here): every test meets them."""
    from botocore.exceptions import ClientError

    dynamodb = DynamoDBStore(aws).dynamodb
    with pytest.raises(ClientError, match="Item size has exceeded the maximum allowed size") as refused:
        dynamodb.put_item(TableName=aws.table_name, Item=_item("limits-item", "big", value="x" * (401 * 1024)))
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    writes = [{"Put": {"TableName": aws.table_name, "Item": _item("limits-count", f"i{n}")}} for n in range(101)]
    with pytest.raises(ClientError) as refused:
        dynamodb.transact_write_items(TransactItems=writes)
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "100" in refused.value.response["Error"]["Message"]
    dynamodb.transact_write_items(TransactItems=writes[:100])  # (at the limit: written)


@pytest.mark.parametrize("how", ["PutItem", "TransactWriteItems"])
def test_an_item_of_many_attributes_is_written_at_moto_s_limit_and_refused_a_byte_over_it(
    aws: Settings, how: str
) -> None:
    """An item is sized whole, once: the sum of its attribute names and values, as moto sums them
    one attribute at a time."""
    from botocore.exceptions import ClientError

    dynamodb = DynamoDBStore(aws).dynamodb

    def item(size: int) -> dict[str, Any]:
        keys = {"pk": {"S": f"limits-many-{how}"}, "sk": {"S": str(size)}}
        left = size - sum(len(name) + len(value["S"]) for name, value in keys.items())
        names = [f"a{n:02}" for n in range(50)]
        each, extra = divmod(left - sum(map(len, names)), len(names))
        return keys | {name: {"S": "x" * (each + (n < extra))} for n, name in enumerate(names)}

    def write(size: int) -> None:
        if how == "PutItem":
            dynamodb.put_item(TableName=aws.table_name, Item=item(size))
        else:
            dynamodb.transact_write_items(TransactItems=[{"Put": {"TableName": aws.table_name, "Item": item(size)}}])

    write(405_000)
    with pytest.raises(ClientError, match="Item size has exceeded the maximum allowed size"):
        write(405_001)


def test_an_sqs_message_over_1_mib_is_refused_as_sqs_refuses_it(aws: Settings) -> None:
    """SQS's limit is 1 MiB since 2025 (it was 256 KiB), as moto has it: the publisher's dead letters stay
    far under either."""
    from botocore.exceptions import ClientError

    from resumable.aws.clients import client

    sqs = client("sqs", aws)
    queue = sqs.create_queue(QueueName=f"limits-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    with pytest.raises(ClientError, match="must be shorter than 1048576"):
        sqs.send_message(QueueUrl=queue, MessageBody="x" * (1024 * 1024 + 1))
    sqs.send_message(QueueUrl=queue, MessageBody="x" * (1024 * 1024))


def test_each_signing_key_signs_with_its_own_private_key_and_a_mac_key_still_macs(aws: Settings) -> None:
    """moto's private keys that nothing reads are made once (resumable.local.moto_keys); a signing key's
    is its own: what one signs does not verify with another."""
    from resumable.aws.clients import client

    kms = client("kms", aws)
    signers = [kms.create_key(KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["KeyId"] for _ in range(2)]
    signed = {"Message": b"digest", "SigningAlgorithm": "RSASSA_PSS_SHA_256"}
    signature = kms.sign(KeyId=signers[0], **signed)["Signature"]
    assert kms.verify(KeyId=signers[0], Signature=signature, **signed)["SignatureValid"]
    assert not kms.verify(KeyId=signers[1], Signature=signature, **signed)["SignatureValid"]
    macs = [
        kms.create_key(KeySpec="HMAC_256", KeyUsage="GENERATE_VERIFY_MAC")["KeyMetadata"]["KeyId"] for _ in range(2)
    ]
    mac = kms.generate_mac(KeyId=macs[0], Message=b"link", MacAlgorithm="HMAC_SHA_256")["Mac"]
    assert mac != kms.generate_mac(KeyId=macs[1], Message=b"link", MacAlgorithm="HMAC_SHA_256")["Mac"]


def test_a_binary_attribute_comes_back_as_it_was_put_from_every_read_and_a_refused_write(aws: Settings) -> None:
    """The embedded AWS writes DynamoDB's item replies as JSON itself (moto_patches): a binary value,
    which moto holds as bytes, goes out as base64, as DynamoDB's wire has it."""
    dynamodb = DynamoDBStore(aws).dynamodb
    item = {"pk": {"S": "BINARY"}, "sk": {"S": "b"}, "body": {"B": b"\x00\xffsnapshot"}, "set": {"BS": [b"\x01"]}}
    dynamodb.put_item(TableName=aws.table_name, Item=item)
    key = {"pk": item["pk"], "sk": item["sk"]}
    assert dynamodb.get_item(TableName=aws.table_name, Key=key, ConsistentRead=True)["Item"] == item
    queried = dynamodb.query(
        TableName=aws.table_name, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": item["pk"]}
    )
    assert queried["Items"] == [item]
    with pytest.raises(dynamodb.exceptions.ConditionalCheckFailedException) as refused:
        dynamodb.put_item(
            TableName=aws.table_name,
            Item=item,
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    assert refused.value.response["Item"] == item  # type: ignore[typeddict-item]

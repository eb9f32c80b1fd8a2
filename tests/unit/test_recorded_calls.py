"""What the permission check's recorder makes of a call: the IAM action(s) and the resource, named by
the variable that configured it; and whose call it is (the function acting, resumable's code only)."""

from __future__ import annotations

import contextvars
import threading
from typing import Any

import boto3
from botocore.stub import Stubber

from resumable.aws.lambdas import Lambdas
from resumable.config import Settings
from resumable.local.permissions.calls import RECORDER, Call, acting_as, calls_of

ENV = {
    "RESUMABLE_TABLE": "turns",
    "RESUMABLE_BUCKET": "snaps",
    "EVENT_BUS_NAME": "bus",
    "DEAD_LETTER_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/dead",
    "CONTINUE_FUNCTION": "arn:aws:lambda:us-east-1:123456789012:function:stack-SubmitApproval",
}


def test_a_transaction_needs_one_action_per_item_and_names_each_table() -> None:
    items = [
        {"Put": {"TableName": "turns"}},
        {"Update": {"TableName": "turns"}},
        {"Delete": {"TableName": "other"}},
        {"ConditionCheck": {"TableName": "turns"}},
    ]
    assert calls_of("TransactWriteItems", "dynamodb", {"TransactItems": items}, ENV) == [
        ("dynamodb:PutItem", "dynamodb:table/${RESUMABLE_TABLE}"),
        ("dynamodb:UpdateItem", "dynamodb:table/${RESUMABLE_TABLE}"),
        ("dynamodb:DeleteItem", "dynamodb:table/other"),
        ("dynamodb:ConditionCheckItem", "dynamodb:table/${RESUMABLE_TABLE}"),
    ]
    assert calls_of("BatchGetItem", "dynamodb", {"RequestItems": {"turns": {}}}, ENV) == [
        ("dynamodb:BatchGetItem", "dynamodb:table/${RESUMABLE_TABLE}")
    ]
    assert calls_of("Query", "dynamodb", {"TableName": "turns", "IndexName": "gsi2"}, ENV) == [
        ("dynamodb:Query", "dynamodb:table/${RESUMABLE_TABLE}/index/gsi2")
    ]
    stream = "arn:aws:dynamodb:us-east-1:123456789012:table/turns/stream/2026"
    assert calls_of("GetShardIterator", "dynamodb", {"StreamArn": stream}, ENV) == [
        ("dynamodb:GetShardIterator", "dynamodb:table/${RESUMABLE_TABLE}/stream/*")
    ]
    assert calls_of("GetRecords", "dynamodb", {"ShardIterator": "x"}, ENV) == [
        ("dynamodb:GetRecords", "dynamodb:table/${RESUMABLE_TABLE}/stream/*")
    ]


def test_the_calls_whose_iam_action_is_not_their_operations_name() -> None:
    assert calls_of("HeadObject", "s3", {"Bucket": "snaps", "Key": "snapshots/s/t.json"}, ENV) == [
        ("s3:GetObject", "s3:${RESUMABLE_BUCKET}/snapshots/*")
    ]
    assert calls_of("GetObject", "s3", {"Bucket": "snaps", "Key": "k", "VersionId": "v"}, ENV) == [
        ("s3:GetObjectVersion", "s3:${RESUMABLE_BUCKET}/*")
    ]
    assert calls_of("PutObject", "s3", {"Bucket": "snaps", "Key": "a/b", "Tagging": "x=y"}, ENV) == [
        ("s3:PutObject", "s3:${RESUMABLE_BUCKET}/a/*"),
        ("s3:PutObjectTagging", "s3:${RESUMABLE_BUCKET}/a/*"),
    ]
    assert calls_of("ListObjectsV2", "s3", {"Bucket": "snaps"}, ENV) == [("s3:ListBucket", "s3:${RESUMABLE_BUCKET}")]
    assert calls_of("Invoke", "lambda", {"FunctionName": "stack-SubmitApproval"}, ENV) == [
        ("lambda:InvokeFunction", "lambda:function/${CONTINUE_FUNCTION}")
    ]
    entries = [{"EventBusName": "arn:aws:events:us-east-1:123456789012:event-bus/bus"}, {"EventBusName": "other"}]
    assert calls_of("PutEvents", "events", {"Entries": entries}, ENV) == [
        ("events:PutEvents", "events:event-bus/${EVENT_BUS_NAME}"),
        ("events:PutEvents", "events:event-bus/other"),
    ]
    assert calls_of("SendMessageBatch", "sqs", {"QueueUrl": ENV["DEAD_LETTER_QUEUE_URL"]}, ENV) == [
        ("sqs:SendMessage", "sqs:${DEAD_LETTER_QUEUE_URL}")
    ]
    assert calls_of("SendTaskSuccess", "states", {"taskToken": "t"}, ENV) == [("states:SendTaskSuccess", "*")]
    assert calls_of("Converse", "bedrock", {"modelId": "m"}, ENV) == [("bedrock:InvokeModel", "bedrock:model/m")]


def _invoke(lambdas: Lambdas) -> None:
    lambdas.invoke_async(ENV["CONTINUE_FUNCTION"], {"continueTurn": {}})


def test_a_call_is_the_acting_functions_on_its_thread_and_on_threads_given_its_context() -> None:
    RECORDER.install()
    client = boto3.client("lambda", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    stub = Stubber(client)
    for _ in range(4):
        stub.add_response("invoke", {"StatusCode": 202})
    lambdas = Lambdas(Settings(), client)
    expected = Call("UnitTestFunction", "lambda:InvokeFunction", "lambda:function/${CONTINUE_FUNCTION}")
    try:
        _calls_as_it_should(client, stub, lambdas, expected)
    finally:
        RECORDER.forget("UnitTestFunction")  # not a template function: tests/aws_calls.txt never lists it


def _calls_as_it_should(client: Any, stub: Stubber, lambdas: Lambdas, expected: Call) -> None:
    with stub:
        _invoke(lambdas)  # nobody acting: not a template function's call
        assert expected not in RECORDER.recorded()
        with acting_as("UnitTestFunction", ENV):
            bare = threading.Thread(target=_invoke, args=(lambdas,))
            bare.start(), bare.join()  # a thread started without the context: nobody's
            assert expected not in RECORDER.recorded()
            carried: Any = threading.Thread(target=contextvars.copy_context().run, args=(_invoke, lambdas))
            carried.start(), carried.join()
            assert expected in RECORDER.recorded()
            client.invoke(FunctionName="elsewhere")  # made by this test's code, not resumable's: not recorded
    assert Call("UnitTestFunction", "lambda:InvokeFunction", "lambda:function/elsewhere") not in RECORDER.recorded()

"""The yardstick of ``make bench`` section 4: a bare boto3 Lambda handler, no framework at all.

It does what a Lambda user writes by hand: imports boto3, makes its clients at init, and on each
request makes the AWS calls it is told to (``BARE_CALLS``: ``service.Operation`` names, comma
separated; the bench passes the calls a resumable handler's first request made) with the smallest
parameters each takes, on the same table and bucket (``RESUMABLE_TABLE``, ``RESUMABLE_BUCKET``;
boto3 reads ``AWS_ENDPOINT_URL`` for the embedded AWS), and returns. ``BARE_OBJECT`` is a key in the
bucket its GetObject reads (the bench puts it there first). Its items expire within the hour (the
table's TTL attribute, ``BARE_TTL_ATTRIBUTE``), and its objects are under ``bare/`` (the bench deletes
them): on a real table (``BENCH_AWS=1``) it leaves nothing behind.
"""

import json
import os
import time
import uuid

import boto3

TABLE = os.environ["RESUMABLE_TABLE"]
BUCKET = os.environ["RESUMABLE_BUCKET"]
OBJECT = os.environ.get("BARE_OBJECT", "bare/seed.json")
CALLS = [call.split(".") for call in os.environ["BARE_CALLS"].split(",") if call]
clients = {service: boto3.client(service) for service in sorted({service for service, _ in CALLS})}


TTL = os.environ.get("BARE_TTL_ATTRIBUTE", "purge_at")


def _key(pk: str) -> dict:
    return {"pk": {"S": pk}, "sk": {"S": "item"}}


def _expiring() -> dict:
    return {TTL: {"N": str(int(time.time()) + 3600)}}


def _call(service: str, operation: str, request: str) -> None:
    aws = clients[service]
    pk = f"bare#{request}"
    if (service, operation) == ("dynamodb", "GetItem"):
        aws.get_item(TableName=TABLE, Key=_key(pk))
    elif (service, operation) == ("dynamodb", "Query"):
        aws.query(TableName=TABLE, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": {"S": pk}})
    elif (service, operation) == ("dynamodb", "PutItem"):
        aws.put_item(TableName=TABLE, Item={**_key(pk), "n": {"N": "1"}, **_expiring()})
    elif (service, operation) == ("dynamodb", "UpdateItem"):
        aws.update_item(
            TableName=TABLE,
            Key=_key(pk),
            UpdateExpression=f"ADD n :one SET {TTL} = :ttl",
            ExpressionAttributeValues={":one": {"N": "1"}, ":ttl": _expiring()[TTL]},
        )
    elif (service, operation) == ("dynamodb", "DeleteItem"):
        aws.delete_item(TableName=TABLE, Key=_key(pk))
    elif (service, operation) == ("dynamodb", "TransactWriteItems"):
        aws.transact_write_items(
            TransactItems=[
                {"Update": {"TableName": TABLE, "Key": _key(pk), "UpdateExpression": f"ADD n :one SET {TTL} = :ttl",
                            "ExpressionAttributeValues": {":one": {"N": "1"}, ":ttl": _expiring()[TTL]}}},
                {"Put": {"TableName": TABLE, "Item": {**_key(f"{pk}#{uuid.uuid4().hex}"), **_expiring()}}},
            ]
        )  # fmt: skip
    elif (service, operation) == ("s3", "GetObject"):
        aws.get_object(Bucket=BUCKET, Key=OBJECT)["Body"].read()
    elif (service, operation) == ("s3", "PutObject"):
        aws.put_object(Bucket=BUCKET, Key=f"bare/{request}.json", Body=json.dumps({"request": request}).encode())
    elif (service, operation) == ("s3", "PutObjectTagging"):
        aws.put_object_tagging(Bucket=BUCKET, Key=OBJECT, Tagging={"TagSet": [{"Key": "bare", "Value": request[:8]}]})
    else:
        raise ValueError(f"the bare handler makes no {service}.{operation} call: add one to bench/bare_handler.py")


def lambda_handler(event, context):
    request = uuid.uuid4().hex
    for service, operation in CALLS:
        _call(service, operation, request)
    return {"statusCode": 200, "body": json.dumps({"calls": len(CALLS)})}

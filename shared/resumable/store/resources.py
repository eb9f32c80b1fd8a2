"""The table (with its stream and TTL) and bucket, defined once.

The embedded AWS creates exactly these, and a test checks that template.yaml declares the same key
schema, attributes, indexes and billing mode, and the same bucket lifecycle.
"""

from __future__ import annotations

from typing import Any

TABLE_KEY_SCHEMA: list[dict[str, Any]] = [
    {"AttributeName": "pk", "KeyType": "HASH"},
    {"AttributeName": "sk", "KeyType": "RANGE"},
]

TABLE_ATTRIBUTES: list[dict[str, Any]] = [
    {"AttributeName": "pk", "AttributeType": "S"},
    {"AttributeName": "sk", "AttributeType": "S"},
    {"AttributeName": "gsi1pk", "AttributeType": "S"},
    {"AttributeName": "gsi1sk", "AttributeType": "S"},
    {"AttributeName": "gsi2pk", "AttributeType": "S"},
    {"AttributeName": "gsi2sk", "AttributeType": "S"},
    {"AttributeName": "gsi3pk", "AttributeType": "S"},
    {"AttributeName": "gsi3sk", "AttributeType": "S"},
    {"AttributeName": "gsi4pk", "AttributeType": "S"},
    {"AttributeName": "gsi4sk", "AttributeType": "N"},
    {"AttributeName": "request_id", "AttributeType": "S"},
]

# GSI1 lists a session's interactions by status: gsi1pk = "SESSION#<id>#INTERACTIONS",
# gsi1sk = "<status>#<requestId>" (GET /sessions/{id}/interactions?status=requested).
INTERACTIONS_INDEX = "gsi1"
# The inbox: requested interactions only (sparse: the keys go when an interaction stops being
# requested), most urgent first. GSI2 holds every session's (gsi2pk = "INBOX"), for approvers; GSI3 a
# principal's own sessions' (gsi3pk = "PRINCIPAL#<principal>"). Both sort by "<expiresAt>#<session>#<request>".
INBOX_INDEX = "gsi2"
PRINCIPAL_INBOX_INDEX = "gsi3"
# The sweeper's: unsettled root turns only (sparse: the keys go when a turn settles), by when the
# sweeper should next look at each (gsi4sk, seconds since the epoch: "due"). gsi4pk is "UNSETTLED",
# or "STUCK" for a turn the sweeper gave up on (it tried as often as it may, and the turn did not move);
# "EXPIRING" for a settled root turn or a free session, by when its retention ends. Keys only: the
# sweeper reads what it found again from the table (the index lags it), so a write that leaves a record's
# place in the index as it was (a lease renewed, an action begun) writes nothing there.
UNSETTLED_INDEX = "gsi4"
# Finds an interaction by its request id alone (Slack, e-mail and the events name only that): keyed on
# the item's own request_id (no attribute more on the table's most written item, and the index was filled
# from the questions already there when it was made), one partition each. Keys only: the item's own key
# says where to read it, so the index is written when an interaction is first written and when it goes,
# never as it changes. (A decision link's item holds its question's request_id too: listed, and passed by.)
REQUESTS_INDEX = "gsi5"


def _index(name: str, projection: str = "ALL") -> dict[str, Any]:
    return {
        "IndexName": name,
        "KeySchema": [
            {"AttributeName": f"{name}pk", "KeyType": "HASH"},
            {"AttributeName": f"{name}sk", "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": projection},
    }


TABLE_INDEXES: list[dict[str, Any]] = [
    _index(INTERACTIONS_INDEX),
    _index(INBOX_INDEX),
    _index(PRINCIPAL_INBOX_INDEX),
    _index(UNSETTLED_INDEX, "KEYS_ONLY"),
    {
        "IndexName": REQUESTS_INDEX,
        "KeySchema": [{"AttributeName": "request_id", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
    },
]

BILLING_MODE = "PAY_PER_REQUEST"

# The stream feeds the publisher; it needs each new item only.
TABLE_STREAM = {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}

# DynamoDB's TTL deletes an item once this attribute (seconds since the epoch) has passed: published
# outbox items, and the records whose retention ended (service.retention). (Not ``expires_at``: that
# is when an interaction's question expires.)
TTL_ATTRIBUTE = "purge_at"

# The publisher's event source mapping lets in only new outbox items (Lambda's filter syntax), and
# those an operator asked to publish again (resumable admin republish) until the bus took them.
OUTBOX_FILTER: dict[str, Any] = {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"entity": {"S": ["event"]}}}}
REPUBLISH_FILTER: dict[str, Any] = {
    "eventName": ["MODIFY"],
    "dynamodb": {
        "NewImage": {
            "entity": {"S": ["event"]},
            "republish_at": {"N": [{"exists": True}]},
            "published_at": {"N": [{"exists": False}]},
        }
    },
}


def create_table_request(table_name: str) -> dict[str, Any]:
    """The CreateTable request for the table, as the template declares it (TTL is a separate call:
    ``ttl_request``)."""
    return {
        "TableName": table_name,
        "KeySchema": TABLE_KEY_SCHEMA,
        "AttributeDefinitions": TABLE_ATTRIBUTES,
        "GlobalSecondaryIndexes": TABLE_INDEXES,
        "BillingMode": BILLING_MODE,
        "StreamSpecification": TABLE_STREAM,
    }


def ttl_request(table_name: str) -> dict[str, Any]:
    """The UpdateTimeToLive request that turns on the table's TTL, as the template declares it."""
    return {"TableName": table_name, "TimeToLiveSpecification": {"Enabled": True, "AttributeName": TTL_ATTRIBUTE}}


# A snapshot that no turn points at any more (a turn's earlier state, an agent's intermediate save, the
# state of a run whose commit was refused) is retired: tagged so; the bucket's lifecycle deletes it
# once it is 7 days old (S3 counts from when the object was written, not from when it was tagged).
RETIRED_TAG = {"Key": "resumable-snapshot", "Value": "retired"}
RETIRED_DAYS = 7

BUCKET_LIFECYCLE_RULES: list[dict[str, Any]] = [
    {
        "ID": "ExpireRetiredSnapshots",
        "Status": "Enabled",
        "Filter": {"Tag": RETIRED_TAG},
        "Expiration": {"Days": RETIRED_DAYS},
    },
    {
        "ID": "AbortIncompleteUploads",
        "Status": "Enabled",
        "Filter": {"Prefix": ""},
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
    },
]

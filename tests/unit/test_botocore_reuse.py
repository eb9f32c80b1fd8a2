"""tests/botocore_reuse.py: clients of one service share their model, class and endpoint rules, and
keep their own events, endpoint and region."""

from __future__ import annotations

import json
from typing import Any

import botocore.session
from botocore.awsrequest import AWSResponse

from resumable.aws import clients
from resumable.config import Settings

SETTINGS = Settings(region="us-east-1", access_key_id="testing", secret_access_key="testing")


def _client(service: str, **settings: Any) -> Any:
    return clients.client(service, SETTINGS.model_copy(update=settings))


def _answering(body: dict[str, Any], heard: list[str]) -> Any:
    """A before-send handler: the reply AWS would give, ``body``, without sending; the URL it was for."""

    class Raw:
        def __init__(self, data: bytes) -> None:
            self.data = data

        def stream(self, **_: Any) -> Any:
            yield self.data

    def answer(request: Any, **_: Any) -> AWSResponse:
        heard.append(request.url)
        return AWSResponse(request.url, 200, {}, Raw(json.dumps(body).encode()))  # type: ignore[arg-type]

    return answer


def _of(session: Any) -> Any:
    return session.create_client("dynamodb", region_name="us-west-2", aws_access_key_id="a", aws_secret_access_key="b")


def test_clients_of_one_service_share_their_model_class_and_endpoint_rules() -> None:
    one, other = _client("dynamodb"), _client("dynamodb")
    assert one is not other
    assert type(one) is type(other)
    assert one.meta.service_model is other.meta.service_model
    assert one._ruleset_resolver._provider is other._ruleset_resolver._provider
    s3 = _client("s3")
    assert type(s3) is not type(one) and s3._ruleset_resolver._provider is not one._ruleset_resolver._provider


def test_each_client_keeps_its_own_events_endpoint_and_region() -> None:
    one = _client("dynamodb", endpoint_url="http://127.0.0.1:1")
    other = _client("dynamodb", region="eu-west-1")
    assert one.meta.events is not other.meta.events
    heard_one: list[str] = []
    heard_other: list[str] = []
    one.meta.events.register("before-send.dynamodb.GetItem", _answering({"Item": {"k": {"S": "one"}}}, heard_one))
    other.meta.events.register("before-send.dynamodb.GetItem", _answering({"Item": {"k": {"S": "other"}}}, heard_other))

    assert one.get_item(TableName="t", Key={"k": {"S": "x"}})["Item"] == {"k": {"S": "one"}}
    assert other.get_item(TableName="t", Key={"k": {"S": "x"}})["Item"] == {"k": {"S": "other"}}
    assert heard_one == ["http://127.0.0.1:1/"]
    assert heard_other == ["https://dynamodb.eu-west-1.amazonaws.com/"]


def test_a_session_of_its_own_gets_a_class_of_its_own_with_what_its_handlers_add() -> None:
    """Two sessions reading the same data share the model, not the class: each session's
    creating-client-class handlers shape its own."""
    first, second = botocore.session.get_session(), botocore.session.get_session()
    second.register_component("data_loader", first.get_component("data_loader"))

    def add(**event: Any) -> None:
        event["class_attributes"]["extra"] = "second's"

    second.register("creating-client-class.dynamodb", add)
    made, again, theirs = _of(first), _of(first), _of(second)
    assert type(made) is type(again) and made.meta.service_model is theirs.meta.service_model
    assert type(theirs) is not type(made) and theirs.extra == "second's" and not hasattr(made, "extra")
    assert made.meta.endpoint_url == "https://dynamodb.us-west-2.amazonaws.com"

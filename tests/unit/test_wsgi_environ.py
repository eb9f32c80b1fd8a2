"""The embedded AWS hands a request made in-process to moto as the WSGI environment its server would
make of it: built directly (``embedded_aws._environ``), it equals what werkzeug's ``EnvironBuilder``
builds, for the requests botocore makes of every service the project calls and for any other."""

from __future__ import annotations

import importlib
import io
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSPreparedRequest, HeadersDict
from botocore.config import Config
from hypothesis import example, given
from hypothesis import strategies as st

embedded_aws = importlib.import_module("resumable.local.embedded_aws")  # (the package's name is its function's)

ENDPOINT = "127.0.0.1:4566"


class _Sent(Exception):  # noqa: N818 (not an error: how a request is caught before it is sent)
    def __init__(self, request: AWSPreparedRequest) -> None:
        self.request = request


def _request_of(service: str, operation: str, **params: Any) -> AWSPreparedRequest:
    """The request botocore makes of one call, caught before it is sent."""
    client = boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=f"http://{ENDPOINT}",
        region_name="us-east-1",
        aws_access_key_id="embedded",
        aws_secret_access_key="embedded",
        config=Config(retries={"max_attempts": 1}),
    )

    def caught(request: AWSPreparedRequest, **_: Any) -> None:
        raise _Sent(request)

    client.meta.events.register("before-send", caught)
    with pytest.raises(_Sent) as sent:
        getattr(client, operation)(**params)
    return sent.value.request


def _sent(request: AWSPreparedRequest) -> tuple[str, str, list[tuple[str, Any]], bytes]:
    """The endpoint, target (path and query), headers and body the in-process hand-over reads of ``request``."""
    endpoint, _, path = request.url.partition("://")[2].partition("/")
    return (endpoint, f"/{path}", *embedded_aws._parts(request))


def _read(environ: dict[str, Any]) -> dict[str, Any]:
    return environ | {"wsgi.input": environ["wsgi.input"].read()}


CALLS = [
    ("dynamodb", "get_item", {"TableName": "t", "Key": {"pk": {"S": "a"}}}),
    ("dynamodb", "transact_write_items", {"TransactItems": [{"Put": {"TableName": "t", "Item": {"pk": {"S": "é"}}}}]}),
    ("s3", "put_object", {"Bucket": "b", "Key": "turns/a b+c%d~e/ü?x=1&y", "Body": b"{}"}),
    ("s3", "get_object", {"Bucket": "b", "Key": "turns/snapshot.json"}),
    ("s3", "put_object_tagging", {"Bucket": "b", "Key": "k", "Tagging": {"TagSet": [{"Key": "a", "Value": "b"}]}}),
    ("s3", "list_objects_v2", {"Bucket": "b", "Prefix": "audit/2026-12-07/", "ContinuationToken": "x/y=="}),
    ("s3", "delete_object", {"Bucket": "b", "Key": "k"}),
    ("sqs", "receive_message", {"QueueUrl": f"http://{ENDPOINT}/000000000000/q", "WaitTimeSeconds": 0}),
    ("events", "put_events", {"Entries": [{"Source": "s", "DetailType": "d", "Detail": "{}"}]}),
    ("kms", "generate_mac", {"KeyId": "k", "Message": b"m", "MacAlgorithm": "HMAC_SHA_256"}),
    ("stepfunctions", "send_task_success", {"taskToken": "t", "output": "{}"}),
    ("lambda", "invoke", {"FunctionName": "f", "InvocationType": "Event", "Payload": b"{}"}),
    ("secretsmanager", "get_secret_value", {"SecretId": "s"}),
]


@pytest.mark.parametrize(("service", "operation", "params"), CALLS, ids=[f"{s}.{o}" for s, o, _ in CALLS])
def test_each_services_requests_are_made_directly_and_as_the_builder_makes_them(
    service: str, operation: str, params: dict[str, Any]
) -> None:
    request = _request_of(service, operation, **params)
    endpoint, target, headers, body = _sent(request)
    assert embedded_aws._direct(target, headers, body), "made by the builder: the direct way is not tested"
    built = embedded_aws._built(request.method, endpoint, target, headers, body)
    assert _read(embedded_aws._made(request.method, endpoint, target, headers, body)) == _read(built)


def test_a_body_streamed_or_in_text_is_handed_on_whole_and_without_its_transfer_encoding() -> None:
    streamed = _request_of("s3", "put_object", Bucket="b", Key="k", Body=io.BytesIO(b"a snapshot"))
    assert embedded_aws._parts(streamed)[1] == b"a snapshot"
    chunked = HeadersDict({"Transfer-Encoding": "chunked", "X-A": b"b"})
    headers, body = embedded_aws._parts(AWSPreparedRequest("POST", f"http://{ENDPOINT}/", chunked, "é", False))
    assert (headers, body) == ([("X-A", "b")], "é".encode())


_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12) | st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12
)
_PATHS = st.lists(
    st.one_of(st.sampled_from(["%2F", "%20", "%E2%9C%93", "%", "?", "&", "=", "+", "/", "//", "~"]), _TEXT)
)
_NAMES = st.text(st.sampled_from("abcXYZ-_0"), min_size=1, max_size=8)
_TYPES = [
    "application/x-amz-json-1.0",
    "application/x-www-form-urlencoded; charset=utf-8",
    "multipart/form-data",
    "text/plain",
]


@example(method="POST", path="", headers=[], content_type=_TYPES[1], length="0", body=b"")  # (an empty form)
@example(method="POST", path="", headers=[], content_type=_TYPES[2], length=None, body="")
@example(
    method="GET", path="a?b=c", headers=[("X-Same", "1"), ("x_same", "2")], content_type=None, length=None, body=b""
)
@example(method="GET", path="//a/b", headers=[("X-A", "one\rline")], content_type=None, length=None, body=b"")
@example(method="GET", path="", headers=[("X-A", "one\nline")], content_type=None, length=None, body=b"")
@given(
    method=st.sampled_from(["GET", "PUT", "POST", "HEAD", "DELETE"]),
    path=_PATHS.map("".join),
    headers=st.lists(st.tuples(_NAMES, _TEXT), max_size=4),
    content_type=st.none() | st.sampled_from(_TYPES),
    length=st.none() | st.integers(0, 99).map(str),
    body=st.binary(max_size=20) | st.text(max_size=5),
)
def test_any_request_has_the_environment_the_builder_makes_of_it(
    method: str,
    path: str,
    headers: list[tuple[str, str]],
    content_type: str | None,
    length: str | None,
    body: bytes | str,
) -> None:
    sent = HeadersDict()
    for name, value in headers:
        sent[name] = value
    if content_type is not None:
        sent["Content-Type"] = content_type
    if length is not None:
        sent["Content-Length"] = length
    request = AWSPreparedRequest(method, f"http://{ENDPOINT}/{path}", sent, body, stream_output=False)
    endpoint, target, headers, read = _sent(request)
    try:
        built = embedded_aws._built(method, endpoint, target, headers, read)
    except ValueError:  # (werkzeug refuses a header value of more than one line: the direct way too)
        with pytest.raises(ValueError):
            embedded_aws._made(method, endpoint, target, headers, read)
        return
    if not embedded_aws._direct(target, headers, read):
        return  # (the builder's own environment: an empty form's boundary is made of the time)
    assert _read(embedded_aws._made(method, endpoint, target, headers, read)) == _read(built)

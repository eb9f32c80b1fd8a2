"""tests/embedded_signing.py: a request answered in-process by an embedded AWS has the Authorization
header botocore would write but for its signature; any other request is signed as botocore signs it."""

from __future__ import annotations

import datetime
import importlib
from typing import Any

import pytest
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests import embedded_signing

embedded_aws = importlib.import_module("resumable.local.embedded_aws")  # (the package's name is its function's)
HERE = "http://127.0.0.1:4566"
CREDENTIALS = Credentials("AKIDEMBEDDED", "secret", "token")


@pytest.fixture(autouse=True)
def _at_one_time(monkeypatch: pytest.MonkeyPatch) -> None:
    moment = datetime.datetime(2026, 12, 7, 20, 0, 0)
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: moment)


def _request(url: str) -> AWSRequest:
    headers = {"X-Amz-Target": "DynamoDB_20120810.GetItem", "Content-Type": "application/x-amz-json-1.0"}
    return AWSRequest("POST", url, headers=headers, data=b'{"TableName": "t"}')


def _signed(auth: Any, url: str, real: bool) -> dict[str, str]:
    request = _request(url)
    if real:
        embedded_signing._add_auth(auth, request)  # (botocore's own)
    else:
        auth.add_auth(request)
    return dict(request.headers.items())


@pytest.mark.parametrize(
    "auth", [SigV4Auth(CREDENTIALS, "dynamodb", "us-east-1"), S3SigV4Auth(CREDENTIALS, "s3", "eu-west-1")]
)
def test_a_request_answered_here_has_botocores_header_but_for_the_signature(
    auth: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(embedded_aws._IN_PROCESS.apps, HERE, object())
    written, real = _signed(auth, f"{HERE}/", real=False), _signed(auth, f"{HERE}/", real=True)
    credential, signed_headers, signature = written.pop("Authorization").split(", ")
    assert signature == f"Signature={embedded_signing.UNCOMPUTED}"
    assert real.pop("Authorization").split(", ")[:2] == [credential, signed_headers]
    assert written == real  # (the date, the token, the payload's hash for S3)


def test_any_other_request_is_signed_as_botocore_signs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    auth = SigV4Auth(CREDENTIALS, "execute-api", "us-east-1")  # (the local API checks SigV4 as API Gateway does)
    monkeypatch.setitem(embedded_aws._IN_PROCESS.apps, HERE, object())
    for elsewhere in ("http://127.0.0.1:4567/", "https://dynamodb.us-east-1.amazonaws.com/"):
        assert _signed(auth, elsewhere, real=False) == _signed(auth, elsewhere, real=True)
    assert embedded_signing.UNCOMPUTED not in _signed(auth, "http://127.0.0.1:4567/", real=False)["Authorization"]


def test_a_presigned_url_to_an_endpoint_answered_here_is_signed_as_botocore_signs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(embedded_aws._IN_PROCESS.apps, HERE, object())
    auth = S3SigV4QueryAuth(CREDENTIALS, "s3", "us-east-1", expires=60)  # (its signature goes in the URL)
    written, real = _request(f"{HERE}/bucket/key"), _request(f"{HERE}/bucket/key")
    auth.add_auth(written)
    embedded_signing._add_auth(auth, real)
    assert written.url == real.url and "X-Amz-Signature=" in written.url
    assert embedded_signing.UNCOMPUTED not in written.url

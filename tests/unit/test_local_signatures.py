"""The local API checks SigV4 signatures as API Gateway does: against the local credentials, the
whole request signed (method, path, query, signed headers, body), within 15 minutes."""

from __future__ import annotations

import hashlib
import time

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from resumable.local.authorizers import LocalCredentials, RefusedError, verify_sigv4

HOST = "127.0.0.1:3000"
CREDENTIALS = LocalCredentials.generate({"alice": "arn:aws:iam::000000000000:user/alice"})
ALICE = CREDENTIALS.keys["alice"]


def signed(secret: str = ALICE.secret_access_key, body: bytes = b'{"prompt": "hi"}') -> dict[str, str]:
    request = AWSRequest(
        method="POST",
        url=f"http://{HOST}/sessions/s/turns?x=1",
        data=body,
        headers={"content-type": "application/json"},
    )
    SigV4Auth(Credentials(ALICE.access_key_id, secret), "execute-api", "us-east-1").add_auth(request)
    return {name.lower(): value for name, value in request.headers.items()} | {"host": HOST}


def verify(headers: dict[str, str], body: bytes = b'{"prompt": "hi"}', target: str = "/sessions/s/turns?x=1", **kw):  # type: ignore[no-untyped-def]
    return verify_sigv4(CREDENTIALS, "POST", target, headers, body, **kw)


def test_a_good_signature_is_its_key_principal() -> None:
    assert verify(signed()).principal == "arn:aws:iam::000000000000:user/alice"


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"secret": "not-the-secret"}, "signature we calculated does not match"),
        ({"body": b'{"prompt": "rm -rf"}'}, "signature we calculated does not match"),
        ({"target": "/sessions/other/turns?x=1"}, "signature we calculated does not match"),
        ({"target": "/sessions/s/turns?x=2"}, "signature we calculated does not match"),
    ],
)
def test_a_signature_for_anything_else_is_refused(change: dict[str, object], says: str) -> None:
    headers = signed(secret=str(change.get("secret", ALICE.secret_access_key)))
    body = change.get("body", b'{"prompt": "hi"}')
    target = change.get("target", "/sessions/s/turns?x=1")
    with pytest.raises(RefusedError, match=says) as refused:
        verify(headers, body=body, target=target)  # type: ignore[arg-type]
    assert refused.value.status == 403


def test_an_unknown_key_a_stale_signature_and_a_malformed_header_are_refused() -> None:
    headers = signed()
    unknown = headers | {
        "authorization": headers["authorization"].replace(ALICE.access_key_id, "AKIAUNKNOWN0000000000")
    }
    with pytest.raises(RefusedError, match="security token included in the request is invalid"):
        verify(unknown)
    with pytest.raises(RefusedError, match="Signature expired"):
        verify(headers, now=time.time() + 16 * 60)
    with pytest.raises(RefusedError, match="requires 'Credential'"):
        verify(headers | {"authorization": "AWS4-HMAC-SHA256 Signature=x"})


def test_the_credentials_file_is_an_aws_profile_per_principal(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import boto3

    path = tmp_path / "credentials"
    CREDENTIALS.write(path)
    assert LocalCredentials.read(path) == CREDENTIALS
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(path))
    found = boto3.Session(profile_name="alice").get_credentials()
    assert found is not None and found.access_key == ALICE.access_key_id


def test_the_body_is_signed_whatever_x_amz_content_sha256_claims() -> None:
    """botocore takes the header's word for the body's hash; the check must hash what was sent."""
    for claimed in ("UNSIGNED-PAYLOAD", hashlib.sha256(b'{"prompt": "hi"}').hexdigest()):
        request = AWSRequest(
            method="POST",
            url=f"http://{HOST}/sessions/s/turns?x=1",
            data=b'{"prompt": "hi"}',
            headers={"x-amz-content-sha256": claimed},
        )
        SigV4Auth(Credentials(ALICE.access_key_id, ALICE.secret_access_key), "execute-api", "us-east-1").add_auth(
            request
        )
        headers = {name.lower(): value for name, value in request.headers.items()} | {"host": HOST}
        with pytest.raises(RefusedError, match="x-amz-content-sha256"):
            verify(headers, body=b'{"prompt": "rm -rf"}')


def test_a_signature_for_another_service_is_refused() -> None:
    request = AWSRequest(method="POST", url=f"http://{HOST}/sessions/s/turns?x=1", data=b'{"prompt": "hi"}')
    SigV4Auth(Credentials(ALICE.access_key_id, ALICE.secret_access_key), "s3", "us-east-1").add_auth(request)
    headers = {name.lower(): value for name, value in request.headers.items()} | {"host": HOST}
    with pytest.raises(RefusedError, match="scoped to correct service"):
        verify(headers)

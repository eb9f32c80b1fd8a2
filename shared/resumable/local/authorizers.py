"""API Gateway's authorizers, stood in for on the local API: what a signature or a sign-in token means
on AWS, it means here.

- IAM (the default): a SigV4-signed request is checked against the local credentials (access keys
  mapped to principal ARNs, ``LocalCredentials``): an unknown key, a signature that does not match or
  one more than 15 minutes old gets API Gateway's 403, and a good one makes its key's principal the
  caller. An unsigned request is the local default principal (curl convenience), unless the server
  refuses unsigned requests as AWS does.
- JWT: a bearer token must be signed by the issuer's keys (its JWKS, found through its discovery
  document), be for one of the audiences (``aud``, or ``client_id``) and be within its lifetime, or the
  answer is API Gateway's 401; its claims reach the handler as ``requestContext.authorizer.jwt``.
"""

from __future__ import annotations

import calendar
import configparser
import hashlib
import hmac
import json
import os
import re
import secrets
import string
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SIGNATURE_WINDOW_SECONDS = 15 * 60
LOCAL_ACCOUNT = "000000000000"


class RefusedError(Exception):
    """API Gateway refused the request before any function ran: ``status`` and its ``{"message"}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Key:
    access_key_id: str
    secret_access_key: str
    principal: str


@dataclass(frozen=True)
class LocalCredentials:
    """Access keys and the principals they sign as, kept as an AWS shared credentials file (one profile
    per principal, with a ``principal_arn`` line boto3 ignores) so each is usable as ``AWS_PROFILE``."""

    keys: dict[str, Key] = field(default_factory=dict)

    @classmethod
    def generate(cls, principals: dict[str, str]) -> LocalCredentials:
        """New random keys for ``principals`` (profile name -> principal ARN)."""
        alphabet = string.ascii_uppercase + string.digits
        keys = {}
        for profile, principal in principals.items():
            key = "AKIALOCAL" + "".join(secrets.choice(alphabet) for _ in range(11))
            keys[profile] = Key(key, secrets.token_urlsafe(30), principal)
        return cls(keys)

    @classmethod
    def read(cls, path: Path) -> LocalCredentials:
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(path)
        return cls(
            {
                profile: Key(
                    parser[profile]["aws_access_key_id"],
                    parser[profile]["aws_secret_access_key"],
                    parser[profile]["principal_arn"],
                )
                for profile in parser.sections()
                if "principal_arn" in parser[profile]
            }
        )

    def write(self, path: Path) -> None:
        lines = [
            "# The local API's credentials (make run writes them once and reuses them): each profile signs as its",
            "# principal_arn. Use one with AWS_SHARED_CREDENTIALS_FILE=<this file> AWS_PROFILE=<profile>.",
        ]
        for profile, key in self.keys.items():
            lines += [
                "",
                f"[{profile}]",
                f"aws_access_key_id = {key.access_key_id}",
                f"aws_secret_access_key = {key.secret_access_key}",
                f"principal_arn = {key.principal}",
                "region = us-east-1",
            ]
        path.parent.mkdir(parents=True, exist_ok=True)
        # Readable by its owner only from the start (mkstemp makes 0600), and in place at once: a
        # second make run beside this one reads the old file or the new one, never half of one.
        descriptor, written = tempfile.mkstemp(dir=path.parent, prefix=".credentials-")
        with os.fdopen(descriptor, "w") as file:
            file.write("\n".join(lines) + "\n")
        os.replace(written, path)

    def by_access_key(self, access_key_id: str) -> Key | None:
        return next((k for k in self.keys.values() if hmac.compare_digest(k.access_key_id, access_key_id)), None)


_AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256\s+Credential=(?P<key>[^/,\s]+)/(?P<date>\d{8})/(?P<region>[^/,\s]+)/(?P<service>[^/,\s]+)"
    r"/aws4_request,\s*SignedHeaders=(?P<signed>[a-z0-9;_.-]+),\s*Signature=(?P<signature>[0-9a-f]{64})\s*$"
)


def iam_identity(principal: str, access_key: str = "LOCAL") -> dict[str, Any]:
    """``requestContext.authorizer`` for an IAM caller, as API Gateway fills it in."""
    return {
        "iam": {
            "accessKey": access_key,
            "accountId": LOCAL_ACCOUNT,
            "callerId": access_key,
            "principalOrgId": None,
            "userArn": principal,
            "userId": access_key,
            "cognitoIdentity": None,
        }
    }


def verify_sigv4(
    credentials: LocalCredentials,
    method: str,
    target: str,
    headers: dict[str, str],
    body: bytes,
    now: float | None = None,
) -> Key:
    """The key that signed this request (``target`` is the path and query as sent), or ``RefusedError``
    with API Gateway's 403."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    lowered = {name.lower(): value for name, value in headers.items()}
    match = _AUTHORIZATION.match(lowered.get("authorization", ""))
    if match is None:
        raise RefusedError(403, "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' (SigV4).")
    key = credentials.by_access_key(match["key"])
    if key is None:
        raise RefusedError(403, "The security token included in the request is invalid.")
    stamp = lowered.get("x-amz-date", "")
    try:
        signed_at = calendar.timegm(time.strptime(stamp, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        raise RefusedError(403, "Authorization requires an X-Amz-Date header (yyyyMMddTHHmmssZ).") from None
    now = time.time() if now is None else now
    if abs(now - signed_at) > SIGNATURE_WINDOW_SECONDS or not stamp.startswith(match["date"]):
        raise RefusedError(403, f"Signature expired: {stamp} is not within 15 minutes of the server's time.")
    if match["service"] != "execute-api":
        raise RefusedError(
            403, f"Credential should be scoped to correct service: 'execute-api', not {match['service']!r}."
        )
    declared = lowered.get("x-amz-content-sha256")
    if declared is not None and declared != hashlib.sha256(body).hexdigest():
        # botocore would take the header's word for the body; API Gateway signs what was sent.
        raise RefusedError(403, "The provided 'x-amz-content-sha256' header does not match what was computed.")
    signed = match["signed"].split(";")
    if "host" not in signed or any(name not in lowered for name in signed):
        raise RefusedError(403, "The request signature names headers the request does not carry, or not 'host'.")
    request = AWSRequest(
        method=method, url=f"http://{lowered['host']}{target}", data=body, headers={n: lowered[n] for n in signed}
    )
    request.context["timestamp"] = stamp
    signer = SigV4Auth(Credentials(key.access_key_id, key.secret_access_key), match["service"], match["region"])
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    if not hmac.compare_digest(expected, match["signature"]):
        raise RefusedError(
            403,
            "The request signature we calculated does not match the signature you provided. Check your AWS "
            "Secret Access Key and signing method.",
        )
    return key


@dataclass
class JwtVerifier:
    """API Gateway's JWT authorizer for ``issuer`` and ``audiences``."""

    issuer: str
    audiences: tuple[str, ...]
    _keys: Any = None

    def claims(self, authorization: str | None) -> dict[str, Any]:
        import jwt

        token = (authorization or "").strip()
        if token.lower().startswith("bearer "):
            token = token[7:].strip()
        if not token:
            raise RefusedError(401, "Unauthorized")
        try:
            if self._keys is None:
                discovery_url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
                with urllib.request.urlopen(discovery_url, timeout=10) as reply:
                    discovery = json.load(reply)
                self._keys = jwt.PyJWKClient(discovery["jwks_uri"], cache_keys=True, timeout=10)
            key = self._keys.get_signing_key_from_jwt(token)
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=["RS256"],
                issuer=self.issuer,
                options={"verify_aud": False, "require": ["exp", "iss", "sub"]},
            )
        except Exception:  # a bad token, or an issuer that cannot be read: API Gateway answers 401 for both
            raise RefusedError(401, "Unauthorized") from None
        audiences = claims.get("aud", claims.get("client_id"))
        audiences = [audiences] if isinstance(audiences, str) else audiences
        if not isinstance(audiences, list) or not {a for a in audiences if isinstance(a, str)} & set(self.audiences):
            raise RefusedError(401, "Unauthorized")
        return claims


def jwt_identity(claims: dict[str, Any]) -> dict[str, Any]:
    """``requestContext.authorizer`` for a JWT caller: API Gateway hands every claim on as a string,
    an array as its values in brackets, ``[approvers admins]``."""

    def shown(value: Any) -> str:
        if isinstance(value, list):
            return "[" + " ".join(str(v) for v in value) + "]"
        return value if isinstance(value, str) else json.dumps(value)

    scope = claims.get("scope")
    return {
        "jwt": {
            "claims": {name: shown(value) for name, value in claims.items()},
            "scopes": scope.split() if isinstance(scope, str) else None,
        }
    }

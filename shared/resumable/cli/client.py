"""The HTTP API, as the ``resumable`` command calls it: signed with SigV4 from the standard AWS
credential chain for an IAM API, a bearer token for a JWT API, or unsigned (the local run's default
principal)."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

LOCAL_URL = "http://127.0.0.1:3000"
_TIMEOUT_SECONDS = 60


def part(value: str) -> str:
    """One path segment, percent-encoded."""
    return quote(value, safe="")


@dataclass
class Reply:
    status: int
    body: Any


class UnreachableError(Exception):
    """The API could not be reached (nothing was done that the caller can know of)."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is answered as it came, never followed: the request's signature or token would go
    wherever it points (another host, or plain http)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects())


def _open(request: urllib.request.Request, timeout: float) -> Any:
    return _OPENER.open(request, timeout=timeout)


@dataclass
class Api:
    url: str
    token: str | None = field(default=None, repr=False)
    sign: bool = False
    region: str | None = None

    def call(self, method: str, path: str, body: Any = None) -> Reply:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"content-type": "application/json", "accept": "application/json", "x-resumable-via": "cli"}
        target = self.url.rstrip("/") + path
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        elif self.sign:
            headers |= self._signature(method, target, data, headers)
        request = urllib.request.Request(target, data=data, method=method, headers=headers)
        try:
            with _open(request, timeout=_TIMEOUT_SECONDS) as reply:
                return Reply(reply.status, _json(reply.read()))
        except urllib.error.HTTPError as error:
            return Reply(error.code, _json(error.read()))
        except (urllib.error.URLError, OSError) as error:
            raise UnreachableError(f"could not reach {self.url}: {getattr(error, 'reason', error)}") from error

    def _signature(self, method: str, url: str, data: bytes | None, headers: dict[str, str]) -> dict[str, str]:
        """SigV4 headers for execute-api, from the standard credential chain (env, profile, role)."""
        # (botocore's session, whose credential chain boto3's wraps, without boto3's imports: 50 ms of each command)
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.exceptions import BotoCoreError
        from botocore.session import Session

        try:
            session = Session()
            credentials = session.get_credentials()
        except BotoCoreError as error:  # a profile that does not exist, a credentials file it cannot read
            raise ValueError(f"cannot sign: {error}") from None
        if credentials is None:
            raise UnreachableError(
                "no AWS credentials found to sign with (set AWS_PROFILE or AWS_ACCESS_KEY_ID, or, for a JWT API, "
                "RESUMABLE_TOKEN or --token-stdin); nothing was sent"
            )
        # (an API Gateway URL's own Region first: a signature for another is refused)
        region = self.region or _region_of(url) or session.get_config_variable("region") or "us-east-1"
        request = AWSRequest(method=method, url=url, data=data, headers=dict(headers))
        SigV4Auth(credentials.get_frozen_credentials(), "execute-api", region).add_auth(request)
        return {k: v for k, v in request.headers.items() if k.lower() not in headers}


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return {"code": "not_json", "message": raw[:500].decode(errors="replace")}


def _region_of(url: str) -> str | None:
    """The region in an API Gateway URL (``https://abc.execute-api.eu-west-1.amazonaws.com``)."""
    host = urlsplit(url).hostname or ""
    parts = host.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "execute-api" else None


def stack_url(stack: str, region: str | None) -> str:
    """The ``ApiUrl`` output of the CloudFormation stack ``stack``."""
    import boto3

    try:
        described = boto3.client("cloudformation", region_name=region).describe_stacks(StackName=stack)
    except Exception as error:
        hint = " (give --region, or set AWS_DEFAULT_REGION)" if "region" in str(error).lower() else ""
        raise UnreachableError(f"could not read the outputs of stack {stack!r}: {error}{hint}") from error
    for output in described["Stacks"][0].get("Outputs", []):
        if output["OutputKey"] == "ApiUrl":
            return str(output["OutputValue"])
    raise UnreachableError(f"stack {stack!r} has no ApiUrl output: is it a resumable stack?")


def default_url() -> str:
    """``RESUMABLE_URL``; else the URL of the local run that serves (``make run`` notes where; the newest
    where several do, said on stderr); else the local run's default address."""
    if os.environ.get("RESUMABLE_URL"):
        return os.environ["RESUMABLE_URL"]
    from resumable.local_runs import serving  # (only here: a command given its URL never reads the notes)

    runs = serving()
    if len(runs) > 1:
        others = ", ".join(run.url for run in runs[1:])
        print(
            f"resumable: {len(runs)} local runs serve; calling the newest, {runs[0].url} (not {others}): set "
            "RESUMABLE_URL or give --url to call another",
            file=sys.stderr,
        )
    return runs[0].url if runs else LOCAL_URL

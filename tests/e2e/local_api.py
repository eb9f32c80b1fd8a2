"""Calling the local API (`make run`'s server) over real HTTP, as a principal of one's choosing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from resumable.api.app import forget
from resumable.local.authorizers import JwtVerifier
from resumable.local.issuer import GROUPS_CLAIM, LocalIssuer
from resumable.local.server import PRINCIPAL_HEADER, make_server
from tests.patience import HANG_SECONDS

MALLORY = "arn:aws:iam::000000000000:user/mallory"
APPROVER = "arn:aws:iam::000000000000:user/approver-ann"


def call(
    url: str, method: str, path: str, body: Any = None, principal: str | None = None, token: str | None = None
) -> tuple[int, Any]:
    """The status and JSON body of one request (as ``principal``, or with a sign-in ``token``)."""
    headers = {"content-type": "application/json"} | ({PRINCIPAL_HEADER: principal} if principal else {})
    headers |= {"authorization": f"Bearer {token}"} if token else {}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=HANG_SECONDS) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def cli(url: str, credentials: Path, *args: str, profile: str) -> subprocess.CompletedProcess[str]:
    """The ``resumable`` command against ``url``, signing as ``profile`` of ``credentials`` (the standard
    credential chain, as a person's shell gives it)."""
    signer = {"AWS_SHARED_CREDENTIALS_FILE": str(credentials), "AWS_PROFILE": profile}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_ACCESS_KEY", "AWS_SECRET", "AWS_SESSION"))}
    return subprocess.run(
        [sys.executable, "-m", "resumable.cli", "--url", url, "--sign", *args],
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        env=env | signer,
        check=False,
    )


@contextmanager
def settings(**environment: str) -> Iterator[None]:
    """The handlers of this process read these environment variables (an approval rule, say) until
    the block ends; their cached settings and service are dropped before and after."""
    with pytest.MonkeyPatch.context() as env:
        for variable, value in environment.items():
            env.setenv(variable, value)
        forget()
        yield
    forget()


@contextmanager
def jwt_api(issuer: LocalIssuer, **environment: str) -> Iterator[str]:
    """The local API in JWT mode on a free port: the page is told where to sign in, the group
    approvers approve, and ``environment`` holds whatever else the test sets."""
    jwt = {"AUTH_MODE": "JWT", "JWT_ISSUER": issuer.url, "JWT_AUDIENCE": issuer.client_id}
    jwt |= {"APPROVER_GROUPS": "approvers", "JWT_GROUPS_CLAIM": GROUPS_CLAIM}
    with settings(**jwt, **environment):
        server = make_server(port=0, jwt=JwtVerifier(issuer.url, (issuer.client_id,)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield f"http://127.0.0.1:{server.server_address[1]}"
        server.shutdown()
        server.server_close()

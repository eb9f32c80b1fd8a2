"""Fixtures shared by the tests of the deployable edge (handlers, events, the local API)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from resumable.api.app import forget
from resumable.config import Settings
from resumable.local.authorizers import LocalCredentials
from resumable.local.embedded_aws import embedded_aws
from resumable.local.functions import function_arn
from resumable.local.issuer import LocalIssuer
from resumable.local.server import make_server
from tests.integration.helpers import SHARDS


@pytest.fixture(scope="module")
def handler_environment() -> Iterator[Settings]:
    """The embedded AWS, handed to the handlers through the environment as Lambda's would be.

    The table, bucket and bus get names of their own (moto's backends are per process), and the handlers'
    cached resolver is dropped before and after, so it is built from this environment. Its index and audit
    days are spread over ``SHARDS`` (``tests.integration.helpers`` says why), not the default's 16.
    """
    name = f"edge-{uuid.uuid4().hex[:8]}"
    with (
        embedded_aws(table_name=name, bucket_name=name, event_bus_name=name, index_shards=SHARDS) as settings,
        pytest.MonkeyPatch.context() as env,
    ):
        for variable, value in settings.environment().items():
            env.setenv(variable, value)
        env.setenv("APPROVER_PRINCIPALS", "arn:aws:iam::000000000000:user/approver-*")
        env.setenv("CONTINUE_FUNCTION", function_arn("SubmitApprovalFunction"))
        forget()
        yield settings
        forget()


# The local principals that can sign (each a profile of the `local_credentials` file).
SIGNERS = {
    "approver": "arn:aws:iam::000000000000:user/approver-ann",
    "approver2": "arn:aws:iam::000000000000:user/approver-ben",
    "alice": "arn:aws:iam::000000000000:user/alice",
    "bob": "arn:aws:iam::000000000000:user/bob",
}


@pytest.fixture(scope="module")
def local_credentials(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An AWS shared credentials file whose profiles sign as `SIGNERS` on the local API."""
    path = tmp_path_factory.mktemp("credentials") / "credentials"
    LocalCredentials.generate(SIGNERS).write(path)
    return path


@pytest.fixture(scope="module")
def url(handler_environment: Settings, local_credentials: Path) -> Iterator[str]:
    """The local API (`make run`'s server) on a free port, serving the handlers' environment; its
    signed requests are checked against `local_credentials`."""
    server = make_server(port=0, credentials=LocalCredentials.read(local_credentials))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium (Debian's), for the inbox page's tests."""
    from playwright.sync_api import expect

    from tests.e2e.browser import WAIT_MS, chromium

    expect.set_options(timeout=WAIT_MS)
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def issuer() -> Iterator[LocalIssuer]:
    """The local sign-in issuer (make run AUTH=jwt's), with its named users."""
    started = LocalIssuer().start()
    yield started
    started.stop()

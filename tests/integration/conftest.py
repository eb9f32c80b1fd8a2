"""The embedded AWS for integration tests: one moto server per test run, real DynamoDB and S3 APIs."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from resumable.config import Settings
from resumable.local import embedded_aws
from resumable.service import Service
from resumable.service.agent_factory import AgentFactory, load_factory
from resumable.store import DynamoDBStore
from resumable.store.resources import create_table_request
from tests.clock import FakeClock
from tests.deployed import as_deployed
from tests.factories import LEDGER_ENV
from tests.integration.helpers import SHARDS
from tests.mcp_servers import RecordsServer, records_server, serving_records


@pytest.fixture(scope="session")
def aws_server() -> Iterator[Settings]:
    with embedded_aws() as settings:
        yield settings


@pytest.fixture
def aws(aws_server: Settings) -> Iterator[Settings]:
    """Settings with a table of this test's own: no test sees another's items. The audit trail is not
    delivered (no bucket: a test that delivers it makes a bucket of its own). Its index and audit days
    are spread over ``SHARDS`` partitions, not the deployed default's 16."""
    update = {"table_name": f"t-{uuid.uuid4().hex[:12]}", "audit_bucket": None, "index_shards": SHARDS}
    settings = aws_server.model_copy(update=update)
    client = DynamoDBStore(settings).dynamodb
    client.create_table(**create_table_request(settings.table_name))  # type: ignore[arg-type]
    yield settings
    client.delete_table(TableName=settings.table_name)


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "executions.log"
    monkeypatch.setenv(LEDGER_ENV, str(path))
    return path


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def session_id() -> str:
    return f"s-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def store(aws: Settings) -> DynamoDBStore:
    """A store on this test's table and bucket, with clients of its own: for reading and writing them
    directly, as another process would."""
    return DynamoDBStore(aws)


@pytest.fixture
def make_service(aws: Settings, clock: FakeClock, ledger: Path) -> Callable[..., Service]:
    """A new Service (its own store and clients: a separate 'process'). ``factory`` is the name of a
    tests.factories factory, ``strands:<name>`` for a tests.strands_factories one, or an agent factory
    itself; ``settings`` override this test's settings."""

    def make(factory: str | AgentFactory = "nested", **settings: object) -> Service:
        if isinstance(factory, str):
            name = factory.removeprefix("strands:")
            module = "tests.factories" if name == factory else "tests.strands_factories"
            settings = {"agent_factory": f"{module}:{name}", **settings}
        configured = aws.model_copy(update=settings)
        agents = load_factory(configured.agent_factory) if isinstance(factory, str) else factory
        return as_deployed(Service(DynamoDBStore(configured), configured, clock, agents))

    return make


@pytest.fixture
def counting() -> Iterator[None]:
    """The test's own calls of the service count metrics, as a handler's do."""
    from resumable.metrics import collecting

    with collecting():
        yield


@pytest.fixture(scope="session")
def records_url() -> Iterator[str]:
    """tests/mcp_server.py over streamable HTTP, one for the worker: each request names its ledger."""
    with serving_records() as url:
        yield url


@pytest.fixture(params=["stdio", "http"])
def records(request: pytest.FixtureRequest, ledger: Path, tmp_path: Path, records_url: str) -> Iterator[RecordsServer]:
    """tests/mcp_server.py over each transport: a test using it runs once over stdio, once over HTTP."""
    with records_server(request.param, ledger, tmp_path / "mcp-pids", records_url) as server:
        yield server

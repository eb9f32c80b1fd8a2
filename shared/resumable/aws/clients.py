"""AWS clients for the settings' region, endpoint and credentials (AWS, LocalStack or the embedded AWS).

Every client is made from one botocore session of the process's, not through boto3: boto3 adds
nothing resumable uses to a client (the transfer methods it gives an S3 client), and importing it
imports s3transfer and multiprocessing, which no request needs (some 30 ms of a cold start; ``make
bench`` section 4). The clients are botocore's, as boto3's are.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Generic, TypeVar

from resumable.aws.at_once import MOST_AT_ONCE
from resumable.config import Settings

# A botocore session is not safe to make clients from on two threads at once (the local API serves
# requests on several).
_lock = threading.Lock()
_session: Any = None


def session() -> Any:
    """This process's botocore session, made on first use."""
    global _session  # noqa: PLW0603 (one per process, as boto3's default session is)
    with _lock:
        if _session is None:
            from resumable.botocore_data import new_session  # (botocore's data read with less work)

            _session = new_session()
        return _session


def hook(event: str, handler: Any) -> None:
    """``handler`` on ``event`` in every botocore session made from now on, and in this process's if it
    is made already (the local tools: the embedded AWS, the recorded calls). Under the lock, so that a
    session being made meanwhile gets it exactly once. A client made before holds the events it was
    made with and is not reached."""
    from botocore import handlers

    with _lock:
        handlers.BUILTIN_HANDLERS.append((event, handler))
        if _session is not None:
            _session.register(event, handler)


def client(service: str, settings: Settings, *, attempts: int = 5, timeout: float | None = None) -> Any:
    """A client for ``service``. Throttling and transient errors are retried by botocore (standard
    mode, ``attempts`` in all) before they reach resumable; ``timeout``: seconds to connect and to read
    (botocore's 60 by default)."""
    from botocore.config import Config

    options: dict[str, Any] = {"region_name": settings.region}
    if settings.endpoint_url:
        options["endpoint_url"] = settings.endpoint_url
    if settings.access_key_id:
        options["aws_access_key_id"] = settings.access_key_id
        options["aws_secret_access_key"] = settings.secret_access_key
    # As many connections as calls made at once (a sharded read's first Queries). No checking of each
    # request's parameters against the service's model before it is sent: the store builds every
    # request, AWS checks it again (a malformed one is refused with a ValidationException, which
    # reaches the caller as botocore's check would), and the check was a third of the time a large
    # transaction took to build (make bench, section 2b). The embedded AWS accepts some requests AWS
    # refuses (an empty transaction, a Limit of 0), so the tests check every request before it is sent
    # (RESUMABLE_CHECK_REQUESTS=1, set by tests/conftest.py) as botocore would.
    config = Config(
        retries={"mode": "standard", "max_attempts": attempts},
        max_pool_connections=MOST_AT_ONCE,
        parameter_validation=bool(os.environ.get("RESUMABLE_CHECK_REQUESTS")),
    )
    if timeout is not None:
        config = config.merge(Config(connect_timeout=timeout, read_timeout=timeout))
    options["config"] = config
    made = session()
    with _lock:
        return made.create_client(service, **options)


C = TypeVar("C")


class LazyClient(Generic[C]):
    """Owns a boto3 client for ``service``, made on first use (so a cold start that does not need it
    does not pay for it), or the one it was given."""

    service: str

    def __init__(self, settings: Settings, aws: C | None = None) -> None:
        self.settings = settings
        self._client = aws

    @property
    def client(self) -> C:
        if self._client is None:
            self._client = client(self.service, self.settings)
        return self._client

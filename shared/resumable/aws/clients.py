"""boto3 clients for the settings' region, endpoint and credentials (AWS, LocalStack or the embedded AWS)."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from resumable.config import Settings


def client(service: str, settings: Settings) -> Any:
    """A boto3 client for ``service``. Throttling and transient errors are retried by botocore
    (standard mode, 5 attempts) before they reach resumable."""
    import boto3
    from botocore.config import Config

    options: dict[str, Any] = {"region_name": settings.region}
    if settings.endpoint_url:
        options["endpoint_url"] = settings.endpoint_url
    if settings.access_key_id:
        options["aws_access_key_id"] = settings.access_key_id
        options["aws_secret_access_key"] = settings.secret_access_key
    options["config"] = Config(retries={"mode": "standard", "max_attempts": 5})
    return boto3.client(service, **options)  # type: ignore[call-overload]


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

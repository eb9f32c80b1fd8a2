"""boto3 clients for the settings' region, endpoint and credentials (AWS, LocalStack or the embedded AWS)."""

from __future__ import annotations

from typing import Any

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

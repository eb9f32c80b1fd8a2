"""A secret of Secrets Manager, read when it is first needed and again once it is older than a few
minutes (so a rotated secret is picked up without a restart): how the Slack function reads its
bot token and signing secret."""

from __future__ import annotations

import json
import time
from typing import Any

from resumable.aws.clients import LazyClient
from resumable.exceptions import AwsError

MAX_AGE_SECONDS = 300


class Secrets(LazyClient[Any]):
    """``GetSecretValue`` of JSON secrets, each kept for ``MAX_AGE_SECONDS``. The client is made on first use."""

    service = "secretsmanager"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read: dict[str, tuple[float, dict[str, Any]]] = {}

    def json(self, secret_id: str) -> dict[str, Any]:
        """The secret's value, a JSON object."""
        read_at, value = self._read.get(secret_id, (0.0, {}))
        if time.monotonic() - read_at > MAX_AGE_SECONDS or not value:
            value = self._get(secret_id)
            self._read[secret_id] = (time.monotonic(), value)
        return value

    def _get(self, secret_id: str) -> dict[str, Any]:
        try:
            text = self.client.get_secret_value(SecretId=secret_id)["SecretString"]
        except Exception as error:
            raise AwsError(f"reading the secret {secret_id} failed: {error}") from error
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            raise AwsError(f"the secret {secret_id} is not a JSON object: store it as one (docs/desk.md)")
        return value

"""The application's settings and secrets on this machine: the values of app/local.json (git ignores it),
put into the embedded AWS under the names the agent factory reads them by (``app_setting``,
``app_secret``: resumable.aws.app_settings), so that its code is the same on a laptop and on AWS.

    {"settings": {"REFUND_LIMIT": "2000"}, "secrets": {"orders-api-token": "a token for this machine"}}

Each setting becomes the SSM parameter ``/local/app/<name>`` and each secret a Secrets Manager secret of
that name; ``APP_SETTINGS_PATH`` and ``APP_SECRETS`` then name them, as the template's AppSettingsPath
and AppSecretArns do on AWS. make run and make predeploy's import check do it; a test does it with
``app_values(...)``.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from resumable.config import Settings

LOCAL_SETTINGS_PATH = "/local/app"
_NAME = r"[A-Za-z0-9_.-]{1,200}"
_SECRET = r"[A-Za-z0-9/_+=.@-]{1,200}"


class LocalValues(BaseModel):
    """What app/local.json holds: settings and secrets, by name, each a string."""

    model_config = ConfigDict(extra="forbid")

    settings: dict[str, Annotated[str, Field(min_length=1)]] = Field(default_factory=dict)
    secrets: dict[str, Annotated[str, Field(min_length=1)]] = Field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> LocalValues:
        """The values of ``path`` (none where there is no such file); SystemExit saying what is wrong."""
        if not path.exists():
            return cls()
        try:
            values = cls.model_validate(json.loads(path.read_text()))
        except (ValueError, ValidationError) as error:
            said = str(error)
            if isinstance(error, ValidationError):
                first = error.errors()[0]
                said = f"{'.'.join(str(part) for part in first['loc']) or 'the whole'}: {first['msg']}"
            raise SystemExit(
                f'{path} is not {{"settings": {{name: value}}, "secrets": {{name: value}}}} with string values '
                f"({said}); nothing was started"
            ) from None
        bad = [n for n in values.settings if not re.fullmatch(_NAME, n)]
        bad += [n for n in values.secrets if not re.fullmatch(_SECRET, n)]
        if bad:
            raise SystemExit(f"{path} names settings or secrets AWS would not take: {bad}; nothing was started")
        return values


def put(values: LocalValues, aws: Settings) -> dict[str, str]:
    """``values`` put into the AWS of ``aws`` (the embedded one); the environment that names them (and
    nothing else: a variable of none is empty)."""
    from resumable.aws.clients import client

    ssm, secrets = client("ssm", aws), client("secretsmanager", aws)
    for name, value in values.settings.items():
        ssm.put_parameter(Name=f"{LOCAL_SETTINGS_PATH}/{name}", Value=value, Type="SecureString", Overwrite=True)
    arns = [_secret(secrets, name, value) for name, value in values.secrets.items()]
    return {"APP_SETTINGS_PATH": LOCAL_SETTINGS_PATH if values.settings else "", "APP_SECRETS": ",".join(arns)}


def _secret(secrets: Any, name: str, value: str) -> str:
    """The secret ``name`` holding ``value`` (made, or given a new value: one process's embedded AWSes
    share their backends); its ARN."""
    try:
        return str(secrets.create_secret(Name=name, SecretString=value)["ARN"])
    except Exception as error:
        if getattr(error, "response", {}).get("Error", {}).get("Code") != "ResourceExistsException":
            raise
        return str(secrets.put_secret_value(SecretId=name, SecretString=value)["ARN"])


@contextmanager
def app_values(settings: Mapping[str, str] = {}, secrets: Mapping[str, str] = {}) -> Iterator[Settings]:
    """For an application's tests: an embedded AWS holding these settings and secrets, and the environment
    that names it and them, until the block ends (what it was before is put back)."""
    from resumable.local.embedded_aws import embedded_aws

    before = dict(os.environ)
    try:
        named = f"app-values-{uuid.uuid4().hex[:12]}"  # (one process's embedded AWSes share their backends)
        with embedded_aws(table_name=named, bucket_name=named) as aws:
            os.environ.update(aws.environment())
            os.environ.update(put(LocalValues(settings=dict(settings), secrets=dict(secrets)), aws))
            yield aws
    finally:
        os.environ.clear()
        os.environ.update(before)

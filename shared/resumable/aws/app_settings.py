"""The application's settings and secrets, as its agent factory and tools read them.

``app_setting(name)`` is a plain value: the SSM parameter ``<APP_SETTINGS_PATH>/<name>`` (the template's
``AppSettingsPath``; a SecureString is decrypted). ``app_secret(name)`` is the value of the Secrets
Manager secret called ``name``, one of the secrets whose ARNs ``APP_SECRETS`` lists (the template's
``AppSecretArns``). Both read through Powertools' Parameters utility (``SSMProvider``: every setting
under the path in one GetParametersByPath; ``SecretsProvider``: GetSecretValue) with this process's
botocore clients (the settings' endpoint and credentials: the embedded AWS locally), and keep what they
read for ``APP_SETTINGS_MAX_AGE`` seconds (300): a changed setting or a rotated secret is read again
after that, with no deploy. On AWS, only the functions that build agents may read them.

A value is never logged and never put in an error: an error names the setting or secret, and says
what to set. A setting or secret that is not there, or that the function may not read, is an
``AppSettingError`` (the agent factory's error: a new turn fails saying so); a failure AWS may get past
(throttling, an outage) is an ``AwsError``, which leaves the turn to be tried again.
"""

from __future__ import annotations

import re
import threading
from typing import Any, TypeVar

from resumable.aws.clients import client
from resumable.config import Settings
from resumable.exceptions import AppSettingError, AwsError

T = TypeVar("T")
_MISSING: Any = object()
# The errors that say the setting or secret is not there or not the function's to read: more attempts
# will not help, so they are the application's to fix.
_REFUSED = frozenset({"AccessDeniedException", "ResourceNotFoundException", "ParameterNotFound", "DecryptionFailure"})

_lock = threading.Lock()
_providers: dict[tuple[Any, ...], Any] = {}


def app_setting(name: str, default: T = _MISSING) -> str | T:
    """The application's setting ``name`` (``default`` where it has none, else ``AppSettingError``)."""
    settings = Settings.from_env()
    if not settings.app_settings_path:
        if default is not _MISSING:
            return default
        raise AppSettingError(
            f"the app setting {name!r} was asked for, and no app settings are configured: set AppSettingsPath "
            "to the SSM path that holds them (locally, give it a value in app/local.json's settings)"
        )
    path = settings.app_settings_path
    provider = _provider("ssm", settings)
    found = _read(lambda: provider.get_multiple(path, max_age=settings.app_settings_max_age, decrypt=True), name, path)
    if name in found:
        return str(found[name])
    if default is not _MISSING:
        return default
    held = ", ".join(sorted(found)) or "none"
    raise AppSettingError(
        f"the app setting {name!r} is not set: there is no SSM parameter {path}/{name} (the settings under "
        f"{path}: {held}). On AWS, put it under the stack's AppSettingsPath (aws ssm put-parameter --name "
        f"<AppSettingsPath>/{name} --type String --value ...); locally, in app/local.json's settings"
    )


def app_secret(name: str) -> str:
    """The value of the application's secret ``name``: the secret of that name (or ARN) among APP_SECRETS."""
    settings = Settings.from_env()
    arn = next((arn for arn in settings.app_secrets if name in (arn, *_names(arn))), None)
    if arn is None:
        held = ", ".join(sorted((_names(arn) or (arn,))[-1] for arn in settings.app_secrets)) or "none"
        raise AppSettingError(
            f"the app secret {name!r} is not one of AppSecretArns (its secrets: {held}): add its ARN to "
            "AppSecretArns (locally, give it a value in app/local.json's secrets)"
        )
    provider = _provider("secretsmanager", settings)
    value = _read(lambda: provider.get(arn, max_age=settings.app_settings_max_age), name, arn)
    return value if isinstance(value, str) else bytes(value).decode()


def _names(arn: str) -> tuple[str, ...]:
    """What a secret's ARN may be called by: its name, with and without the six characters AWS adds."""
    rest = arn.partition(":secret:")[2]
    return (rest, re.sub(r"-[A-Za-z0-9]{6}$", "", rest)) if rest else ()


def _read(call: Any, name: str, where: str) -> Any:
    """``call()``, its failures said without the value: AppSettingError, or AwsError to try again."""
    from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
    from botocore.exceptions import ClientError

    try:
        return call()
    except GetParameterError as error:
        cause = error.__cause__ or error.__context__  # (Powertools raises it in its except, without "from")
        code = cause.response.get("Error", {}).get("Code", "") if isinstance(cause, ClientError) else ""
        said = f"reading the app setting or secret {name!r} ({where}) failed: {cause or error}"
        if code in _REFUSED:
            raise AppSettingError(
                f"{said}. Is it there, and is it under AppSettingsPath or in AppSecretArns (only those may be read)?"
            ) from None
        raise AwsError(said) from None


def _provider(service: str, settings: Settings) -> Any:
    """Powertools' provider for ``service``, one per process and AWS (a test's embedded AWS is another)."""
    key = (service, settings.region, settings.endpoint_url, settings.access_key_id)
    with _lock:
        if key not in _providers:
            from aws_lambda_powertools.utilities.parameters import SecretsProvider, SSMProvider

            made = client(service, settings)
            _providers[key] = SSMProvider(boto3_client=made) if service == "ssm" else SecretsProvider(boto3_client=made)
        return _providers[key]

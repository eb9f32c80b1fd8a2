"""A value the stack writes to SSM Parameter Store for a function that cannot be given it in its
environment: the HTTP API's URL, for the Slack function, which the API itself refers to (a variable
naming the API would make each depend on the other)."""

from __future__ import annotations

from typing import Any

from resumable.aws.clients import LazyClient
from resumable.exceptions import AwsError


class Parameters(LazyClient[Any]):
    """``GetParameter``, each value read once a process (the stack's values change only with a deploy,
    which starts new processes). The client is made on first use."""

    service = "ssm"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read: dict[str, str] = {}

    def value(self, name: str) -> str:
        if name not in self._read:
            try:
                self._read[name] = str(self.client.get_parameter(Name=name)["Parameter"]["Value"])
            except Exception as error:
                raise AwsError(f"reading the parameter {name} failed (ssm:GetParameter): {error}") from error
        return self._read[name]

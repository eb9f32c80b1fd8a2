"""The local API with every function run from built layers (make run's way of serving an application)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from resumable.local.app_values import LocalValues, put
from resumable.local.embedded_aws import embedded_aws
from resumable.local.execution import ExecutionEnvironments, Layout, serving_from_layers
from resumable.local.functions import function_arn
from resumable.local.server import make_server
from resumable.local.template import functions_in_process


@contextmanager
def served_from_layers(
    layers: dict[str, Path], name: str, values: LocalValues | None = None, **environment: str
) -> Iterator[tuple[str, ExecutionEnvironments]]:
    """The local API's URL and the functions' environments, against an embedded AWS of its own (its
    table, bucket and bus named ``name``) holding the application's ``values`` (as make run puts
    app/local.json's), the functions' environment ``environment`` besides."""
    with ExitStack() as stack, pytest.MonkeyPatch.context() as env:
        settings = stack.enter_context(embedded_aws(table_name=name, bucket_name=name, event_bus_name=name))
        named = put(values, settings) if values is not None else {}
        for variable, value in {**settings.environment(), **named, **environment}.items():
            env.setenv(variable, value)
        env.setenv("CONTINUE_FUNCTION", function_arn("SubmitApprovalFunction"))
        environments = stack.enter_context(serving_from_layers(Layout(layers)))
        stack.enter_context(functions_in_process())
        server = make_server(port=0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        stack.callback(server.server_close)
        stack.callback(server.shutdown)
        yield f"http://127.0.0.1:{server.server_address[1]}", environments

"""template.yaml's functions as Lambda and API Gateway run them, locally: the template read (its
intrinsics kept as plain values), each function's handler imported from ``functions/<dir>/app.py``,
its ARN and context, its HTTP API routes, and the API Gateway v2 event of a request."""

from __future__ import annotations

import copy
import functools
import importlib.util
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, unquote

import yaml

from resumable.local.permissions.calls import acting_as

ROOT = Path(__file__).resolve().parents[3]
ACCOUNT = "123456789012"


# libyaml's reader (in PyYAML's wheels) where there is one: it reads the template in a tenth of the time
# of PyYAML's pure-Python reader (10 ms, not 100: the local API, its events and schedules, and every
# function ``make invoke`` runs read it). It is laxer about tabs (a tab after a value reads, where the
# pure-Python reader and sam's refuse it); otherwise it reads the same, and a test holds template.yaml
# to what the pure-Python reader reads.
FastSafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CloudFormationLoader(FastSafeLoader):  # type: ignore[misc]
    """Reads a CloudFormation template: every intrinsic (!Ref, !Sub, ...) is kept as its plain value."""


_CloudFormationLoader.add_multi_constructor(
    "!",
    lambda loader, _tag, node: (
        loader.construct_scalar(node)
        if isinstance(node, yaml.ScalarNode)
        else loader.construct_sequence(node)
        if isinstance(node, yaml.SequenceNode)
        else loader.construct_mapping(node)
    ),
)


def load_template(path: Path = ROOT / "template.yaml") -> dict[str, Any]:
    """The template at ``path``, a copy of its own for each caller: each text is parsed once (a copy
    takes 1.5 ms, a parse 18 ms; a local run's start asks for it nine times)."""
    return copy.deepcopy(_parse(path.read_text()))


@functools.lru_cache(maxsize=4)
def _parse(text: str) -> dict[str, Any]:
    template: dict[str, Any] = yaml.load(text, Loader=_CloudFormationLoader)
    return template


@dataclass(frozen=True)
class Function:
    """A function of the template: its logical id, code folder and handler."""

    name: str
    code_uri: str
    handler: str


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    function: str
    code_uri: str
    handler: str
    authorized: bool = True

    @property
    def pattern(self) -> re.Pattern[str]:
        return re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.path) + "$")

    @property
    def target(self) -> Function:
        return Function(self.function, self.code_uri, self.handler)


def functions(template: dict[str, Any]) -> dict[str, Function]:
    """Every function of the service the template declares, by logical id: not a durable function (the
    sample durable workflow, which waits for turns as a team's own would: ``durable_functions``)."""
    return {name: f for name, f in _declared(template).items() if not _durable(template, name)}


def durable_functions(template: dict[str, Any]) -> dict[str, Function]:
    """The durable functions the template declares (those with a ``DurableConfig``), by logical id."""
    return {name: f for name, f in _declared(template).items() if _durable(template, name)}


def _durable(template: dict[str, Any], name: str) -> bool:
    return "DurableConfig" in template["Resources"][name]["Properties"]


def _declared(template: dict[str, Any]) -> dict[str, Function]:
    handler_default = template.get("Globals", {}).get("Function", {}).get("Handler", "app.lambda_handler")
    return {
        name: Function(name, resource["Properties"]["CodeUri"], resource["Properties"].get("Handler", handler_default))
        for name, resource in template["Resources"].items()
        if resource.get("Type") == "AWS::Serverless::Function"
    }


def routes(template: dict[str, Any]) -> list[Route]:
    """Every HttpApi route the template declares, with the function that serves it."""
    found = []
    for function in functions(template).values():
        for event in template["Resources"][function.name]["Properties"].get("Events", {}).values():
            if event.get("Type") == "HttpApi":
                found.append(
                    Route(
                        method=event["Properties"]["Method"].upper(),
                        path=event["Properties"]["Path"],
                        function=function.name,
                        code_uri=function.code_uri,
                        handler=function.handler,
                        authorized=event["Properties"].get("Auth", {}).get("Authorizer") != "NONE",
                    )
                )
    return found


# What runs the functions instead of this process, innermost last: given a function, its handler.
RUNNERS: list[Callable[[Function], Callable[[dict[str, Any], Any], Any]]] = []


def load_handler(function: Function | Route, *, here: bool = False) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The function's handler, imported from its CodeUri like Lambda would (one module per function); the
    AWS calls it makes are recorded as the function's. While a runner is in ``RUNNERS`` (functions run
    from their layers: resumable.local.execution), what that runner makes of the function instead, unless
    ``here`` (a durable workflow: not the service's, and run by the durable execution SDK's runner here)."""
    spec_of = function.target if isinstance(function, Route) else function
    if RUNNERS and not here:  # (make run of an application: the function runs from its layers)
        return RUNNERS[-1](spec_of)
    module_name, _, attribute = spec_of.handler.rpartition(".")
    source = ROOT / spec_of.code_uri / f"{module_name}.py"
    spec = importlib.util.spec_from_file_location(f"functions_{spec_of.name}", source)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot import {source} for {spec_of.name}")
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler: Callable[[dict[str, Any], Any], dict[str, Any]] = getattr(module, attribute)

    def as_the_function(event: dict[str, Any], context: Any) -> dict[str, Any]:
        with acting_as(spec_of.name):  # its AWS calls are the function's (resumable.local.permissions)
            return handler(event, context)

    return as_the_function


def function_arn(name: str, region: str = "us-east-1") -> str:
    """The ARN a template function has locally (its logical id is its name)."""
    return f"arn:aws:lambda:{region}:{ACCOUNT}:function:{name}"


@dataclass
class LambdaContext:
    """What a handler may read of its context."""

    function_name: str
    aws_request_id: str
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:000000000000:function:local"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def api_event(
    route: Route,
    method: str,
    path: str,
    query: str,
    headers: dict[str, str],
    body: bytes,
    authorizer: dict[str, Any] | None,
) -> dict[str, Any]:
    """The API Gateway HTTP API (payload v2) event API Gateway would send for this request."""
    # API Gateway decodes the path to route it, then decodes each path parameter it hands on.
    match = route.pattern.match(unquote(path))
    now = time.time()
    text = body.decode("utf-8", errors="replace") if body else None
    return {
        "version": "2.0",
        "routeKey": f"{route.method} {route.path}",
        "rawPath": path,
        "rawQueryString": query,
        "headers": {k.lower(): v for k, v in headers.items()},
        "queryStringParameters": query_parameters(query),
        "pathParameters": {name: unquote(value) for name, value in match.groupdict().items()} if match else None,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            **({"authorizer": authorizer} if authorizer else {}),
            "domainName": "localhost",
            "domainPrefix": "localhost",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": headers.get("User-Agent", ""),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": f"{route.method} {route.path}",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "body": text,
        "isBase64Encoded": False,
    }


def query_parameters(query: str) -> dict[str, str] | None:
    """``queryStringParameters`` as API Gateway v2 builds them: a repeated parameter's values joined
    by commas, blank values kept."""
    found: dict[str, list[str]] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        found.setdefault(name, []).append(value)
    return {name: ",".join(values) for name, values in found.items()} or None

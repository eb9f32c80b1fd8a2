"""Every AWS call a template function makes, recorded as IAM sees it: the function, the action and the
resource, through botocore's event hooks.

A handler run here (``resumable.local.functions.load_handler``) acts as its function: the calls
resumable's code makes in it, on any thread that carries its context, are that function's (an agent's
own tools call AWS with grants of the application's, not the template's). The state machine's calls are
those made inside moto's Step Functions interpreter; the Publisher's event source mapping reads the
stream as the Publisher (``acting_as``), as Lambda does with the function's role.

A resource is written in the template's terms, not the test's: a table, bucket, bus, queue or function
is named by the environment variable that told the function where it is (``${RESUMABLE_TABLE}``), so
the check can follow that variable through the template to the resource it names. A name no variable
holds is kept as it is: the check then says the function reaches something its configuration does not
name.
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

STATE_MACHINE = "ApprovalStateMachine"

# The environment variable that names each kind of resource a function reaches.
TABLE, BUCKET, BUS, QUEUE, FUNCTION, SECRET = (
    "RESUMABLE_TABLE",
    "RESUMABLE_BUCKET",
    "EVENT_BUS_NAME",
    "DEAD_LETTER_QUEUE_URL",
    "CONTINUE_FUNCTION",
    "SLACK_SECRET_ARN",
)
# The cursor key (a secret read at run time) and the decision links' KMS key.
CURSOR_KEY, LINK_KEY = "CURSOR_SECRET_ARN", "DECISION_LINKS_KEY"
# The audit trail's bucket and the key that signs its digests (service.audit.delivery).
AUDIT_BUCKET, DIGEST_KEY = "AUDIT_BUCKET", "AUDIT_DIGEST_KEY"
# The topic NotifyEmail subscribes to (the Publisher tells it of each question).
TOPIC = "NOTIFY_TOPIC_ARN"
# The SSM parameter holding the API's URL (the Slack function's).
API_URL_PARAMETER = "API_URL_PARAMETER"
# (a function that hands work to itself names itself so: the Slack function)
ITSELF = "SLACK_FUNCTION"
# The application's settings' SSM path, and its secrets' ARNs (a list: any one of them names the call's).
APP_SETTINGS, APP_SECRETS = "APP_SETTINGS_PATH", "APP_SECRETS"
# The Bedrock models the functions may call, by id (a list; an id is matched whole: it holds colons).
BEDROCK_MODELS = "BEDROCK_MODEL_IDS"
# The durable functions whose callbacks the functions that settle turns complete (a list of ARNs). A
# callback's id names its function to Lambda alone: every callback call is recorded as reaching them.
DURABLE_WORKFLOWS = "DURABLE_WORKFLOWS"
# The StartTurn function a durable function starts the turn it waits for with (resumable.integrations.durable).
START_TURN = "RESUMABLE_START_TURN_FUNCTION"


@dataclass(frozen=True, order=True)
class Call:
    """One kind of call: who made it (a function's logical id, or the state machine's), the IAM action
    it needs, and the resource, as ``service:kind/${VARIABLE}/...`` or ``*``."""

    function: str
    action: str
    resource: str

    def line(self) -> str:
        return f"{self.function} {self.action} {self.resource}"

    @classmethod
    def parse(cls, line: str) -> Call:
        function, action, resource = line.split(" ")
        return cls(function, action, resource)


# The calls the test suite records, one a line (the permission check holds the template to them).
CALLS = Path(__file__).resolve().parents[4] / "tests" / "aws_calls.txt"


def read_calls(path: Path = CALLS) -> set[Call]:
    return {Call.parse(line) for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")}


_ACTING: contextvars.ContextVar[tuple[str, Mapping[str, str] | None] | None] = contextvars.ContextVar(
    "resumable_acting_as", default=None
)


@contextmanager
def acting_as(function: str, environment: Mapping[str, str] | None = None) -> Iterator[None]:
    """The calls made within (on this thread, and threads started with its context) are ``function``'s,
    configured by ``environment`` (by default the process's: a handler reads it as Lambda's)."""
    token = _ACTING.set((function, environment))
    try:
        yield
    finally:
        _ACTING.reset(token)


# The frames between a call's site and the hook: botocore's and boto3's, and this module's.
# (X-Ray's patching of botocore and the wrapt it uses sit between a traced call and botocore; Powertools'
# Parameters between the app settings' reads and botocore.)
_PLUMBING = ("botocore.", "boto3.", "s3transfer.", "aws_xray_sdk.", "wrapt.", "aws_lambda_powertools.", __name__)
# resumable's code: the package, and a function's handler module (loaded as functions_<Name>).
_OURS = ("resumable.", "functions_")


def _caller() -> tuple[str, Mapping[str, str]] | None:
    """Who makes the call being made, and the environment that names its resources; None for a call
    resumable does not make (an agent's own tool, a test's set-up, the local run's)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_PLUMBING):
        frame = frame.f_back
    site = frame.f_globals.get("__name__", "") if frame is not None else ""
    if site.startswith("moto.stepfunctions"):
        return STATE_MACHINE, os.environ
    acting = _ACTING.get()
    if acting is None or not site.startswith(_OURS):
        return None
    function, environment = acting
    return function, os.environ if environment is None else environment


def _last(name: str) -> str:
    """A name, URL or ARN's last part: a queue URL's, a function or bus ARN's name."""
    return name.rsplit(":", 1)[-1].rsplit("/", 1)[-1]


def _named(value: str, variable: str, environment: Mapping[str, str]) -> str:
    """``${VARIABLE}`` where the environment variable names ``value`` (by name, URL or ARN; one of its
    comma-separated values, for a list), else ``value``."""
    held = [one for one in environment.get(variable, "").split(",") if one]
    return "${" + variable + "}" if any(_last(one) == _last(value) for one in held) else value


# The calls whose IAM action is not the operation's own name.
_ACTIONS = {
    ("lambda", "Invoke"): "lambda:InvokeFunction",
    ("s3", "HeadObject"): "s3:GetObject",
    ("s3", "ListObjectsV2"): "s3:ListBucket",
    ("s3", "ListObjectVersions"): "s3:ListBucketVersions",
    ("bedrock", "Converse"): "bedrock:InvokeModel",
    ("bedrock", "ConverseStream"): "bedrock:InvokeModelWithResponseStream",
    ("sqs", "SendMessageBatch"): "sqs:SendMessage",
    ("s3", "DeleteObjects"): "s3:DeleteObject",
}
_TRANSACTION_ITEMS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


def calls_of(
    operation: str, prefix: str, params: dict[str, Any], environment: Mapping[str, str]
) -> list[tuple[str, str]]:
    """The (action, resource) pairs one call needs (most need one, a transaction one per item), its
    resources named by the variables of ``environment`` that hold them."""

    def named(value: str, variable: str) -> str:
        return _named(value, variable, environment)

    def _table(name: str, index: str | None = None) -> str:
        return f"dynamodb:table/{named(name, TABLE)}" + (f"/index/{index}" if index else "")

    if prefix == "dynamodb":
        if operation == "TransactWriteItems":
            return [
                (f"dynamodb:{_TRANSACTION_ITEMS[kind]}", _table(body["TableName"]))
                for item in params.get("TransactItems", [])
                for kind, body in item.items()
            ]
        if operation == "TransactGetItems":
            return [("dynamodb:GetItem", _table(item["Get"]["TableName"])) for item in params.get("TransactItems", [])]
        if operation in ("BatchGetItem", "BatchWriteItem"):
            return [(f"dynamodb:{operation}", _table(name)) for name in params.get("RequestItems", {})]
        if "StreamArn" in params or operation == "ListStreams":
            table = params.get("StreamArn", params.get("TableName", "*")).split(":table/")[-1].split("/")[0]
            return [(f"dynamodb:{operation}", _table(table) + "/stream/*")]
        if operation == "GetRecords":
            # Through an iterator GetShardIterator gave (recorded with its stream): the table's stream.
            return [(f"dynamodb:{operation}", _table(environment.get(TABLE, "*")) + "/stream/*")]
        if "TableName" in params:
            return [(f"dynamodb:{operation}", _table(params["TableName"], params.get("IndexName")))]
    action = _ACTIONS.get((prefix, operation), f"{prefix}:{operation}")
    if prefix == "s3":
        bucket = named(params["Bucket"], BUCKET)
        bucket = named(bucket, AUDIT_BUCKET) if bucket == params["Bucket"] else bucket
        if "Key" not in params:
            return [(action, f"s3:{bucket}")]
        # The key's first segment says which of the bucket's objects (a policy may grant a prefix only).
        key = params["Key"]
        where = f"s3:{bucket}/" + (key.split("/", 1)[0] + "/*" if "/" in key else "*")
        needs = [(action, where)]
        if operation == "PutObject" and params.get("Tagging"):
            needs.append(("s3:PutObjectTagging", where))  # tags given with the object need their own action
        if operation in ("GetObject", "HeadObject") and params.get("VersionId"):
            needs[0] = ("s3:GetObjectVersion", where)
        return needs
    if prefix == "events":
        buses = {entry.get("EventBusName", "default") for entry in params.get("Entries", [])}
        return [(action, f"events:event-bus/{named(bus, BUS)}") for bus in sorted(buses)]
    if prefix == "sqs" and "QueueUrl" in params:
        return [(action, f"sqs:{named(params['QueueUrl'], QUEUE)}")]
    if prefix == "lambda" and operation.startswith("SendDurableExecutionCallback"):
        return [(action, "lambda:function/${" + DURABLE_WORKFLOWS + "}")]
    if prefix == "lambda" and "FunctionName" in params:
        function = named(params["FunctionName"], FUNCTION)
        function = named(function, ITSELF) if function == params["FunctionName"] else function
        function = named(function, START_TURN) if function == params["FunctionName"] else function
        return [(action, f"lambda:function/{function}")]
    if prefix == "secretsmanager" and "SecretId" in params:
        secret = named(params["SecretId"], SECRET)
        secret = named(secret, CURSOR_KEY) if secret == params["SecretId"] else secret
        secret = named(secret, APP_SECRETS) if secret == params["SecretId"] else secret
        return [(action, f"secretsmanager:{secret}")]
    if prefix == "sns" and "TopicArn" in params:
        return [(action, f"sns:{named(params['TopicArn'], TOPIC)}")]
    if prefix == "kms" and "KeyId" in params:
        key = named(params["KeyId"], LINK_KEY)
        return [(action, f"kms:key/{named(key, DIGEST_KEY) if key == params['KeyId'] else key}")]
    if prefix == "ssm" and "Name" in params:
        held = environment.get(API_URL_PARAMETER)
        return [
            (action, "ssm:parameter" + ("${" + API_URL_PARAMETER + "}" if held == params["Name"] else params["Name"]))
        ]
    if prefix == "ssm" and "Path" in params:
        held = environment.get(APP_SETTINGS)
        return [(action, f"ssm:parameter{'${' + APP_SETTINGS + '}' if held == params['Path'] else params['Path']}")]
    if prefix == "states" and "stateMachineArn" in params:
        return [(action, f"states:stateMachine/{params['stateMachineArn']}")]
    if prefix == "bedrock" and "modelId" in params:
        listed = environment.get(BEDROCK_MODELS, "").split(",")
        model = "${" + BEDROCK_MODELS + "}" if params["modelId"] in listed else params["modelId"]
        return [(action, f"bedrock:model/{model}")]
    return [(action, "*")]


class Recorder:
    """The calls made so far by template functions in this process (and those nobody acted as, apart)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: set[Call] = set()
        self.installed = False

    def install(self) -> None:
        """Record from now on: every botocore session made from now, and boto3's default and resumable's if they exist
        (a client made before this is not recorded: install before the first)."""
        if self.installed:
            return
        import boto3

        from resumable.aws import clients

        hooks: list[tuple[str, Callable[..., None]]] = [
            ("before-parameter-build", self._before),
            ("after-call.s3.GetObject", self._after_get),
        ]
        for event, hook in hooks:
            clients.hook(event, hook)  # sessions made from now on, and resumable's
            if boto3.DEFAULT_SESSION is not None:
                boto3.DEFAULT_SESSION.events.register(event, hook)
        self.installed = True

    def recorded(self) -> set[Call]:
        """The calls so far (a copy: functions on other threads may be adding to them)."""
        with self._lock:
            return set(self.calls)

    def forget(self, function: str) -> None:
        """Drop ``function``'s calls (a test's own stand-in function)."""
        with self._lock:
            self.calls = {c for c in self.calls if c.function != function}

    def _add(self, function: str, pairs: list[tuple[str, str]]) -> None:
        with self._lock:
            self.calls.update(Call(function, action, resource) for action, resource in pairs)

    def _before(self, params: dict[str, Any], model: Any, context: dict[str, Any] | None = None, **_: Any) -> None:
        caller = _caller()
        if caller is None:
            return
        function, environment = caller
        self._add(function, calls_of(model.name, model.service_model.signing_name, params, environment))
        if context is not None and model.name == "GetObject":
            context["resumable_bucket"] = params.get("Bucket")

    def _after_get(self, parsed: dict[str, Any], context: dict[str, Any] | None = None, **_: Any) -> None:
        # A GetObject of a missing key answers NoSuchKey only to a caller that may list the bucket
        # (else AccessDenied, which reads as a fault): the code relies on NoSuchKey.
        caller = _caller()
        if caller is None or parsed.get("Error", {}).get("Code") not in ("NoSuchKey", "404"):
            return
        function, environment = caller
        bucket = (context or {}).get("resumable_bucket")
        if bucket:
            named = _named(bucket, BUCKET, environment)
            named = _named(bucket, AUDIT_BUCKET, environment) if named == bucket else named
            self._add(function, [("s3:ListBucket", f"s3:{named}")])


RECORDER = Recorder()

"""The stack as the deploy makes it, offline: template.yaml with ``AWS::LanguageExtensions`` applied
(every ``Fn::If`` on a parameter-only condition resolved, as CloudFormation does first), then SAM's
translation (what ``sam deploy`` asks CloudFormation to do: the functions' roles, SAM's policy
templates expanded, its managed policies attached), then every intrinsic of what a role grants and a
function is configured with resolved to the names the stack's resources get.

Local CodeUri/ContentUri/DefinitionUri paths (which ``sam build``/``sam package`` turn into S3 objects)
are replaced by placeholder S3 URIs. Each configuration is translated apart, so every ``!If`` is taken
both ways: the defaults, each ``AuthMode``, every optional hardening parameter given (a
customer-managed key, a VPC, access logs, alarm and notify emails, a concurrency limit), a Bedrock
model, and the optional Strands layer.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from samtranslator.translator.transform import transform  # type: ignore[import-untyped]
from samtranslator.yaml_helper import intrinsics_multi_constructor  # type: ignore[import-untyped]

from resumable.local.functions import FastSafeLoader
from resumable.local.permissions.configurations import CONFIGURATIONS
from resumable.local.permissions.kept import kept

TEMPLATE = Path(__file__).resolve().parents[4] / "template.yaml"
REGION, ACCOUNT, PARTITION, STACK = "us-east-1", "123456789012", "aws", "resumable"


class _SamLoader(FastSafeLoader):  # type: ignore[misc]
    """The SAM translator's reader of a template (samtranslator.yaml_helper's: an intrinsic is read as
    ``{"Fn::Sub": ...}``, ``{"Ref": ...}``), on libyaml's reader where PyYAML has it (a tenth of the
    time), and without what ``yaml_parse`` does besides: add its constructor to PyYAML's own SafeLoader."""


_SamLoader.add_multi_constructor("!", intrinsics_multi_constructor)


def read_template(text: str) -> dict[str, Any]:
    """Template ``text`` as the SAM translator reads it (a test holds it to ``yaml_parse``)."""
    read: dict[str, Any] = yaml.load(text, Loader=_SamLoader)
    return read


class _NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}


def _condition(template: dict[str, Any], value: Any, parameters: dict[str, Any]) -> Any:
    """A condition's truth from parameter values, or None where it rests on something else."""

    def operand(node: Any) -> Any:
        # CloudFormation compares parameter values as the strings they are passed as.
        if isinstance(node, dict) and set(node) == {"Ref"}:
            value = parameters.get(node["Ref"])
            return None if value is None else value if isinstance(value, list) else str(value)
        if isinstance(node, dict) and set(node) == {"Fn::Join"}:
            separator, joined = node["Fn::Join"]
            parts = operand(joined)
            return separator.join(str(p) for p in parts) if isinstance(parts, list) else None
        return str(node) if isinstance(node, str | int | float) else node if isinstance(node, list) else None

    if isinstance(value, dict) and len(value) == 1:
        [(name, args)] = value.items()
        if name == "Condition":
            return _condition(template, template["Conditions"][args], parameters)
        if name == "Fn::Equals":
            left, right = (operand(a) for a in args)
            return None if left is None or right is None else left == right
        if name == "Fn::Not":
            inner = _condition(template, args[0], parameters)
            return None if inner is None else not inner
        if name in ("Fn::And", "Fn::Or"):
            values = [_condition(template, a, parameters) for a in args]
            if None in values:
                return None
            return all(values) if name == "Fn::And" else any(values)
    return None


def conditions(template: dict[str, Any], parameters: dict[str, Any]) -> dict[str, bool | None]:
    """Each of the template's conditions, true or false with ``parameters`` (beside the defaults)."""
    values = parameter_values(template, parameters)
    return {name: _condition(template, value, values) for name, value in template.get("Conditions", {}).items()}


def parameter_values(template: dict[str, Any], parameters: dict[str, Any]) -> dict[str, Any]:
    """Every parameter's value: ``parameters``, else its default (a list's as a list)."""
    values = {name: p.get("Default") for name, p in template.get("Parameters", {}).items()} | parameters
    for name, declared in template.get("Parameters", {}).items():
        if declared.get("Type") == "CommaDelimitedList" and isinstance(values.get(name), str):
            values[name] = values[name].split(",")  # (as CloudFormation: "" is [""], whose first item is "")
    return values


def resolve_language_extensions(template: dict[str, Any], parameters: dict[str, Any]) -> dict[str, Any]:
    """``template`` with each ``Fn::If`` on a parameter-only condition replaced by its chosen branch
    (``AWS::NoValue`` dropping the property), as ``AWS::LanguageExtensions`` does before SAM runs."""
    values = parameter_values(template, parameters)
    no_value = object()

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"Fn::If"}:
                name, then, otherwise = node["Fn::If"]
                truth = _condition(template, template["Conditions"][name], values)
                if truth is not None:
                    return walk(then if truth else otherwise)
                kept = [walk(branch) for branch in (then, otherwise)]  # for CloudFormation to choose
                return {"Fn::If": [name, *({"Ref": "AWS::NoValue"} if b is no_value else b for b in kept)]}
            if node == {"Ref": "AWS::NoValue"}:
                return no_value
            walked = {k: walk(v) for k, v in node.items()}
            return {k: v for k, v in walked.items() if v is not no_value}
        if isinstance(node, list):
            return [w for w in (walk(v) for v in node) if w is not no_value]
        return node

    resolved: dict[str, Any] = walk(template)
    resolved["Transform"] = [t for t in resolved.get("Transform", []) if t != "AWS::LanguageExtensions"]
    return resolved


def translate(template: dict[str, Any], parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    """The CloudFormation template SAM makes of ``template`` with ``parameters`` (beside the
    defaults), offline."""
    # SAM's translator warns of its own usage metrics, which nobody publishes offline.
    logging.getLogger("samtranslator.metrics.metrics").setLevel(logging.ERROR)
    template = resolve_language_extensions(template, parameters or {})
    for name, resource in template["Resources"].items():
        properties = resource.get("Properties", {})
        for uri in ("CodeUri", "ContentUri", "DefinitionUri"):
            if isinstance(properties.get(uri), str) and not properties[uri].startswith("s3://"):
                properties[uri] = f"s3://placeholder-bucket/{name}.zip"
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    translated: dict[str, Any] = transform(template, parameters or {}, _NoManagedPolicies())
    return translated


@functools.cache
def template() -> str:
    return TEMPLATE.read_text()


@functools.lru_cache(maxsize=32)
def translated(configuration: str, text: str) -> dict[str, Any]:
    """The CloudFormation template the deploy makes of template ``text`` in ``configuration`` (kept on disk)."""
    parameters = CONFIGURATIONS[configuration]
    return kept(text, parameters, lambda: translate(read_template(text), parameters))


# What each kind of resource's Ref and GetAtt give, from its physical name (its name property where
# the template sets one, else a name CloudFormation would make).
_NAMES = {
    "AWS::DynamoDB::Table": "TableName",
    "AWS::S3::Bucket": "BucketName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::Events::EventBus": "Name",
    "AWS::StepFunctions::StateMachine": "StateMachineName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::SecretsManager::Secret": "Name",
    "AWS::IAM::Role": "RoleName",
    "AWS::Events::Rule": "Name",
}


@dataclass(frozen=True)
class Stack:
    """One configuration's translated template, its intrinsics resolvable. Made once for each configuration
    and template (``Stack.of``) and shared by whoever asks: read it, never change it."""

    configuration: str
    resources: dict[str, Any]
    parameters: dict[str, Any]
    conditions: dict[str, Any]
    absent: frozenset[str] = frozenset()
    """The resources a condition leaves out of this configuration."""
    _environments: dict[str, dict[str, str]] = field(default_factory=dict, compare=False, repr=False)

    def holds(self, condition: str) -> bool:
        """Whether the template's ``condition`` is true in this configuration."""
        return bool(_condition({"Conditions": self.conditions}, {"Condition": condition}, self.parameters))

    @classmethod
    def of(cls, configuration: str, text: str | None = None) -> Stack:
        """The stack of template.yaml (or of template ``text``) in ``configuration`` (made once for each)."""
        return _stack(configuration, template() if text is None else text)

    @classmethod
    def _made(cls, configuration: str, text: str) -> Stack:
        made = translated(configuration, text)
        values = parameter_values(made, CONFIGURATIONS[configuration])
        # CloudFormation creates a resource with a Condition only where it holds.
        resources = {
            name: resource
            for name, resource in made["Resources"].items()
            if "Condition" not in resource or _condition(made, {"Condition": resource["Condition"]}, values)
        }
        absent = frozenset(made["Resources"]) - frozenset(resources)
        return cls(configuration, resources, values, made.get("Conditions", {}), absent)

    def name(self, logical: str) -> str:
        """Its name property, or the name CloudFormation makes: the stack's, the logical id's and a
        random suffix (lowercase for a bucket), so only a grant made of its Ref or GetAtt names it."""
        resource = self.resources[logical]
        declared = resource.get("Properties", {}).get(_NAMES.get(resource["Type"], ""))
        if declared is not None:
            return str(self.resolve(declared))
        made = f"{STACK}-{logical}-{hashlib.sha256(logical.encode()).hexdigest()[:12].upper()}"
        return made.lower() if resource["Type"] == "AWS::S3::Bucket" else made

    def arn(self, logical: str) -> str:
        kind, name = self.resources[logical]["Type"], self.name(logical)
        where = f"{REGION}:{ACCOUNT}"
        arns = {
            "AWS::DynamoDB::Table": f"arn:{PARTITION}:dynamodb:{where}:table/{name}",
            "AWS::S3::Bucket": f"arn:{PARTITION}:s3:::{name}",
            "AWS::Lambda::Function": f"arn:{PARTITION}:lambda:{where}:function:{name}",
            "AWS::SQS::Queue": f"arn:{PARTITION}:sqs:{where}:{name}",
            "AWS::Events::EventBus": f"arn:{PARTITION}:events:{where}:event-bus/{name}",
            "AWS::StepFunctions::StateMachine": f"arn:{PARTITION}:states:{where}:stateMachine:{name}",
            "AWS::SNS::Topic": f"arn:{PARTITION}:sns:{where}:{name}",
            "AWS::SecretsManager::Secret": f"arn:{PARTITION}:secretsmanager:{where}:secret:{name}-AbCdEf",
            "AWS::KMS::Key": f"arn:{PARTITION}:kms:{where}:key/{hashlib.sha256(logical.encode()).hexdigest()[:36]}",
            "AWS::IAM::Role": f"arn:{PARTITION}:iam::{ACCOUNT}:role/{name}",
            "AWS::Events::Rule": f"arn:{PARTITION}:events:{where}:rule/" + "/".join(self._rule_path(logical)),
        }
        if kind not in arns:
            raise ValueError(f"no ARN known for {logical} ({kind})")
        return arns[kind]

    def _rule_path(self, logical: str) -> list[str]:
        bus = str(self.resolve(self.resources[logical]["Properties"].get("EventBusName", "default")))
        return [self.name(logical)] if bus == "default" else [bus.rsplit("/", 1)[-1], self.name(logical)]

    def ref(self, logical: str) -> str:
        pseudo = {
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": PARTITION,
            "AWS::StackName": STACK,
            "AWS::URLSuffix": "amazonaws.com",
        }
        if logical in pseudo:
            return pseudo[logical]
        if logical in self.parameters:
            value = self.parameters[logical]
            return ",".join(value) if isinstance(value, list) else str(value)
        kind = self.resources[logical]["Type"]
        if kind == "AWS::SQS::Queue":
            return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{self.name(logical)}"
        if kind in ("AWS::SNS::Topic", "AWS::StepFunctions::StateMachine", "AWS::SecretsManager::Secret"):
            return self.arn(logical)
        return self.name(logical)

    def get_att(self, logical: str, attribute: str) -> str:
        if attribute == "Arn":
            return self.arn(logical)
        if attribute in ("QueueName", "Name", "TopicName"):
            return self.name(logical)
        if attribute == "QueueUrl":
            return self.ref(logical)
        raise ValueError(f"cannot resolve Fn::GetAtt {logical}.{attribute}")

    def resolve(self, node: Any) -> Any:
        """``node`` with every intrinsic replaced by its value in this stack."""
        if isinstance(node, list):
            return [self.resolve(n) for n in node]
        if not isinstance(node, dict):
            return node
        if len(node) != 1 or not next(iter(node)).startswith(("Fn::", "Ref")):
            return {k: self.resolve(v) for k, v in node.items()}
        [(function, args)] = node.items()
        if function == "Ref":  # (a list parameter's Ref is its list: a Join or a policy's Resource takes it so)
            value = self.parameters.get(args)
            return list(value) if isinstance(value, list) else self.ref(args)
        if function == "Fn::GetAtt":
            logical, attribute = args if isinstance(args, list) else args.split(".", 1)
            return self.get_att(logical, attribute)
        if function == "Fn::Sub":
            text, variables = (args, {}) if isinstance(args, str) else args
            values = {k: str(self.resolve(v)) for k, v in variables.items()}

            def substitute(match: re.Match[str]) -> str:
                name = match.group(1)
                if name in values:
                    return values[name]
                if "." in name:
                    return self.get_att(*name.split(".", 1))
                return self.ref(name)

            return re.sub(r"\$\{([^}!]+)\}", substitute, text)
        if function == "Fn::Join":
            separator, parts = args
            return separator.join(str(p) for p in self.resolve(parts))
        if function == "Fn::Select":
            index, values = args
            return self.resolve(values)[int(index)]
        if function == "Fn::Split":
            separator, text = args
            return str(self.resolve(text)).split(separator)
        raise ValueError(f"cannot resolve {function} in the {self.configuration} stack")

    def role_of(self, logical: str) -> str:
        """The logical id of the role a function or state machine runs as."""
        properties = self.resources[logical]["Properties"]
        role = properties.get("Role", properties.get("RoleArn"))
        if not (isinstance(role, dict) and "Fn::GetAtt" in role):
            raise ValueError(f"{logical}'s role is not one of the stack's: {role}")
        name: str = role["Fn::GetAtt"][0]
        return name

    def policies(self, role: str) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
        """A role's inline policies (name, document) resolved, and its managed policies' ARNs."""
        properties = self.resources[role]["Properties"]
        inline = [(p["PolicyName"], self.resolve(p["PolicyDocument"])) for p in properties.get("Policies", [])]
        return inline, [str(self.resolve(a)) for a in properties.get("ManagedPolicyArns", [])]

    def environment(self, logical: str) -> dict[str, str]:
        """What a function is configured with (Globals merged, as SAM does); resolved once per function
        (the check asks for it at each of its calls)."""
        if logical not in self._environments:
            variables = self.resources[logical]["Properties"].get("Environment", {}).get("Variables", {})
            self._environments[logical] = {name: str(self.resolve(value)) for name, value in variables.items()}
        return dict(self._environments[logical])

    def callers(self) -> dict[str, str]:
        """Every Lambda function and state machine of the stack, by logical id: its role."""
        kinds = ("AWS::Lambda::Function", "AWS::StepFunctions::StateMachine")
        return {name: self.role_of(name) for name, r in self.resources.items() if r["Type"] in kinds}


@functools.lru_cache(maxsize=32)
def _stack(configuration: str, text: str) -> Stack:
    return Stack._made(configuration, text)

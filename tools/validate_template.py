"""``make validate``: cfn-lint on template.yaml, then an offline SAM translation of it.

The translation is what ``sam deploy`` asks CloudFormation to do, done here with no AWS account:
local CodeUri/ContentUri/DefinitionUri paths (which ``sam build``/``sam package`` turn into S3 objects) are
replaced by placeholder S3 URIs, and no managed policies are looked up (the template uses none).
CloudFormation runs ``AWS::LanguageExtensions`` first, which resolves every ``Fn::If`` whose condition
rests on parameters alone; that is done here too, once for each ``AuthMode``, once with every
optional hardening parameter given (a customer-managed key, a VPC, access logs, alarm and notify
emails, a concurrency limit) and once with the optional Strands layer (``StrandsAgents``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

TEMPLATE = Path(__file__).resolve().parents[1] / "template.yaml"


class _NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}


# The parameters each translation is made with (beside the defaults): both ways people are authorized.
AUTH_MODES: dict[str, dict[str, Any]] = {
    "IAM": {"AuthMode": "IAM"},
    "JWT": {"AuthMode": "JWT", "JwtIssuer": "https://issuer.example.com", "JwtAudience": ["inbox-client"]},
}
HARDENED: dict[str, Any] = {
    "KmsKeyArn": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    "SubnetIds": ["subnet-0a", "subnet-0b"],
    "SecurityGroupIds": ["sg-0a"],
    "AccessLogBucket": "access-logs-bucket",
    "AlarmEmail": "ops@example.com",
    "NotifyEmail": "approvers@example.com",
    "FunctionConcurrencyLimit": 20,
}
# The optional Strands layer, created and given to every function.
STRANDS: dict[str, Any] = {"StrandsAgents": "true"}


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


def resolve_language_extensions(template: dict[str, Any], parameters: dict[str, Any]) -> dict[str, Any]:
    """``template`` with each ``Fn::If`` on a parameter-only condition replaced by its chosen branch
    (``AWS::NoValue`` dropping the property), as ``AWS::LanguageExtensions`` does before SAM runs."""
    values = {name: p.get("Default") for name, p in template.get("Parameters", {}).items()} | parameters
    for name, declared in template.get("Parameters", {}).items():
        if declared.get("Type") == "CommaDelimitedList" and isinstance(values.get(name), str):
            values[name] = [v for v in values[name].split(",") if v]
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
    template = resolve_language_extensions(template, parameters or {})
    for name, resource in template["Resources"].items():
        properties = resource.get("Properties", {})
        for uri in ("CodeUri", "ContentUri", "DefinitionUri"):
            if isinstance(properties.get(uri), str) and not properties[uri].startswith("s3://"):
                properties[uri] = f"s3://placeholder-bucket/{name}.zip"
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    translated: dict[str, Any] = transform(template, parameters or {}, _NoManagedPolicies())
    return translated


def check_state_machine() -> int:
    """Parse the state machine (substitutions resolved) as Step Functions' interpreter does, and check
    that every transition names a state. Returns how many states it has."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    from resumable.config import Settings
    from resumable.local.template import state_machine_definition

    text = state_machine_definition(Settings())
    AmazonStateLanguageParser.parse(text)
    definition = json.loads(text)
    if definition.get("QueryLanguage", "JSONPath") != "JSONPath":
        raise ValueError("the state machine must use JSONPath")
    states = definition["States"]
    targets = [definition["StartAt"]]
    for state in states.values():
        targets += [state.get("Next"), state.get("Default")]
        targets += [c.get("Next") for c in state.get("Choices", []) + state.get("Catch", [])]
    missing = sorted({t for t in targets if t is not None and t not in states})
    if missing:
        raise ValueError(f"the state machine moves to states it does not have: {missing}")
    return len(states)


def main() -> int:
    lint = subprocess.run([str(Path(sys.executable).parent / "cfn-lint"), str(TEMPLATE)], check=False)
    if lint.returncode != 0:
        print(f"cfn-lint found problems in {TEMPLATE.name} (exit {lint.returncode})")
        return lint.returncode
    translations = [*AUTH_MODES.items(), ("IAM and every hardening parameter", HARDENED), ("IAM and Strands", STRANDS)]
    for mode, parameters in translations:
        translated = translate(yaml_parse(TEMPLATE.read_text()), parameters)
        kinds = sorted({r["Type"] for r in translated["Resources"].values()})
        print(
            f"cfn-lint: clean; SAM translation with AuthMode={mode}: {len(translated['Resources'])} resources "
            f"({', '.join(kinds)})"
        )
    print(f"state machine: {check_state_machine()} states, parsed as Step Functions would, every transition known")
    return 0


if __name__ == "__main__":
    sys.exit(main())

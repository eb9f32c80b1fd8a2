"""What a role grants, held to what is used: each granted action (a wildcard expanded to every action
it covers) on each resource it names must be reached by a call, and no grant may reach past the
stack's own resources; and the calls AWS makes with the caller's credentials on its behalf (KMS,
where a customer-managed key encrypts what it reaches), which botocore never sees."""

from __future__ import annotations

import functools
from typing import Any

from resumable.local.permissions.calls import STATE_MACHINE
from resumable.local.permissions.policy import matches_action, matches_resource, statements
from resumable.local.permissions.stack import ACCOUNT, PARTITION, REGION, Stack

# Where an IAM prefix's actions are listed: botocore's models of the services that answer it.
_SERVICES = {
    "dynamodb": ("dynamodb", "dynamodbstreams"),
    "states": ("stepfunctions",),
    "bedrock": ("bedrock-runtime", "bedrock"),
    "lambda": ("lambda",),
    "sqs": ("sqs",),
    "s3": ("s3",),
    "events": ("events",),
    "kms": ("kms",),
    "sns": ("sns",),
}
# IAM actions that are no operation's name (or several operations').
_EXTRA_ACTIONS = (
    "lambda:InvokeFunction",
    "s3:ListBucket",
    "s3:GetObjectVersion",
    "s3:PutObjectTagging",
    "dynamodb:ConditionCheckItem",
    "bedrock:InvokeModel",
    "bedrock:InvokeModelWithResponseStream",
)

# A resource of each service that is not the stack's: a grant that reaches it reaches too far.
_FOREIGN = {
    "dynamodb": [f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/another-stacks-table"],
    "s3": [f"arn:{PARTITION}:s3:::another-stacks-bucket", f"arn:{PARTITION}:s3:::another-stacks-bucket/key"],
    "events": [f"arn:{PARTITION}:events:{REGION}:{ACCOUNT}:event-bus/another-bus"],
    "sqs": [f"arn:{PARTITION}:sqs:{REGION}:{ACCOUNT}:another-queue"],
    "lambda": [f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:function:another-function"],
    "states": [f"arn:{PARTITION}:states:{REGION}:{ACCOUNT}:stateMachine:another"],
    "kms": [f"arn:{PARTITION}:kms:{REGION}:{ACCOUNT}:key/another-key"],
    "bedrock": [f"arn:{PARTITION}:bedrock:{REGION}::foundation-model/another-model"],
}

_WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"}
_ENCRYPTED_KINDS = ("AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::SQS::Queue")


@functools.cache
def _actions(prefix: str) -> frozenset[str]:
    import botocore.session

    session = botocore.session.get_session()
    names = {
        f"{prefix}:{op}"
        for service in _SERVICES.get(prefix, ())
        for op in session.get_service_model(service).operation_names
    }
    return frozenset(names | {a for a in _EXTRA_ACTIONS if a.startswith(f"{prefix}:")})


def expanded(pattern: str) -> list[str]:
    """The actions an Action element names: itself, or every action its wildcard covers."""
    if "*" not in pattern and "?" not in pattern:
        return [pattern]
    prefix = pattern.split(":", 1)[0].lower()
    if prefix not in _SERVICES:
        raise ValueError(f"the check cannot list the actions {pattern} covers (no model of {prefix})")
    return sorted(a for a in _actions(prefix) if matches_action(pattern, a))


def reaches_beyond(action: str, resource: str) -> bool:
    """Whether ``resource`` (a grant's) also names a resource that is not the stack's."""
    return any(matches_resource(resource, foreign) for foreign in _FOREIGN.get(action.split(":", 1)[0].lower(), []))


def implied(stack: Stack, caller: str, reached: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The KMS calls AWS makes with the caller's credentials where KmsKeyArn encrypts what it reaches:
    Lambda decrypting the function's environment; S3 reading (Decrypt) and writing (GenerateDataKey) an
    object; SQS taking a message (both); DynamoDB reading (Decrypt) and writing (both) the table."""
    key = str(stack.parameters.get("KmsKeyArn") or "")
    if not key:
        return []
    found: set[tuple[str, str]] = set()
    if caller != STATE_MACHINE and key in str(stack.resolve(stack.resources[caller]["Properties"].get("KmsKeyArn"))):
        found.add(("kms:Decrypt", key))
    encrypted = {
        stack.arn(n)
        for n, r in stack.resources.items()
        if r["Type"] in _ENCRYPTED_KINDS and key in str(stack.resolve(r.get("Properties", {})))
    }
    for action, arn in reached:
        service, _, operation = action.partition(":")
        if not any(arn == e or arn.startswith(e + "/") for e in encrypted):
            continue
        if service == "s3":
            found.add(("kms:GenerateDataKey" if operation.startswith("Put") else "kms:Decrypt", key))
        elif service == "sqs":
            found |= {("kms:GenerateDataKey", key), ("kms:Decrypt", key)}
        elif service == "dynamodb" and "/stream/" not in arn:
            found.add(("kms:Decrypt", key))
            if operation in _WRITES:
                found.add(("kms:GenerateDataKey", key))
    return sorted(found)


def unused(
    role: str,
    inline: list[tuple[str, dict[str, Any]]],
    reached: list[tuple[str, str]],
    excused: Any,
) -> list[str]:
    """What each Allow of ``inline`` grants that no call in ``reached`` uses (unless ``excused(action, resource=)``
    says why), or that reaches past the stack's resources; NotAction and NotResource are refused."""
    found = []
    for name, document in inline:
        for statement in statements([document]):
            if statement.get("Effect") != "Allow":
                continue
            if "NotAction" in statement or "NotResource" in statement:
                found.append(
                    f"its role {role} grants with NotAction or NotResource ({name}): name what it needs instead"
                )
                continue
            actions, resources = statement.get("Action", []), statement.get("Resource", [])
            where = statement.get("Sid") or name
            for pattern in [actions] if isinstance(actions, str) else actions:
                for resource in [resources] if isinstance(resources, str) else resources:
                    found += _judged(role, where, pattern, resource, reached, excused)
    return found


def _judged(
    role: str, where: str, pattern: str, resource: str, reached: list[tuple[str, str]], excused: Any
) -> list[str]:
    """What is wrong with granting ``pattern`` on ``resource``: one line for a wildcard, however many
    actions it covers, saying which the calls use."""
    covered = expanded(pattern)
    past = [a for a in covered if reaches_beyond(a, resource) and not excused(a, broad=True)]
    used = sorted({a for a in covered for b, r in reached if a.lower() == b.lower() and matches_resource(resource, r)})
    idle = [a for a in covered if a not in past and not excused(a, resource=resource) and a not in used]
    granted = f"its role {role} grants {pattern} on {resource} ({where})"
    problems = []
    if past:
        problems.append(f"{granted}, which reaches past the stack's own resources: name them")
    if idle and pattern == covered[0] and len(covered) == 1:
        problems.append(
            f"{granted}, which no recorded call uses: remove it from template.yaml, or say why in ALLOWANCES "
            "(resumable/local/permissions/check.py)"
        )
    elif idle and not past:
        calls = ", ".join(used) or "none of them"
        idle_share = f"{len(idle)} of its {len(covered)} actions"
        problems.append(f"{granted}: {idle_share} no recorded call uses (the calls use {calls}): grant those instead")
    return problems

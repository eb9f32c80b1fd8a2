"""The permission check: every AWS call a function (or the state machine) makes is allowed by its role
in every configuration of the stack, and every action a role grants is used by some call, or listed
in ``ALLOWANCES`` with the reason it is granted all the same.

The calls are those the test suite records (``resumable.local.permissions.calls``), in ``tests/aws_calls.txt``
(the suite fails when it makes a call that file lacks, or, run whole, when it lists one no longer made).
``python -m resumable.local.permissions`` runs the check."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from resumable.local.permissions.calls import (
    API_URL_PARAMETER,
    APP_SECRETS,
    APP_SETTINGS,
    BEDROCK_MODELS,
    DURABLE_WORKFLOWS,
    LINK_KEY,
    STATE_MACHINE,
    TOPIC,
    Call,
    read_calls,
)
from resumable.local.permissions.configurations import CONFIGURATIONS
from resumable.local.permissions.grants import implied, unused
from resumable.local.permissions.managed import MANAGED
from resumable.local.permissions.policy import evaluate
from resumable.local.permissions.stack import ACCOUNT, PARTITION, REGION, Stack

# Granted, yet no call the tests record uses it: (caller, or "*" for every one; action) -> why.
ALLOWANCES: dict[tuple[str, str], str] = {
    ("SlackFunction", "bedrock:InvokeModel"): "a turn a click resumes calls its agents' Bedrock models "
    "(BedrockModelIds), as on SubmitApproval, where the tests reach it",
    ("*", "bedrock:InvokeModelWithResponseStream"): "a Strands BedrockModel calls ConverseStream by default "
    "(BedrockModelIds, with StrandsAgents); the tests' Strands trees run offline models",
    ("*", "states:SendTaskSuccess"): "whichever function settles a turn a workflow waits on tells it, "
    "success or failure by how it settled; the tests reach some of the pairs, every one can happen",
    ("*", "states:SendTaskFailure"): "as SendTaskSuccess",
    ("*", "lambda:SendDurableExecutionCallbackSuccess"): "whichever function settles a turn a durable function "
    "waits on tells it, success or failure by how it settled (the Sweeper where that could not); the tests reach "
    "some of the pairs, every one can happen",
    ("*", "lambda:SendDurableExecutionCallbackFailure"): "as SendDurableExecutionCallbackSuccess",
    ("SweeperFunction", "lambda:SendDurableExecutionCallbackHeartbeat"): "the Sweeper keeps a durable function "
    "that waits with a heartbeat timeout alive; the tests reach it from a service that runs turns itself, whose "
    "calls are not the Sweeper's (tests/deployed.py's CONTINUE_OR_RUN)",
    ("SubmitApprovalFunction", "sqs:SendMessage"): "Lambda sends a continuation that failed every "
    "attempt to ContinuationDeadLetterQueue (the EventInvokeConfig's OnFailure) with the function's role",
    # The Slack function answers a click as SubmitApproval answers a request, and so may resume the turn:
    # the paths a resumed turn may take are reached by the tests on SubmitApproval.
    ("SlackFunction", "sqs:SendMessage"): "Lambda sends a click or an event that failed every attempt to "
    "SlackDeadLetterQueue (the EventInvokeConfig's OnFailure) with the function's role",
    ("SlackFunction", "dynamodb:DeleteItem"): "a turn a click resumes may abandon an action it began (the "
    "journal's abandon_action), as on SubmitApproval, where the tests reach it",
    ("SlackFunction", "s3:ListBucket"): "a turn a click resumes may find its snapshot missing: without "
    "ListBucket S3 says AccessDenied, not NoSuchKey (reached on SubmitApproval)",
    ("SlackFunction", "lambda:InvokeFunction"): "a turn a click resumes that runs past TURN_BUDGET_SECONDS is "
    "continued by SubmitApproval (CONTINUE_FUNCTION), as from any function (reached on SubmitApproval)",
    ("SlackFunction", "ssm:GetParametersByPath"): "a turn a click resumes builds its agents, whose factory reads "
    "the app settings (AppSettingsPath), as on SubmitApproval, where the tests reach it",
    ("SlackFunction", "secretsmanager:GetSecretValue"): "beside Slack's own secret, the app secrets "
    "(AppSecretArns) the agents' factory reads when a click resumes a turn, as on SubmitApproval",
}


# Granted on resources past the stack's own, for a reason: (caller, or "*"; action) -> why.
BROAD: dict[tuple[str, str], str] = {
    ("*", "states:SendTaskSuccess"): "IAM cannot scope a service integration's task tokens: '*' is the only resource",
    ("*", "states:SendTaskFailure"): "as SendTaskSuccess",
    ("*", "bedrock:InvokeModel"): "an inference profile of BedrockModelIds routes to its foundation model in any "
    "of the Regions it spans: foundation models only, through those profiles only (bedrock:InferenceProfileArn)",
    ("*", "bedrock:InvokeModelWithResponseStream"): "as InvokeModel: a profile's foundation models, through it",
}


def _excuser(caller: str) -> Any:
    def excused(action: str, broad: bool = False, resource: str = "") -> bool:
        listed = BROAD if broad else ALLOWANCES
        if not broad and action.startswith("bedrock:InvokeModel") and _other_form(resource):
            return True
        return any((who, a) in listed for who in (caller, "*") for a in (action, action.lower()))

    return excused


def _other_form(resource: str) -> bool:
    """Whether ``resource`` (a grant's) names a model of BedrockModelIds in the form it does not have: the
    template prefixes each id as a foundation model and as an inference profile alike (a Join's literal
    separator is all that can prefix a list's items), and the form a model is not names nothing."""
    model = resource.rpartition("/")[2]
    profile = model.partition(".")[0] in PROFILE_REGIONS
    return (":foundation-model/" in resource and profile) or (":inference-profile/" in resource and not profile)


@dataclass(frozen=True)
class Problem:
    configuration: str
    caller: str
    text: str

    def __str__(self) -> str:
        return f"{self.caller} ({self.configuration}): {self.text}"


def _environment(stack: Stack, caller: str) -> dict[str, str]:
    if caller != STATE_MACHINE:
        return stack.environment(caller)
    # The state machine names the table through its TableName substitution; its functions by ARN.
    substitutions = stack.resources[caller]["Properties"].get("DefinitionSubstitutions", {})
    return {"RESUMABLE_TABLE": str(stack.resolve(substitutions.get("TableName", "")))}


# What stands for the part of a resource the recording generalized (an S3 key's rest, a stream's
# label): a grant must allow a short name and a deep one alike.
SAMPLES = ("x", "x/y/z.json")


def resource_arn(stack: Stack, call: Call, sample: str = SAMPLES[0]) -> str:
    """The ARN the call reaches in ``stack`` (``sample`` standing for what the recording generalized);
    ValueError where the caller's configuration names nothing."""
    if call.resource == "*":
        return "*"
    service, _, rest = call.resource.partition(":")
    environment = _environment(stack, call.function)

    def named(text: str) -> str:
        def value(match: re.Match[str]) -> str:
            variable = match.group(1)
            if not environment.get(variable):
                raise ValueError(f"reaches what {variable} names, and its environment does not set {variable}")
            if variable in (APP_SETTINGS, API_URL_PARAMETER):  # (a path: the whole of it)
                return environment[variable]
            return environment[variable].rsplit("/", 1)[-1].rsplit(":", 1)[-1]

        resolved = re.sub(r"\$\{(\w+)\}", value, text)
        return resolved.replace("*", sample)

    where = f"{REGION}:{ACCOUNT}"
    if service == "lambda" and call.function == STATE_MACHINE and "${" not in rest:
        logical = rest.rsplit(":", 1)[-1]  # the embedded AWS names a template function by its logical id
        if logical not in stack.resources:
            raise ValueError(f"invokes {rest}, which is not a function of the stack")
        return stack.arn(logical)
    if "${" not in rest:
        raise ValueError(f"reaches {rest}, which no variable of its configuration names (a test's own resource?)")
    resource = named(rest)
    arns = {
        "dynamodb": f"arn:{PARTITION}:dynamodb:{where}:{resource}",
        "s3": f"arn:{PARTITION}:s3:::{resource}",
        "events": f"arn:{PARTITION}:events:{where}:{resource}",
        "sqs": f"arn:{PARTITION}:sqs:{where}:{resource}",
        "lambda": f"arn:{PARTITION}:lambda:{where}:function:{resource.removeprefix('function/')}",
        "secretsmanager": f"arn:{PARTITION}:secretsmanager:{where}:secret:{resource}",
        "ssm": f"arn:{PARTITION}:ssm:{where}:{resource}",
        "kms": f"arn:{PARTITION}:kms:{where}:{resource}",
        "sns": f"arn:{PARTITION}:sns:{where}:{resource}",
    }
    if service not in arns:
        raise ValueError(f"no ARN known for {call.resource}")
    return arns[service]


# What a stack may leave unset: where it does, the calls that reach what they name are never made (the app's
# settings and secrets, which resumable.aws.app_settings asks for only where configured; the decision links'
# key, without DecisionLinksAnswerAs; NotifyEmail's topic, without which nobody is mailed; durable functions'
# callbacks, none of which any turn then keeps).
OPTIONAL = (APP_SETTINGS, APP_SECRETS, BEDROCK_MODELS, DURABLE_WORKFLOWS, LINK_KEY, TOPIC)


def _made_in(stack: Stack, call: Call) -> bool:
    """Whether ``call`` can be made in ``stack``: not where it reaches what an unset optional variable names."""
    environment = _environment(stack, call.function)
    unset = [v for v in OPTIONAL if "${" + v + "}" in call.resource and not environment.get(v)]
    return not unset


# Where each geography's cross-Region inference profiles route (a sample of the Regions each spans).
PROFILE_REGIONS = {
    "us": ("us-east-1", "us-west-2"),
    "eu": ("eu-central-1", "eu-west-1"),
    "apac": ("ap-northeast-1", "ap-southeast-2"),
    "us-gov": ("us-gov-west-1",),
    "jp": ("ap-northeast-1", "ap-northeast-3"),
    "au": ("ap-southeast-2", "ap-southeast-4"),
    "ca": ("ca-central-1", "ca-west-1"),
    "global": ("us-east-1", "eu-west-1", "ap-northeast-1"),
}


def requests(stack: Stack, call: Call, sample: str = SAMPLES[0]) -> list[tuple[str, dict[str, str]]]:
    """The requests AWS authorizes for the call, each an ARN and its condition keys: one, or each secret of
    the application's (``${APP_SECRETS}``: a call reaches one of them, so each must be allowed), or each
    model of BedrockModelIds (``${BEDROCK_MODEL_IDS}``): a foundation model, or an inference profile and
    the foundation model it routes to in each Region it spans, through it."""
    variable = next(
        (v for v in (APP_SECRETS, BEDROCK_MODELS, DURABLE_WORKFLOWS) if call.resource.endswith(f"${{{v}}}")), None
    )
    if variable is None:
        return [(resource_arn(stack, call, sample), {})]
    listed = [one for one in _environment(stack, call.function).get(variable, "").split(",") if one]
    if not listed:
        raise ValueError(f"reaches what {variable} names, and its environment does not set {variable}")
    if variable == APP_SECRETS:
        return [(arn, {}) for arn in listed]
    if variable == DURABLE_WORKFLOWS:  # (Lambda authorizes a callback against its execution's ARN, a version's)
        executions = ("1/durable-execution/claim-17/0a1b2c", "$LATEST/durable-execution/claim-17/0a1b2c")
        return [(f"{function}:{execution}", {}) for function in listed for execution in executions]
    found: list[tuple[str, dict[str, str]]] = []
    for model in listed:
        geography, _, rest = model.partition(".")
        if geography not in PROFILE_REGIONS:
            found.append((f"arn:{PARTITION}:bedrock:{REGION}::foundation-model/{model}", {}))
            continue
        profile = f"arn:{PARTITION}:bedrock:{REGION}:{ACCOUNT}:inference-profile/{model}"
        found.append((profile, {}))
        for region in PROFILE_REGIONS[geography]:
            through = {"bedrock:InferenceProfileArn": profile}
            found.append((f"arn:{PARTITION}:bedrock:{region}::foundation-model/{rest}", through))
    return found


def _documents(stack: Stack, role: str) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
    inline, managed = stack.policies(role)
    unknown = [arn for arn in managed if arn not in MANAGED]
    if unknown:
        raise ValueError(f"{role} has managed policies the check does not know: {unknown}")
    return inline, [MANAGED[arn] for arn in managed]


def check(
    calls: Iterable[Call], configurations: Iterable[str] = tuple(CONFIGURATIONS), text: str | None = None
) -> list[Problem]:
    """Every problem: a call its caller's role does not allow, or a grant no call uses (nor an allowance),
    in template.yaml (or the template ``text``)."""
    calls, configurations = sorted(set(calls)), list(configurations)
    problems: list[Problem] = []
    made: set[str] = set()
    for configuration in configurations:
        stack = Stack.of(configuration, text)
        callers = stack.callers()
        made |= set(callers)
        # (a function made only under a condition, the Slack function, is checked where it is made)
        for caller in sorted({c.function for c in calls} - set(callers) - stack.absent):
            problems.append(Problem(configuration, caller, "made calls, and the stack has no such function"))
        reached: dict[str, list[tuple[str, str]]] = {}
        for caller, role in callers.items():
            inline, managed = _documents(stack, role)
            documents = [document for _, document in inline] + managed
            for call in (c for c in calls if c.function == caller and _made_in(stack, c)):
                try:
                    asked = requests(stack, call)
                except ValueError as error:
                    problems.append(Problem(configuration, caller, f"{call.action}: {error}"))
                    continue
                reached.setdefault(caller, []).extend((call.action, arn) for arn, _ in asked)
                for sample in SAMPLES if "*" in call.resource else SAMPLES[:1]:
                    for reaches, context in requests(stack, call, sample):
                        decision = evaluate(documents, call.action, reaches, context=context)
                        if decision.allowed:
                            continue
                        problems.append(
                            Problem(
                                configuration,
                                caller,
                                f"calls {call.action} on {reaches}, which its role {role} does not allow "
                                f"({decision.reason}): grant {call.action} on it in {caller}'s Policies in "
                                "template.yaml",
                            )
                        )
            for action, arn in implied(stack, caller, reached.get(caller, [])):
                reached.setdefault(caller, []).append((action, arn))
                decision = evaluate(documents, action, arn)
                if not decision.allowed:
                    problems.append(
                        Problem(
                            configuration,
                            caller,
                            f"needs {action} on {arn} (AWS calls it as the caller: KmsKeyArn encrypts what the "
                            f"caller reaches), which its role {role} does not allow ({decision.reason})",
                        )
                    )
            texts = unused(role, inline, reached.get(caller, []), _excuser(caller))
            problems += [Problem(configuration, caller, text) for text in texts]
        problems += _deliveries(stack)
    everywhere = set(configurations) == set(CONFIGURATIONS)
    for caller in sorted({c.function for c in calls} - made if everywhere else ()):
        problems.append(Problem("every configuration", caller, "made calls, and no configuration makes the function"))
    return problems


def _deliveries(stack: Stack) -> list[Problem]:
    """Each rule that delivers to one of the stack's SNS topics may publish to it: the topic's
    policies allow ``events.amazonaws.com`` ``sns:Publish`` from that rule (as ``aws:SourceArn``)."""
    found = []
    topics = {stack.ref(n): n for n, r in stack.resources.items() if r["Type"] == "AWS::SNS::Topic"}
    policies = [r["Properties"] for r in stack.resources.values() if r["Type"] == "AWS::SNS::TopicPolicy"]
    for rule, resource in stack.resources.items():
        if resource["Type"] != "AWS::Events::Rule":
            continue
        for target in resource["Properties"].get("Targets", []):
            topic = topics.get(str(stack.resolve(target["Arn"])))
            if topic is None:
                continue
            documents = [
                stack.resolve(p["PolicyDocument"]) for p in policies if stack.resolve(p["Topics"]) == [stack.ref(topic)]
            ]
            source = {"aws:SourceArn": stack.arn(rule)}
            decision = evaluate(documents, "sns:Publish", stack.arn(topic), "events.amazonaws.com", source)
            if not decision.allowed:
                found.append(
                    Problem(
                        stack.configuration,
                        rule,
                        f"delivers to {topic}, whose policy does not let events.amazonaws.com publish from it "
                        f"({decision.reason}): nothing it matches would reach the topic",
                    )
                )
    return found


def report(problems: Iterable[Problem]) -> list[str]:
    """One line a problem, with the configurations it shows in ("every configuration" where all)."""
    where: dict[tuple[str, str], list[str]] = {}
    for problem in problems:
        where.setdefault((problem.caller, problem.text), []).append(problem.configuration)
    lines = []
    for (caller, text), configurations in sorted(where.items()):
        shown = "every configuration" if len(configurations) == len(CONFIGURATIONS) else ", ".join(configurations)
        lines.append(f"{caller} ({shown}): {text}")
    return lines


def main() -> int:
    calls = read_calls()
    problems = report(check(calls))
    callers = sorted({c.function for c in calls})
    if problems:
        print(f"permission check: {len(problems)} problem(s) with the roles in template.yaml:")
        print("\n".join(f"  {line}" for line in problems))
        return 1
    print(
        f"permission check: {len(calls)} recorded calls of {len(callers)} callers allowed, and every grant used "
        f"or allowed for its reason, in {len(CONFIGURATIONS)} configurations ({', '.join(CONFIGURATIONS)})"
    )
    return 0

"""Every AWS call the functions and the state machine make (tests/aws_calls.txt, recorded by the suite)
is allowed by their roles in template.yaml as the deploy expands them, in every configuration, and
every action a role grants is used by a call or allowed for a stated reason."""

from __future__ import annotations

import inspect

import pytest

from resumable.local.permissions.calls import Call, read_calls
from resumable.local.permissions.check import ALLOWANCES, BROAD, check, report
from resumable.local.permissions.configurations import CONFIGURATIONS
from resumable.local.permissions.managed import MANAGED
from resumable.local.permissions.stack import Stack, template
from resumable.service.service import Service
from tests.deployed import SERVED_BY


def test_every_recorded_call_is_allowed_and_every_grant_is_used() -> None:
    assert report(check(read_calls())) == []


def test_the_recording_covers_every_function_and_the_state_machine() -> None:
    callers = {c.function for c in read_calls()}
    # (every function: the Slack function, and the sample durable workflow, too)
    stacks = [Stack.of("Slack and decision links"), Stack.of("the sample durable workflow")]
    assert callers == {caller for stack in stacks for caller in stack.callers()}


def test_a_call_the_role_does_not_grant_is_named_with_its_function_and_missing_action() -> None:
    # Negative control: the publisher's PutEvents grant removed from template.yaml.
    granted = "Action: [events:PutEvents]"
    assert template().count(granted) == 1
    problems = report(
        check(read_calls(), ["AuthMode=IAM"], template().replace(granted, "Action: [events:DescribeEventBus]"))
    )
    assert any(
        line.startswith("PublisherFunction (AuthMode=IAM): calls events:PutEvents on ")
        and "event-bus/resumable-events, which its role PublisherFunctionRole does not allow" in line
        for line in problems
    ), problems


def test_a_grant_no_call_uses_is_named() -> None:
    granted = "Action: [events:PutEvents]"
    more = template().replace(granted, "Action: [events:PutEvents, events:ListRules]")
    problems = set(report(check(read_calls(), ["AuthMode=IAM"], more))) - set(
        report(check(read_calls(), ["AuthMode=IAM"]))
    )
    assert problems == {
        "PublisherFunction (AuthMode=IAM): its role PublisherFunctionRole grants events:ListRules on "
        "arn:aws:events:us-east-1:123456789012:event-bus/resumable-events (PublisherFunctionRolePolicy0), which no "
        "recorded call uses: remove it from template.yaml, or say why in ALLOWANCES "
        "(resumable/local/permissions/check.py)"
    }


def test_a_call_its_configuration_does_not_name_is_refused() -> None:
    stray = {
        Call("CancelFunction", "dynamodb:GetItem", "dynamodb:table/some-test-table"),
        Call("CancelFunction", "events:PutEvents", "events:event-bus/${EVENT_BUS_NAME}"),
        Call("NoSuchFunction", "s3:GetObject", "s3:${RESUMABLE_BUCKET}/snapshots/*"),
    }
    problems = report(check(read_calls() | stray, ["AuthMode=IAM"]))
    assert (
        "CancelFunction (AuthMode=IAM): dynamodb:GetItem: reaches table/some-test-table, which no variable of its "
        "configuration names (a test's own resource?)" in problems
    )
    assert (
        "CancelFunction (AuthMode=IAM): events:PutEvents: reaches what EVENT_BUS_NAME names, and its environment "
        "does not set EVENT_BUS_NAME" in problems
    )
    assert "NoSuchFunction (AuthMode=IAM): made calls, and the stack has no such function" in problems


def test_every_configuration_takes_each_condition_both_ways() -> None:
    stacks = [Stack.of(configuration) for configuration in CONFIGURATIONS]
    conditions = stacks[0].conditions
    assert len(conditions) >= 9
    assert {name: {stack.holds(name) for stack in stacks} for name in conditions} == {
        name: {True, False} for name in conditions
    }


@pytest.mark.parametrize("listed", [ALLOWANCES, BROAD], ids=["allowances", "broad"])
def test_every_allowance_excuses_a_grant_the_check_would_otherwise_name(
    listed: dict[tuple[str, str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One that excuses nothing would silently excuse a future grant."""
    calls = read_calls()
    for key in list(listed):
        with monkeypatch.context() as without_it:
            without_it.delitem(listed, key)
            assert report(check(calls)) != [], f"{key} excuses nothing: remove it"


def test_every_use_case_is_served_by_a_function_of_the_template() -> None:
    use_cases = {
        name
        for name, member in inspect.getmembers(Service, inspect.isfunction)
        if not name.startswith("_") and name not in ("continued_by",)
    }
    assert use_cases == set(SERVED_BY)
    made = {*Stack.of("AuthMode=IAM").callers(), *Stack.of("Slack and decision links").callers()}
    assert set(SERVED_BY.values()) <= made  # (the links' function is made with DecisionLinksAnswerAs)


def without(granted: str, instead: str = "") -> str:
    """template.yaml with one grant (its exact text, found once) replaced."""
    assert template().count(granted) == 1, granted
    return template().replace(granted, instead)


INDENT = " " * 14


def test_a_wildcard_or_a_grant_past_the_stack_is_named_even_where_a_call_uses_part_of_it() -> None:
    put_events = f"Action: [events:PutEvents]\n{INDENT}Resource: [!GetAtt EventBus.Arn]"
    broad = without(put_events, f'Action: ["events:*"]\n{INDENT}Resource: "*"')
    problems = report(check(read_calls(), ["AuthMode=IAM"], broad))
    past = "(PublisherFunctionRolePolicy0), which reaches past the stack's own resources: name them"
    role = "PublisherFunction (AuthMode=IAM): its role PublisherFunctionRole grants"
    assert f"{role} events:* on * {past}" in problems
    # Within the stack, a wildcard is named once, with the actions the calls use.
    table = f'Action: ["dynamodb:*"]\n{INDENT}Resource: [!GetAtt TurnsTable.Arn]'
    wide = without(
        "Action: [dynamodb:GetItem, dynamodb:BatchGetItem, dynamodb:Query, dynamodb:UpdateItem]"
        f"\n{INDENT}Resource: [!GetAtt TurnsTable.Arn]",
        table,
    )
    [line] = [p for p in report(check(read_calls(), ["AuthMode=IAM"], wide)) if "dynamodb:*" in p]
    assert line.startswith(f"{role} dynamodb:* on arn:aws:dynamodb:us-east-1:123456789012:table/resumable-TurnsTable-")
    uses = "the calls use dynamodb:BatchGetItem, dynamodb:GetItem, dynamodb:Query, dynamodb:UpdateItem"
    assert "(NumberEachEventInItsSession): " in line and line.endswith(
        f"no recorded call uses ({uses}): grant those instead"
    )


def test_a_not_action_grant_is_refused() -> None:
    sid = "            - Sid: DeadLetterWhatCanNeverBePublished\n"
    everything = without(
        sid, f'            - Effect: Allow\n{INDENT}NotAction: ["iam:*"]\n{INDENT}Resource: "*"\n{sid}'
    )
    problems = report(check(read_calls(), ["AuthMode=IAM"], everything))
    assert any("PublisherFunctionRole grants with NotAction or NotResource" in p for p in problems), problems


def test_a_grant_written_by_hand_names_nothing_cloudformation_makes() -> None:
    bucket = 'Resource: !Sub "${SnapshotsBucket.Arn}/*"'
    handwritten = template().replace(
        bucket, 'Resource: !Sub "arn:${AWS::Partition}:s3:::${AWS::StackName}-SnapshotsBucket/*"'
    )
    problems = report(check(read_calls(), ["AuthMode=IAM"], handwritten))
    made = "StartTurnFunction (AuthMode=IAM): calls s3:PutObject on arn:aws:s3:::resumable-snapshotsbucket-"
    assert any(p.startswith(made) for p in problems), problems


def test_the_customer_managed_key_is_required_where_it_encrypts_what_a_caller_reaches() -> None:
    statement = (
        "            - !If\n              - HasKmsKey\n              - Sid: UseTheCustomerManagedKey\n"
        "                Effect: Allow\n                Action: [kms:Decrypt, kms:GenerateDataKey]\n"
        "                Resource: !Ref KmsKeyArn\n              - !Ref AWS::NoValue\n\n  CursorSecret:"
    )
    problems = report(check(read_calls(), ["every hardening parameter"], without(statement, "\n  CursorSecret:")))
    key = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    assert problems == [
        f"ApprovalStateMachine (every hardening parameter): needs {action} on {key} (AWS calls it as the caller: "
        "KmsKeyArn encrypts what the caller reaches), which its role ApprovalStateMachineRole does not allow "
        "(no statement allows it)"
        for action in ("kms:Decrypt", "kms:GenerateDataKey")
    ]


def test_the_state_machines_role_and_the_streams_reads_are_held_to_their_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    sid = f"            - Sid: StoreTheTaskTokenOnTheTurn\n{INDENT}Effect: Allow\n{INDENT}"
    reads_only = without(f"{sid}Action: [dynamodb:UpdateItem]\n", f"{sid}Action: [dynamodb:GetItem]\n")
    problems = report(check(read_calls(), ["AuthMode=IAM"], reads_only))
    calls_update = "ApprovalStateMachine (AuthMode=IAM): calls dynamodb:UpdateItem on "
    assert any(p.startswith(calls_update) for p in problems), problems
    # The stream is read with the Publisher's role, by the managed policy SAM attaches for its mapping.
    reader = "arn:aws:iam::aws:policy/service-role/AWSLambdaDynamoDBExecutionRole"
    narrowed = ["dynamodb:DescribeStream", "dynamodb:GetShardIterator"]
    monkeypatch.setitem(MANAGED, reader, {"Statement": [{"Effect": "Allow", "Action": narrowed, "Resource": "*"}]})
    problems = report(check(read_calls(), ["AuthMode=IAM"]))
    assert any(p.startswith("PublisherFunction (AuthMode=IAM): calls dynamodb:GetRecords on ") for p in problems)


def test_a_grant_must_cover_every_key_the_recording_generalized_not_only_a_short_one() -> None:
    narrow = template().replace(
        'Resource: !Sub "${SnapshotsBucket.Arn}/*"', 'Resource: !Sub "${SnapshotsBucket.Arn}/*/x"'
    )
    problems = report(check(read_calls(), ["AuthMode=IAM"], narrow))
    assert any(
        "calls s3:PutObject on arn:aws:s3:::resumable-snapshotsbucket-" in p and "/snapshots/x/y/z.json," in p
        for p in problems
    ), problems


def test_the_app_settings_and_secrets_are_granted_to_the_functions_that_build_agents_and_no_other() -> None:
    """Negative controls: the grant of the settings' path taken away, then one of the two secrets'."""
    configuration = "an application's agents"
    assert report(check(read_calls(), [configuration])) == []
    settings = "Action: [ssm:GetParametersByPath]"
    assert template().count(settings) == 3  # StartTurn, SubmitApproval, Slack
    problems = report(check(read_calls(), [configuration], template().replace(settings, "Action: [ssm:GetParameter]")))
    for function in ("StartTurnFunction", "SubmitApprovalFunction"):
        assert (
            f"{function} ({configuration}): calls ssm:GetParametersByPath on "
            f"arn:aws:ssm:us-east-1:123456789012:parameter/team/orders, which its role {function}Role does not allow"
        ) in "\n".join(problems)
    secrets = "Resource: !Ref AppSecretArns"
    assert template().count(secrets) == 3
    first_only = template().replace(secrets, "Resource: !Select [0, !Ref AppSecretArns]")
    problems = report(check(read_calls(), [configuration], first_only))
    assert any(
        line.startswith(f"StartTurnFunction ({configuration}): calls secretsmanager:GetSecretValue on ")
        and "secret:team/orders/webhook-GhIjKl, which its role" in line
        for line in problems
    ), problems
    readers = {c.function for c in read_calls() if c.resource.endswith(("${APP_SETTINGS_PATH}", "${APP_SECRETS}"))}
    assert readers == {"StartTurnFunction", "SubmitApprovalFunction"}
    for function in ("GetTurnFunction", "CancelFunction", "PublisherFunction", "SweeperFunction"):
        environment = Stack.of(configuration).environment(function)
        assert "APP_SECRETS" not in environment and "APP_SETTINGS_PATH" not in environment, function


def test_every_model_of_bedrock_model_ids_is_granted_and_no_other() -> None:
    """A foundation model directly; a cross-Region inference profile, and its foundation model in each Region
    it routes to but only through it; an unlisted model not at all. Negative control: the grant through the
    profiles taken away."""
    from resumable.local.permissions.check import _documents
    from resumable.local.permissions.configurations import BEDROCK
    from resumable.local.permissions.policy import evaluate

    stack = Stack.of("Bedrock models")
    inline, _ = _documents(stack, stack.role_of("StartTurnFunction"))
    documents = [document for _, document in inline]
    foundation, profile = BEDROCK
    profile_arn = f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{profile}"
    routed = f"arn:aws:bedrock:us-west-2::foundation-model/{profile.removeprefix('us.')}"

    def allowed(arn: str, **context: str) -> bool:
        return evaluate(documents, "bedrock:InvokeModel", arn, context=context or None).allowed

    assert allowed(f"arn:aws:bedrock:eu-west-1::foundation-model/{foundation}")
    assert allowed(profile_arn)
    assert allowed(routed, **{"bedrock:InferenceProfileArn": profile_arn})
    assert not allowed(routed), "its foundation model, called directly, is not one of BedrockModelIds"
    assert not allowed("arn:aws:bedrock:us-east-1::foundation-model/meta.llama3-70b-instruct-v1:0")
    other = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.meta.llama3-70b-instruct-v1:0"
    assert not allowed(routed, **{"bedrock:InferenceProfileArn": other})

    indent = "\n" + " " * 16
    through = f"Sid: CallTheModelsThroughTheirProfiles{indent}Effect: Allow{indent}Action: [bedrock:InvokeModel, "
    assert template().count(through) == 3
    streams_only = template().replace(through, through.removesuffix("bedrock:InvokeModel, "))
    problems = report(check(read_calls(), ["Bedrock models"], streams_only))
    assert any(
        line.startswith("StartTurnFunction (Bedrock models): calls bedrock:InvokeModel on ")
        and f"foundation-model/{profile.removeprefix('us.')}, which its role" in line
        for line in problems
    ), problems


def test_a_model_id_or_secret_arn_that_would_widen_or_miss_its_grant_is_refused_by_the_template() -> None:
    """CloudFormation holds each item of a CommaDelimitedList to its AllowedPattern."""
    import re

    from resumable.local.functions import load_template

    parameters = load_template()["Parameters"]

    def takes(name: str, value: str) -> bool:
        return re.fullmatch(parameters[name]["AllowedPattern"], value) is not None

    for model in ("", "anthropic.claude-3-5-haiku-20241022-v1:0", "us.anthropic.claude-3-5-sonnet-20241022-v2:0"):
        assert takes("BedrockModelIds", model), model
    for model in ("*", "anthropic.*", "us.?nthropic", "arn:aws:bedrock:us-east-1::foundation-model/x", " x"):
        assert not takes("BedrockModelIds", model), model
    whole = "arn:aws:secretsmanager:us-east-1:123456789012:secret:team/orders-api-token-AbCdEf"
    assert takes("AppSecretArns", whole) and takes("AppSecretArns", "")
    for partial in (whole.removesuffix("-AbCdEf"), "orders-api-token", "arn:aws:secretsmanager:*:*:secret:*"):
        assert not takes("AppSecretArns", partial), partial


def test_only_the_sweeper_may_sign_the_audit_trails_digests() -> None:
    """Negative controls: kms:Sign granted to GetTurn too is named (no call of it signs), and the
    Sweeper's grant taken away leaves its signing call refused."""
    also = without("Action: [kms:Verify]", "Action: [kms:Verify, kms:Sign]")
    problems = report(check(read_calls(), ["AuthMode=IAM"], also))
    assert any(
        p.startswith("GetTurnFunction (AuthMode=IAM): its role GetTurnFunctionRole grants kms:Sign on ")
        and "which no recorded call uses" in p
        for p in problems
    ), problems
    unsigned = without("Action: [kms:Sign]", "Action: [kms:GetPublicKey]")
    problems = report(check(read_calls(), ["AuthMode=IAM"], unsigned))
    assert any(p.startswith("SweeperFunction (AuthMode=IAM): calls kms:Sign on ") for p in problems), problems


def test_the_callbacks_of_the_durable_functions_named_and_no_others_may_be_completed() -> None:
    """Each of DurableWorkflowFunctionArns, unqualified and as a version or alias runs it; no other
    function; nothing where none is named. Negative control: the versions' half of the grant taken away."""
    from resumable.local.permissions.check import _documents
    from resumable.local.permissions.configurations import APP
    from resumable.local.permissions.policy import evaluate

    configuration = "an application's agents"
    stack = Stack.of(configuration)
    inline, _ = _documents(stack, stack.role_of("SubmitApprovalFunction"))
    documents = [document for _, document in inline]

    def allowed(arn: str) -> bool:
        return evaluate(documents, "lambda:SendDurableExecutionCallbackSuccess", arn).allowed

    # (Lambda authorizes a callback against its execution's ARN: a version's, never an alias's or the function's)
    for function in APP["DurableWorkflowFunctionArns"]:
        assert allowed(f"{function}:7/durable-execution/claim-17/0a1b") and allowed(
            f"{function}:$LATEST/durable-execution/c/1"
        )
        assert not allowed(function), function
    # Every function that settles turns may complete them (the Sweeper's calls are not recorded: it
    # tells what a settling could not); only the Sweeper keeps them alive.
    settling = ("StartTurn", "SubmitApproval", "Cancel", "GetTurn", "Slack", "Sweeper")
    with_slack = Stack.of("Slack, with an application's agents")
    for name in (*settling, "Publisher"):
        role = [document for _, document in _documents(with_slack, with_slack.role_of(f"{name}Function"))[0]]
        arn = APP["DurableWorkflowFunctionArns"][0] + ":3/durable-execution/claim-17/0a1b"
        for action in ("Success", "Failure", "Heartbeat"):
            expected = name in settling and (action != "Heartbeat" or name == "Sweeper")
            got = evaluate(role, f"lambda:SendDurableExecutionCallback{action}", arn).allowed
            assert got == expected, (name, action)
    assert not allowed("arn:aws:lambda:us-east-1:123456789012:function:someone-elses:1/durable-execution/c/1")
    assert not allowed("arn:aws:lambda:us-east-1:123456789012:function:claims-pipeline-2:1/durable-execution/c/1")
    plain = Stack.of("AuthMode=IAM")
    inline, _ = _documents(plain, plain.role_of("SubmitApprovalFunction"))
    assert not any("lambda:SendDurableExecution" in str(document) for _, document in inline), "none named: none"

    versions = '- !Join [":*,", !Ref DurableWorkflowFunctionArns]\n                      - ":*"\n'
    assert template().count(versions) == 6  # StartTurn, SubmitApproval, Cancel, GetTurn, Slack, Sweeper
    unversioned = '- !Join [",", !Ref DurableWorkflowFunctionArns]\n                      - ""\n'
    unqualified_only = template().replace(versions, unversioned)
    problems = report(check(read_calls(), [configuration], unqualified_only))
    assert any(
        line.startswith(f"SubmitApprovalFunction ({configuration}): calls lambda:SendDurableExecutionCallbackSuccess")
        and "function:claims-pipeline:1/durable-execution/claim-17/0a1b2c, which its role" in line
        for line in problems
    ), problems


def test_the_sample_durable_workflows_callbacks_may_be_completed_where_the_stack_carries_it() -> None:
    """SampleDurableWorkflow true: every function that settles turns may complete the sample's callbacks
    (its executions' ARNs, a version's), only the Sweeper keep it alive, and the sample may start turns on
    StartTurn and nothing else. Negative control: SubmitApproval's grant taken away is named."""
    from resumable.local.permissions.check import _documents
    from resumable.local.permissions.policy import evaluate

    stack = Stack.of("the sample durable workflow")
    sample = stack.arn("ApprovalDurableFunction")
    assert sample.endswith("-ApprovalDurable"), sample
    for name in ("StartTurn", "SubmitApproval", "Cancel", "GetTurn", "Sweeper", "Publisher"):
        role = [document for _, document in _documents(stack, stack.role_of(f"{name}Function"))[0]]
        for action in ("Success", "Failure", "Heartbeat"):
            expected = name != "Publisher" and (action != "Heartbeat" or name == "Sweeper")
            for arn in (f"{sample}:1/durable-execution/claim-17/0a1b", f"{sample}:$LATEST/durable-execution/c/1"):
                assert evaluate(role, f"lambda:SendDurableExecutionCallback{action}", arn).allowed == expected
    own = [document for _, document in _documents(stack, stack.role_of("ApprovalDurableFunction"))[0]]
    assert evaluate(own, "lambda:InvokeFunction", stack.arn("StartTurnFunction")).allowed
    assert not evaluate(own, "lambda:InvokeFunction", stack.arn("SubmitApprovalFunction")).allowed

    # SubmitApproval's grant taken away (made to rest on another condition, false here).
    at = template().index("  SubmitApprovalFunction:")
    taken = template()[:at] + template()[at:].replace("- HasSampleDurableWorkflow", "- UseSlack", 1)
    problems = report(check(read_calls(), ["the sample durable workflow"], taken))
    assert any(
        line.startswith("SubmitApprovalFunction (the sample durable workflow): calls lambda:SendDurableExecution")
        and "-ApprovalDurable" in line
        for line in problems
    ), problems

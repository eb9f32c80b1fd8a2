"""Every AWS call the functions and the state machine make (tests/aws_calls.txt, recorded by the suite)
is allowed by their roles in template.yaml as the deploy expands them, in every configuration, and
every action a role grants is used by a call or allowed for a stated reason."""

from __future__ import annotations

import inspect

from resumable.local.permissions.calls import Call
from resumable.local.permissions.check import ALLOWANCES, check, read_calls, report
from resumable.local.permissions.stack import CONFIGURATIONS, Stack, template
from resumable.service.service import Service
from tests.deployed import SERVED_BY


def test_every_recorded_call_is_allowed_and_every_grant_is_used() -> None:
    assert report(check(read_calls())) == []


def test_the_recording_covers_every_function_and_the_state_machine() -> None:
    callers = {c.function for c in read_calls()}
    assert callers == set(Stack.of("AuthMode=IAM").callers())


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
        "recorded call uses: remove it from template.yaml, or say why in ALLOWANCES"
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
    taken: dict[str, set[bool]] = {}
    for configuration in CONFIGURATIONS:
        stack = Stack.of(configuration)
        kms = any("kms:Decrypt" in str(stack.policies(role)) for role in stack.callers().values())
        bedrock = any("bedrock:InvokeModel" in str(stack.policies(role)) for role in stack.callers().values())
        vpc = any("AWSLambdaVPCAccessExecutionRole" in str(stack.policies(role)) for role in stack.callers().values())
        for name, value in (("kms", kms), ("bedrock", bedrock), ("vpc", vpc)):
            taken.setdefault(name, set()).add(value)
    assert taken == {"kms": {True, False}, "bedrock": {True, False}, "vpc": {True, False}}


def test_every_allowance_is_granted_somewhere() -> None:
    # An allowance for a grant the template no longer makes would excuse a future one silently.
    granted = " ".join(
        str(stack.policies(role)) for stack in map(Stack.of, CONFIGURATIONS) for role in stack.callers().values()
    )
    assert [action for _, action in ALLOWANCES if action not in granted] == []


def test_every_use_case_is_served_by_a_function_of_the_template() -> None:
    use_cases = {
        name
        for name, member in inspect.getmembers(Service, inspect.isfunction)
        if not name.startswith("_") and name not in ("continued_by",)
    }
    assert use_cases == set(SERVED_BY)
    assert set(SERVED_BY.values()) <= set(Stack.of("AuthMode=IAM").callers())


def test_the_rule_that_tells_people_may_publish_to_their_topic() -> None:
    configuration = "every hardening parameter"  # (NotifyEmail given: the topic and its rule exist)
    assert [line for line in report(check([], [configuration])) if "delivers" in line] == []
    # Negative control: the topic's policy names another service.
    assert template().count("Service: events.amazonaws.com") == 1
    other = template().replace("Service: events.amazonaws.com", "Service: sqs.amazonaws.com")
    assert (
        "InteractionRequestedRule (every hardening parameter): delivers to NotifyTopic, whose policy does not let "
        "events.amazonaws.com publish from it (no statement allows it): nothing it matches would reach the topic"
    ) in report(check([], [configuration], other))

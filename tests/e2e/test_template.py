"""template.yaml declares what the code expects: the table and bucket the embedded AWS creates."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from resumable.local.events import Mapping
from resumable.local.functions import ROOT, load_template
from resumable.local.permissions.stack import read_template
from resumable.local.permissions.stack import template as stack_template
from resumable.metrics import METRICS
from resumable.store.resources import (
    BILLING_MODE,
    BUCKET_LIFECYCLE_RULES,
    OUTBOX_FILTER,
    REPUBLISH_FILTER,
    TABLE_ATTRIBUTES,
    TABLE_INDEXES,
    TABLE_KEY_SCHEMA,
    TABLE_STREAM,
    TTL_ATTRIBUTE,
)
from tools.validate_template import translate

# The sample durable workflow (SampleDurableWorkflow): not one of the service's functions, and none of their
# Globals (IgnoreGlobals); what it is is checked on its own (test_the_sample_durable_workflow_...).
SAMPLE = "ApprovalDurableFunction"


def _translated(parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    """template.yaml as the deploy makes it with ``parameters`` (beside the defaults), offline."""
    return translate(read_template(stack_template()), parameters)


@pytest.fixture(scope="module")
def resources() -> dict[str, Any]:
    found: dict[str, Any] = load_template()["Resources"]
    return found


def test_the_template_declares_the_table_the_embedded_aws_creates(resources: dict[str, Any]) -> None:
    table = resources["TurnsTable"]["Properties"]
    assert table["KeySchema"] == TABLE_KEY_SCHEMA
    assert sorted(table["AttributeDefinitions"], key=str) == sorted(TABLE_ATTRIBUTES, key=str)
    assert table["GlobalSecondaryIndexes"] == TABLE_INDEXES
    assert table["BillingMode"] == BILLING_MODE
    assert table["SSESpecification"] == {
        "SSEEnabled": True,
        "SSEType": ["HasKmsKey", "KMS", "AWS::NoValue"],  # !If, as read here
        "KMSMasterKeyId": ["HasKmsKey", "KmsKeyArn", "AWS::NoValue"],
    }
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["StreamSpecification"] == {"StreamViewType": TABLE_STREAM["StreamViewType"]}
    assert table["TimeToLiveSpecification"] == {"AttributeName": TTL_ATTRIBUTE, "Enabled": True}


def test_the_publisher_reads_only_outbox_items_from_the_stream_and_dead_letters_what_it_cannot_publish(
    resources: dict[str, Any],
) -> None:
    publisher = resources["PublisherFunction"]["Properties"]
    [source] = publisher["Events"].values()
    mapping = source["Properties"]
    assert source["Type"] == "DynamoDB"
    assert mapping["Stream"] == "TurnsTable.StreamArn"
    assert [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]] == [OUTBOX_FILTER, REPUBLISH_FILTER]
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BisectBatchOnFunctionError"] is True  # (the local loader keeps !GetAtt and !Ref as their text)
    assert 0 <= mapping["MaximumRetryAttempts"] <= 10, "a bounded retry count"
    assert mapping["DestinationConfig"]["OnFailure"] == {
        "Type": "SQS",
        "Destination": "PublisherDeadLetterQueue.Arn",
    }
    variables = publisher["Environment"]["Variables"]
    assert variables["EVENT_BUS_NAME"] == "EventBus"
    assert variables["DEAD_LETTER_QUEUE_URL"] == "PublisherDeadLetterQueue"
    local = Mapping.of_template()
    assert (local.batch_size, local.bisect, local.retries) == (
        mapping["BatchSize"],
        True,
        mapping["MaximumRetryAttempts"],
    )


def test_only_the_publisher_mails_the_notify_email_topic_and_nothing_on_the_bus_reaches_it(
    resources: dict[str, Any],
) -> None:
    """The e-mail is sent from what the table holds (resumable.events.mail): no rule of the bus targets
    the topic, whose policy refuses every publisher but the Publisher's role; it is encrypted, as its
    messages carry working links."""
    topic = resources["NotifyTopic"]
    assert topic["Condition"] == resources["NotifyTopicPolicy"]["Condition"] == "HasNotifyEmail"
    assert topic["Properties"]["KmsMasterKeyId"] == ["HasKmsKey", "KmsKeyArn", "alias/aws/sns"]
    rules = [r for r in resources.values() if r["Type"] == "AWS::Events::Rule"]
    assert not [t for r in rules for t in r["Properties"].get("Targets", []) if t.get("Arn") == "NotifyTopic"]
    refusal, *listening = resources["NotifyTopicPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert (refusal["Effect"], refusal["Principal"], refusal["Action"]) == ("Deny", "*", "sns:Publish")
    assert refusal["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": "PublisherFunctionRole.Arn"}}
    # (its messages carry working links: nothing but NotifyEmail's mailbox is subscribed; each condition
    # denies alone, as a statement of its own)
    assert [(s["Effect"], s["Principal"], s["Action"]) for s in listening] == [("Deny", "*", "sns:Subscribe")] * 2
    assert [s["Condition"] for s in listening] == [
        {"StringNotEquals": {"sns:Protocol": "email"}},
        {"StringNotEquals": {"sns:Endpoint": "NotifyEmail"}},
    ]
    publisher = resources["PublisherFunction"]["Properties"]
    assert publisher["Environment"]["Variables"]["NOTIFY_TOPIC_ARN"] == ["HasNotifyEmail", "NotifyTopic", ""]
    outputs = load_template()["Outputs"]
    assert {"EventBusName", "PublisherDeadLetterQueueUrl", "NotifyTopicArn"} <= outputs.keys()


def test_the_bucket_is_private_encrypted_and_tls_only(resources: dict[str, Any]) -> None:
    bucket = resources["SnapshotsBucket"]["Properties"]
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    [statement] = resources["SnapshotsBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert (statement["Effect"], statement["Condition"]) == ("Deny", {"Bool": {"aws:SecureTransport": "false"}})


def _as_s3_api(rule: dict[str, Any]) -> dict[str, Any]:
    """A CloudFormation lifecycle rule in the S3 API's shape (what the embedded AWS is given)."""
    converted: dict[str, Any] = {"ID": rule["Id"], "Status": rule["Status"]}
    if "TagFilters" in rule:
        [tag] = rule["TagFilters"]
        converted["Filter"] = {"Tag": tag}
    else:
        converted["Filter"] = {"Prefix": rule.get("Prefix", "")}
    if "ExpirationInDays" in rule:
        converted["Expiration"] = {"Days": rule["ExpirationInDays"]}
    if "AbortIncompleteMultipartUpload" in rule:
        converted["AbortIncompleteMultipartUpload"] = rule["AbortIncompleteMultipartUpload"]
    return converted


def test_the_bucket_lifecycle_is_the_one_the_embedded_aws_gets(resources: dict[str, Any]) -> None:
    rules = resources["SnapshotsBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    assert [_as_s3_api(rule) for rule in rules] == BUCKET_LIFECYCLE_RULES
    assert {"Key": "resumable-snapshot", "Value": "retired"} in rules[0]["TagFilters"]


def test_the_template_translates_offline_into_cloudformation() -> None:
    translated = _translated()
    kinds = {r["Type"] for r in translated["Resources"].values()}
    assert {
        "AWS::Lambda::Function",
        "AWS::ApiGatewayV2::Api",
        "AWS::DynamoDB::Table",
        "AWS::S3::Bucket",
        "AWS::Lambda::EventSourceMapping",
        "AWS::Events::EventBus",
        "AWS::Events::Rule",
        "AWS::SQS::Queue",
        "AWS::SNS::Topic",
    } <= kinds
    [mapping] = [
        r["Properties"] for r in translated["Resources"].values() if r["Type"] == "AWS::Lambda::EventSourceMapping"
    ]
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]] == [OUTBOX_FILTER, REPUBLISH_FILTER]


@pytest.mark.parametrize("mode", ["IAM", "JWT"])
def test_auth_mode_chooses_how_every_route_but_the_inbox_page_is_authorized(mode: str) -> None:
    from tools.validate_template import AUTH_MODES

    translated = _translated(AUTH_MODES[mode])
    body = translated["Resources"]["HttpApi"]["Properties"]["Body"]
    paths = {path: _made_if("UseSlack", ops) for path, ops in body["paths"].items()}
    security = {
        (path, method): _made_if("UseSlack", op).get("security")
        for path, ops in paths.items()
        for method, op in ops.items()
    }
    expected = [{"SignIn": []}] if mode == "JWT" else [{"AWS_IAM": []}]
    assert security.pop(("/inbox", "get")) == [{"NONE": []}]
    assert security.pop(("/slack/interactions", "post")) == [{"NONE": []}]  # (Slack signs it: the function checks)
    # (a decision link is its own credential: signed, bound to one question and one approver, used once)
    assert security.pop(("/decide/{token}", "get")) == security.pop(("/decide/{token}", "post")) == [{"NONE": []}]
    assert security and all(value == expected for value in security.values()), security
    schemes = body["components"]["securitySchemes"]
    if mode == "JWT":
        assert schemes["SignIn"]["x-amazon-apigateway-authorizer"] == {
            "type": "jwt",
            "identitySource": "$request.header.Authorization",
            "jwtConfiguration": {"issuer": {"Ref": "JwtIssuer"}, "audience": {"Ref": "JwtAudience"}},
        }
    else:
        assert "SignIn" not in schemes


def test_a_continuation_that_fails_every_attempt_goes_to_a_dead_letter_queue() -> None:
    translated = _translated()["Resources"]
    [config] = [
        r["Properties"]
        for r in translated.values()
        if r["Type"] == "AWS::Lambda::EventInvokeConfig" and r["Properties"]["FunctionName"]["Ref"] != "SlackFunction"
    ]
    assert config["FunctionName"] == {"Ref": "SubmitApprovalFunction"}
    assert (config["MaximumRetryAttempts"], config["MaximumEventAgeInSeconds"]) == (2, 3600)
    assert config["DestinationConfig"]["OnFailure"]["Destination"] == {
        "Fn::GetAtt": ["ContinuationDeadLetterQueue", "Arn"]
    }
    role = translated["SubmitApprovalFunctionRole"]["Properties"]
    statements = [s for p in role.get("Policies", []) for s in p["PolicyDocument"]["Statement"]]
    assert any("sqs:SendMessage" in str(s.get("Action")) for s in statements), "the function may not send to it"


def test_every_function_logs_to_a_group_of_its_own_kept_log_retention_days(resources: dict[str, Any]) -> None:
    functions = [name for name, r in resources.items() if r["Type"] == "AWS::Serverless::Function"]
    groups = [resources[name]["Properties"]["LoggingConfig"]["LogGroup"] for name in functions]
    assert len(set(groups)) == len(functions) == 9  # (the sample durable workflow's too)
    for group in groups:
        assert resources[group]["Type"] == "AWS::Logs::LogGroup"
        assert resources[group]["Properties"]["RetentionInDays"] == "LogRetentionDays"  # !Ref, as read here


def test_alarms_watch_every_function_both_dead_letter_queues_and_the_table(resources: dict[str, Any]) -> None:
    alarms = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    # What each watches, as this reader keeps the template's !Ref and !GetAtt: the name they point at.
    watched = {(a["Namespace"], a["MetricName"], a["Dimensions"][0]["Value"]) for a in alarms}
    functions = [name for name, r in resources.items() if r["Type"] == "AWS::Serverless::Function" and name != SAMPLE]
    for function in functions:
        assert ("AWS/Lambda", "Errors", function) in watched and ("AWS/Lambda", "Throttles", function) in watched
    for queue in ("PublisherDeadLetterQueue", "ContinuationDeadLetterQueue", "SlackDeadLetterQueue"):
        assert ("AWS/SQS", "ApproximateNumberOfMessagesVisible", f"{queue}.QueueName") in watched
    assert {m for n, m, _ in watched if n == "AWS/DynamoDB"} == {"ReadThrottleEvents", "WriteThrottleEvents"}
    # Each goes off on the first occurrence, and tells the alarm topic where there is one.
    for alarm in alarms:
        assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")
        assert alarm["AlarmActions"] == ["HasAlarmEmail", ["AlarmTopic"], "AWS::NoValue"]  # !If, as read here


def test_the_sweeper_runs_on_its_schedule_reads_its_index_and_an_alarm_watches_what_it_gives_up_on(
    resources: dict[str, Any],
) -> None:
    sweeper = resources["SweeperFunction"]["Properties"]
    [event] = sweeper["Events"].values()
    assert (event["Type"], event["Properties"]["Schedule"]) == ("Schedule", "SweepSchedule")
    assert load_template()["Parameters"]["SweepSchedule"]["Default"] == "rate(1 minute)"
    statements = sweeper["Policies"][0]["Statement"]
    [statement] = [s for s in statements if isinstance(s, dict) and s.get("Sid") == "ReadTheTurnsDueALook"]
    assert statement["Resource"] == "${TurnsTable.Arn}/index/gsi4"  # (that it suffices: tests/unit/test_permissions.py)
    alarm = resources["StuckTurnsAlarm"]["Properties"]
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == ("resumable", "StuckTurns", "Maximum")
    globals_ = load_template()["Globals"]["Function"]["Environment"]["Variables"]
    assert alarm["Namespace"] == globals_["POWERTOOLS_METRICS_NAMESPACE"]
    assert alarm["Dimensions"] == [{"Name": "service", "Value": globals_["POWERTOOLS_SERVICE_NAME"]}]


def test_the_dashboard_shows_every_metric_resumable_writes(resources: dict[str, Any]) -> None:
    body = resources["Dashboard"]["Properties"]["DashboardBody"]  # !Sub, as read here: its text
    referenced = set(re.findall(r"\$\{([^}]+)\}", body))
    assert {r.split(".")[0] for r in referenced} - {"AWS::Region", "AWS::StackName"} <= set(resources)
    shown = [
        metric
        for widget in json.loads(re.sub(r"\$\{[^}]+\}", "x", body))["widgets"]
        for metric in widget["properties"]["metrics"]
    ]
    ours = {(m[1], *[v for v in m[4:6] if isinstance(v, str)]) for m in shown if m[0] == "resumable"}
    for name, dimension in METRICS.items():
        expected = {(name,)} if dimension is None else {(name, dimension[0], v) for v in dimension[1]}
        assert expected <= ours, f"the dashboard does not show {name}"
    functions = {name for name, r in resources.items() if r["Type"] == "AWS::Serverless::Function" and name != SAMPLE}
    assert functions - {"SlackFunction", "DecisionLinksFunction"} <= referenced
    # (made only with a channel: named as its FunctionName names it, which holds whether or not it is made)
    assert resources["SlackFunction"]["Properties"]["FunctionName"] == "${AWS::StackName}-Slack"
    assert resources["DecisionLinksFunction"]["Properties"]["FunctionName"] == "${AWS::StackName}-DecisionLinks"
    assert body.count('"${AWS::StackName}-Slack"') == 3


def test_the_api_is_throttled_and_logs_who_called_and_functions_can_be_capped() -> None:
    translated = _translated({"FunctionConcurrencyLimit": 20})["Resources"]
    [stage] = [r["Properties"] for r in translated.values() if r["Type"] == "AWS::ApiGatewayV2::Stage"]
    assert stage["DefaultRouteSettings"] == {
        "ThrottlingRateLimit": {"Ref": "ApiRateLimit"},
        "ThrottlingBurstLimit": {"Ref": "ApiBurstLimit"},
    }
    logged = json.loads(stage["AccessLogSettings"]["Format"])
    assert {"requestId", "route", "status", "principal", "subject"} <= set(logged)
    assert stage["AccessLogSettings"]["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}
    functions = [r["Properties"] for n, r in translated.items() if r["Type"] == "AWS::Lambda::Function" and n != SAMPLE]
    assert len(functions) == 8
    assert all(f["ReservedConcurrentExecutions"] == {"Ref": "FunctionConcurrencyLimit"} for f in functions)
    uncapped = _translated()["Resources"]
    assert not any(
        "ReservedConcurrentExecutions" in r["Properties"]
        for r in uncapped.values()
        if r["Type"] == "AWS::Lambda::Function"
    )


def test_every_finding_the_security_scan_skips_says_why(resources: dict[str, Any]) -> None:
    skipped = [
        (name, skip)
        for name, resource in resources.items()
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
    ]
    assert skipped, "the template skips some of Checkov's checks"
    for name, skip in skipped:
        assert skip["id"].startswith("CKV_") and len(skip.get("comment", "")) > 20, (name, skip)


def test_the_hardening_parameters_encrypt_everything_with_the_key_and_put_the_functions_in_the_vpc() -> None:
    from tools.validate_template import HARDENED

    translated = _translated(HARDENED)["Resources"]
    key = {"Ref": "KmsKeyArn"}
    functions = {
        n: r["Properties"] for n, r in translated.items() if r["Type"] == "AWS::Lambda::Function" and n != SAMPLE
    }
    assert len(functions) == 8
    for name, function in functions.items():
        assert function["KmsKeyArn"] == key
        assert function["VpcConfig"] == {
            "SubnetIds": {"Ref": "SubnetIds"},
            "SecurityGroupIds": {"Ref": "SecurityGroupIds"},
        }
        role = translated[f"{name}Role"]["Properties"]
        assert "arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole" in role["ManagedPolicyArns"]
        statements = [s for p in role["Policies"] for s in p["PolicyDocument"]["Statement"]]
        assert any(s.get("Sid") == "UseTheCustomerManagedKey" and s["Resource"] == key for s in statements), name
    assert translated["TurnsTable"]["Properties"]["SSESpecification"]["KMSMasterKeyId"] == key
    encryption = translated["SnapshotsBucket"]["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert encryption["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key}
    assert translated["SnapshotsBucket"]["Properties"]["LoggingConfiguration"]["DestinationBucketName"] == {
        "Ref": "AccessLogBucket"
    }
    for name, resource in translated.items():
        if resource["Type"] == "AWS::Logs::LogGroup":
            assert resource["Properties"]["KmsKeyId"] == key, name
        if resource["Type"] in ("AWS::SQS::Queue", "AWS::SNS::Topic"):
            assert resource["Properties"]["KmsMasterKeyId"] == key, name
    plain = _translated()["Resources"]
    assert not any("VpcConfig" in r["Properties"] for r in plain.values() if r["Type"] == "AWS::Lambda::Function")
    assert all(
        "arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
        not in r["Properties"]["ManagedPolicyArns"]
        for r in plain.values()
        if r["Type"] == "AWS::IAM::Role" and "ManagedPolicyArns" in r["Properties"]
    ), "no VPC, no VPC permissions"


def test_the_strands_layer_is_made_and_given_to_every_function_only_when_strands_agents_is_true(
    resources: dict[str, Any],
) -> None:
    from tools.validate_template import STRANDS

    template = read_template(stack_template())
    assert template["Parameters"]["StrandsAgents"]["Default"] == "false"
    assert template["Conditions"]["UseStrands"] == {"Fn::Equals": [{"Ref": "StrandsAgents"}, "true"]}
    assert resources["StrandsLayer"]["Metadata"] == resources["SharedLayer"]["Metadata"], "built by layers/Makefile"
    for parameters, layers in [({}, ["SharedLayer"]), (STRANDS, ["SharedLayer", "StrandsLayer"])]:
        translated = _translated(parameters)["Resources"]
        functions = {
            n: r["Properties"] for n, r in translated.items() if r["Type"] == "AWS::Lambda::Function" and n != SAMPLE
        }
        assert len(functions) == 8
        for name, function in functions.items():
            given = [translated[layer["Ref"]]["Properties"]["LayerName"] for layer in function["Layers"]]
            assert given == layers, (parameters, name)
        [strands] = [r for r in translated.values() if r.get("Properties", {}).get("LayerName") == "StrandsLayer"]
        assert strands["Condition"] == "UseStrands", "CloudFormation makes it only when StrandsAgents is true"


def _made_if(condition: str, value: Any) -> Any:
    """What SAM made of a conditional function's route: the value where ``condition`` holds (the Slack
    function's; the DecisionLinks function's, under HasDecisionLinks, likewise)."""
    if isinstance(value, dict) and list(value) == ["Fn::If"] and value["Fn::If"][0] in (condition, "HasDecisionLinks"):
        return value["Fn::If"][1]
    return value


def test_the_slack_function_is_made_only_with_a_channel_and_hears_the_questions_on_the_bus() -> None:
    from resumable.local.permissions.configurations import SLACK
    from resumable.local.permissions.stack import Stack

    translated = _translated(SLACK)["Resources"]
    slack = [name for name, r in translated.items() if name.startswith("Slack")]
    assert all(translated[name].get("Condition") == "UseSlack" for name in slack), slack
    assert "SlackFunction" not in Stack.of("AuthMode=IAM").resources
    assert "SlackFunction" in Stack.of("Slack and decision links").resources
    rule = translated["SlackFunctionQuestions"]["Properties"]
    assert rule["EventBusName"] == {"Ref": "EventBus"}
    assert rule["EventPattern"]["detail-type"] == [
        "Interaction Requested",
        "Interaction Voted",
        "Interaction Answered",
        "Interaction Closed",
    ]
    [config] = [
        r["Properties"]
        for r in translated.values()
        if r["Type"] == "AWS::Lambda::EventInvokeConfig" and r["Properties"]["FunctionName"] == {"Ref": "SlackFunction"}
    ]
    assert config["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": ["SlackDeadLetterQueue", "Arn"]}
    environment = translated["SlackFunction"]["Properties"]["Environment"]["Variables"]
    assert environment["SLACK_SECRET_ARN"] == {"Ref": "SlackTokenSecretArn"}  # (the secret's name, not its value)


def test_no_functions_environment_holds_a_key_or_a_secrets_value() -> None:
    """What lambda:GetFunctionConfiguration shows signs nothing: no variable resolves a secret's value
    (a dynamic reference), and the keys are named by ARN only (the cursor key read at run time by
    GetTurn alone; the decision-link key in KMS)."""
    text = (ROOT / "template.yaml").read_text()
    assert "{{resolve:" not in text
    template = load_template()
    globals_ = template["Globals"]["Function"]["Environment"]["Variables"]
    assert "CURSOR_SECRET" not in globals_ and "CURSOR_SECRET_ARN" not in globals_
    assert globals_["DECISION_LINKS_KEY"][0] == "HasDecisionLinks"  # (!If: the key's ARN, or nothing)
    holders = {
        name
        for name, resource in template["Resources"].items()
        if "CURSOR_SECRET_ARN" in resource.get("Properties", {}).get("Environment", {}).get("Variables", {})
    }
    assert holders == {"GetTurnFunction"}
    assert (
        template["Resources"]["GetTurnFunction"]["Properties"]["Environment"]["Variables"]["CURSOR_SECRET_ARN"]
        == "CursorSecret"
    )


def test_every_route_without_an_authorizer_has_a_throttle_of_its_own_and_no_other_does() -> None:
    """A flood of anonymous requests (the page, Slack's route, decision links) is refused at its route's
    own limit, leaving the stage's to the signed routes: whichever of them the configuration makes."""
    from resumable.local.permissions.configurations import SLACK

    links = {k: SLACK[k] for k in ("DecisionLinksAnswerAs", "NotifyEmail")}
    slack_only = {k: v for k, v in SLACK.items() if k not in links}
    for parameters in ({}, slack_only, links, SLACK):
        translated = _translated(parameters)["Resources"]
        [stage] = [r["Properties"] for r in translated.values() if r["Type"] == "AWS::ApiGatewayV2::Stage"]
        body = translated["HttpApi"]["Properties"]["Body"]
        anonymous = {
            f"{method.upper()} {path}"
            for path, ops in body["paths"].items()
            for method, op in _made_if("UseSlack", ops).items()
            if _made_if("UseSlack", op).get("security") == [{"NONE": []}]
        }
        made = {"GET /inbox"} | ({"POST /slack/interactions"} if "SlackChannel" in parameters else set())
        made |= {"GET /decide/{token}", "POST /decide/{token}"} if "DecisionLinksAnswerAs" in parameters else set()
        assert anonymous >= made, parameters
        limits = {
            "ThrottlingRateLimit": {"Ref": "PublicRateLimit"},
            "ThrottlingBurstLimit": {"Ref": "PublicBurstLimit"},
        }
        assert stage["RouteSettings"] == dict.fromkeys(made, limits), parameters


def test_make_validates_translations_take_each_of_the_templates_conditions_both_ways(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """make validate lints the SAM translation in a few configurations: between them, each condition
    is taken true and false (a condition added to the template and left out of them is named, and
    make validate fails on one it takes one way)."""
    from tools import validate_template
    from tools.validate_template import TEMPLATE, _conditions_taken_one_way

    text = TEMPLATE.read_text()
    assert _conditions_taken_one_way(text) == []
    added = text.replace("Conditions:\n", "Conditions:\n  UseCanary: !Equals [!Ref AuthMode, CANARY]\n", 1)
    assert _conditions_taken_one_way(added) == ["UseCanary"]
    without_sign_in = {k: v for k, v in validate_template.TRANSLATIONS.items() if "JWT" not in k}
    monkeypatch.setattr(validate_template, "TRANSLATIONS", without_sign_in)
    assert validate_template.main() == 1
    said = capsys.readouterr().out
    assert "one way only" in said and "UseJwt" in said and "SAM translation" not in said, said


def test_make_validates_stamp_covers_every_file_of_this_project_its_check_imports_or_reads() -> None:
    """tools/checked.py runs make validate again only when a file of its READS changed: every module of
    this project the check imports (its translations and its state machine check, in a fresh interpreter)
    and the state machine it reads are among them, so no change to what it rests on keeps a stale pass."""
    import subprocess
    import sys

    from tools.checked import READS

    probe = (
        "import json, sys\n"
        "from tools import validate_template as v\n"
        "v._conditions_taken_one_way(v.TEMPLATE.read_text()); v.check_state_machine()\n"
        "print(json.dumps(sorted({getattr(m, '__file__', None) or '' for m in list(sys.modules.values())})))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert ran.returncode == 0, ran.stderr
    installed = str(ROOT / ".venv")  # (the packages pinned: constraints.txt)
    files = [f for f in json.loads(ran.stdout) if f.startswith(str(ROOT)) and not f.startswith(installed)]
    files += [str(ROOT / load_template()["Resources"]["ApprovalStateMachine"]["Properties"]["DefinitionUri"])]
    uncovered = [
        f for f in files if not any(f == str(ROOT / r) or f.startswith(str(ROOT / r) + "/") for r in READS["validate"])
    ]
    assert uncovered == [], (
        f"tools/checked.py's READS['validate'] leaves out what make validate reads: {uncovered[:20]}"
    )
    assert any(f.endswith("shared/resumable/local/template.py") for f in files), files


def test_the_sample_durable_workflow_is_made_only_when_asked_and_runs_as_a_durable_function(
    resources: dict[str, Any],
) -> None:
    from resumable.local.permissions.configurations import SAMPLE as WITH_SAMPLE

    template = read_template(stack_template())
    assert template["Parameters"]["SampleDurableWorkflow"]["Default"] == "false"
    sample = resources[SAMPLE]
    assert sample["Condition"] == "HasSampleDurableWorkflow" and sample["IgnoreGlobals"] == "*"
    assert sample["Metadata"]["BuildMethod"] == "makefile"  # (workflows/durable_approval/Makefile)
    translated = _translated(WITH_SAMPLE)["Resources"]
    function = translated[SAMPLE]["Properties"]
    assert function["Runtime"] in ("python3.13", "python3.14"), "a runtime durable functions run on"
    assert function["DurableConfig"]["ExecutionTimeout"] > 7 * 24 * 3600, "longer than wait_for_turn's own wait"
    assert "Layers" not in function, "the layers are python3.11's: the sample carries what it imports"
    assert function["Environment"]["Variables"] == {
        "RESUMABLE_START_TURN_FUNCTION": {"Fn::GetAtt": ["StartTurnFunction", "Arn"]}
    }
    aliases = [r["Properties"] for r in translated.values() if r["Type"] == "AWS::Lambda::Alias"]
    assert {"Ref": SAMPLE} in [a["FunctionName"] for a in aliases], "invoked by a qualified ARN, as it must be"

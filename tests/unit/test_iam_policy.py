"""The permission check's IAM policy evaluator, against the cases the IAM User Guide publishes: the
policy evaluation logic (explicit deny wins, an allow allows, else an implicit deny), wildcards in
actions and resources, NotAction and NotResource, and what it refuses to guess at."""

from __future__ import annotations

from typing import Any

import pytest

from resumable.local.permissions.policy import UnsupportedPolicyError, evaluate


def policy(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


BUCKET = "arn:aws:s3:::amzn-s3-demo-bucket"


def test_a_request_no_statement_allows_is_denied_implicitly() -> None:
    decision = evaluate(
        [policy({"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"{BUCKET}/*"})],
        "s3:PutObject",
        f"{BUCKET}/a",
    )
    assert (decision.allowed, decision.reason) == (False, "no statement allows it")
    assert evaluate([], "s3:GetObject", f"{BUCKET}/a").allowed is False


def test_an_explicit_deny_overrides_an_allow_in_any_policy() -> None:
    # The guide's example: s3:* allowed, then DeleteObject denied in another policy of the same role.
    allow_all = policy({"Sid": "AllS3", "Effect": "Allow", "Action": "s3:*", "Resource": "*"})
    deny_delete = policy({"Sid": "NoDeletes", "Effect": "Deny", "Action": "s3:DeleteObject", "Resource": f"{BUCKET}/*"})
    assert evaluate([allow_all, deny_delete], "s3:DeleteObject", f"{BUCKET}/report.csv").reason == "denied by NoDeletes"
    assert evaluate([allow_all, deny_delete], "s3:GetObject", f"{BUCKET}/report.csv").reason == "allowed by AllS3"


def test_actions_match_case_insensitively_and_by_wildcard() -> None:
    reads = [policy({"Effect": "Allow", "Action": "s3:Get*", "Resource": "*"})]
    assert evaluate(reads, "s3:GetObject", f"{BUCKET}/a").allowed
    assert evaluate(reads, "S3:getobject", f"{BUCKET}/a").allowed
    assert not evaluate(reads, "s3:PutObject", f"{BUCKET}/a").allowed
    assert not evaluate(reads, "s3x:GetObject", f"{BUCKET}/a").allowed  # the colon is no wildcard


def test_resources_match_case_sensitively_with_star_and_question_mark() -> None:
    one_character = [policy({"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"{BUCKET}/file?.txt"})]
    assert evaluate(one_character, "s3:GetObject", f"{BUCKET}/file1.txt").allowed
    assert not evaluate(one_character, "s3:GetObject", f"{BUCKET}/file10.txt").allowed
    assert not evaluate(one_character, "s3:GetObject", f"{BUCKET}/FILE1.txt").allowed
    # A dot is a dot, not any character.
    assert not evaluate(one_character, "s3:GetObject", f"{BUCKET}/file1xtxt").allowed


def test_objects_are_not_their_bucket() -> None:
    # The guide's common mistake: ListBucket on bucket/* allows nothing; it needs the bucket's ARN.
    objects = [policy({"Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetObject"], "Resource": f"{BUCKET}/*"})]
    assert not evaluate(objects, "s3:ListBucket", BUCKET).allowed
    assert evaluate(objects, "s3:GetObject", f"{BUCKET}/folder/deep/key").allowed  # * spans slashes


def test_a_wildcard_stays_within_its_arn_segment_unless_it_ends_it() -> None:
    function = "arn:aws:lambda:us-east-1:123456789012:function"
    within = [policy({"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": f"{function}:*-worker"})]
    assert evaluate(within, "lambda:InvokeFunction", f"{function}:orders-worker").allowed
    assert not evaluate(within, "lambda:InvokeFunction", f"{function}:orders:prod-worker").allowed
    # The guide: a * that is the last character of a segment can expand beyond the colons.
    beyond = [policy({"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": "arn:aws:lambda:*"})]
    assert evaluate(beyond, "lambda:InvokeFunction", f"{function}:orders:prod").allowed
    region = [
        policy(
            {"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": "arn:aws:dynamodb:us-*:123456789012:table/t"}
        )
    ]
    assert evaluate(region, "dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:123456789012:table/t").allowed
    assert not evaluate(region, "dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:999999999999:table/t").allowed
    table = [policy({"Effect": "Allow", "Action": "dynamodb:Query", "Resource": "arn:aws:dynamodb:*:*:table/t"})]
    assert not evaluate(table, "dynamodb:Query", "arn:aws:dynamodb:us-east-1:123456789012:table/t/index/gsi1").allowed


def test_not_action_allows_everything_else() -> None:
    # The guide's example: everything but IAM.
    all_but_iam = [policy({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"})]
    assert evaluate(all_but_iam, "s3:GetObject", f"{BUCKET}/a").allowed
    assert not evaluate(all_but_iam, "iam:CreateUser", "arn:aws:iam::123456789012:user/x").allowed


def test_deny_with_not_resource_denies_everywhere_else() -> None:
    # The guide's example: deny every S3 action outside one bucket.
    only_one_bucket = [
        policy(
            {"Effect": "Allow", "Action": "s3:*", "Resource": "*"},
            {"Sid": "OnlyThere", "Effect": "Deny", "Action": "s3:*", "NotResource": [BUCKET, f"{BUCKET}/*"]},
        )
    ]
    assert evaluate(only_one_bucket, "s3:GetObject", f"{BUCKET}/a").allowed
    assert evaluate(only_one_bucket, "s3:GetObject", "arn:aws:s3:::another-bucket/a").reason == "denied by OnlyThere"


def test_a_resource_policy_allows_the_named_service_only_from_the_named_source() -> None:
    # The guide's confused-deputy example: a topic policy letting EventBridge publish for one rule.
    topic, rule = "arn:aws:sns:us-east-1:123456789012:notify", "arn:aws:events:us-east-1:123456789012:rule/r"
    topic_policy = policy(
        {
            "Sid": "TheRule",
            "Effect": "Allow",
            "Principal": {"Service": "events.amazonaws.com"},
            "Action": "sns:Publish",
            "Resource": topic,
            "Condition": {"ArnEquals": {"aws:SourceArn": rule}},
        }
    )
    assert evaluate([topic_policy], "sns:Publish", topic, "events.amazonaws.com", {"aws:SourceArn": rule}).allowed
    assert not evaluate(
        [topic_policy], "sns:Publish", topic, "events.amazonaws.com", {"aws:SourceArn": f"{rule}-2"}
    ).allowed
    assert not evaluate([topic_policy], "sns:Publish", topic, "events.amazonaws.com").allowed  # no source: no match
    assert not evaluate([topic_policy], "sns:Publish", topic, "sqs.amazonaws.com", {"aws:SourceArn": rule}).allowed


def test_string_like_matches_case_sensitively_with_wildcards() -> None:
    bucket_policy = policy(
        {
            "Effect": "Allow",
            "Principal": "*",
            "Action": "s3:GetObject",
            "Resource": f"{BUCKET}/*",
            "Condition": {"StringLike": {"aws:Referer": ["https://www.example.com/*"]}},
        }
    )
    assert evaluate(
        [bucket_policy], "s3:GetObject", f"{BUCKET}/a", "*", {"aws:Referer": "https://www.example.com/p"}
    ).allowed
    assert not evaluate(
        [bucket_policy], "s3:GetObject", f"{BUCKET}/a", "*", {"aws:Referer": "https://WWW.example.com/p"}
    ).allowed


@pytest.mark.parametrize(
    "statement",
    [
        {"Effect": "Allow", "Action": "s3:*", "Resource": "*", "Condition": {"Bool": {"aws:SecureTransport": "true"}}},
        {"Effect": "Allow", "Action": "s3:*", "Resource": "*", "Principal": "*"},
        {"Effect": "Allow", "Action": "s3:*", "Resource": "*", "NotPrincipal": {"AWS": "x"}},
        {"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::bucket/${aws:username}/*"},
        {"Effect": "Allow", "Action": "s3:*", "NotAction": "iam:*", "Resource": "*"},
        {"Effect": "Maybe", "Action": "s3:*", "Resource": "*"},
    ],
)
def test_what_it_does_not_evaluate_it_refuses(statement: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedPolicyError):
        evaluate([policy(statement)], "s3:GetObject", f"{BUCKET}/bucket/a")


def test_condition_operators_test_what_they_say_and_keys_match_whatever_their_case() -> None:
    rule = "arn:aws:events:us-east-1:123456789012:rule/bus/r"

    def allowed(condition: dict[str, Any], context: dict[str, str]) -> bool:
        statement = {
            "Effect": "Allow",
            "Principal": {"Service": "events.amazonaws.com"},
            "Action": "sns:Publish",
            "Resource": "*",
            "Condition": condition,
        }
        return evaluate(
            [policy(statement)], "sns:Publish", "arn:aws:sns:us-east-1:123456789012:t", "events.amazonaws.com", context
        ).allowed

    # ArnLike and ArnEquals: segment by segment, wildcards allowed, a ? never a colon.
    for operator in ("ArnLike", "ArnEquals"):
        assert allowed(
            {operator: {"aws:SourceArn": "arn:aws:events:*:123456789012:rule/bus/*"}}, {"aws:SourceArn": rule}
        )
        assert not allowed(
            {operator: {"aws:SourceArn": "arn:aws:events:*:999999999999:rule/bus/*"}}, {"aws:SourceArn": rule}
        )
    assert not allowed(
        {"ArnLike": {"aws:SourceArn": "arn:aws:events:us-east-1?123456789012:rule/bus/r"}}, {"aws:SourceArn": rule}
    )
    # StringEquals: exactly; one of several values suffices, every key must hold.
    assert allowed(
        {"StringEquals": {"aws:SourceAccount": ["111111111111", "123456789012"]}}, {"aws:SourceAccount": "123456789012"}
    )
    assert not allowed({"StringEquals": {"aws:SourceAccount": "123456789012"}}, {"aws:SourceAccount": "12345678901"})
    both = {"StringEquals": {"aws:SourceAccount": "123456789012", "aws:SourceArn": rule}}
    assert not allowed(both, {"aws:SourceAccount": "123456789012", "aws:SourceArn": f"{rule}2"})
    # Condition keys are case-insensitive.
    assert allowed({"StringEquals": {"AWS:SOURCEACCOUNT": "123456789012"}}, {"aws:SourceAccount": "123456789012"})


def test_a_principal_is_matched_by_its_kind_and_a_deny_it_cannot_decide_is_refused() -> None:
    topic = "arn:aws:sns:us-east-1:123456789012:t"
    as_account = policy(
        {"Effect": "Allow", "Principal": {"AWS": "events.amazonaws.com"}, "Action": "sns:Publish", "Resource": topic}
    )
    assert not evaluate([as_account], "sns:Publish", topic, "events.amazonaws.com").allowed
    region_fenced = policy(
        {"Effect": "Allow", "Action": "s3:*", "Resource": "*"},
        {
            "Effect": "Deny",
            "Action": "*",
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:RequestedRegion": "eu-west-1"}},
        },
    )
    with pytest.raises(UnsupportedPolicyError, match="lacks"):
        evaluate([region_fenced], "s3:GetObject", f"{BUCKET}/a")
    variable = policy(
        {
            "Effect": "Allow",
            "Principal": "*",
            "Action": "s3:GetObject",
            "Resource": "*",
            "Condition": {"StringLike": {"s3:prefix": "${aws:username}/*"}},
        }
    )
    with pytest.raises(UnsupportedPolicyError, match="policy variables"):
        evaluate([variable], "s3:GetObject", f"{BUCKET}/a", "*", {"s3:prefix": "alice/x"})

"""The AWS managed policies SAM attaches to the template's roles, as the permission check reads them."""

from __future__ import annotations

from typing import Any

from resumable.local.permissions.stack import PARTITION

# The AWS managed policies SAM attaches, as AWS publishes them (the IAM managed policy reference):
# what Lambda itself needs (logs, traces, a VPC's network interfaces, a stream's records for the
# event source mapping). Their actions are AWS's to use, so they are not held to "used by a call".
MANAGED: dict[str, dict[str, Any]] = {
    f"arn:{PARTITION}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole": {
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": "*",
            }
        ]
    },
    f"arn:{PARTITION}:iam::aws:policy/AWSXrayWriteOnlyAccess": {
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [
                    "xray:PutTraceSegments",
                    "xray:PutTelemetryRecords",
                    "xray:GetSamplingRules",
                    "xray:GetSamplingTargets",
                    "xray:GetSamplingStatisticSummaries",
                ],
                "Resource": "*",
            }
        ]
    },
    f"arn:{PARTITION}:iam::aws:policy/service-role/AWSLambdaDynamoDBExecutionRole": {
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [
                    "dynamodb:DescribeStream",
                    "dynamodb:GetRecords",
                    "dynamodb:GetShardIterator",
                    "dynamodb:ListStreams",
                    "logs:CreateLogGroup",
                    "logs:CreateLogStream",
                    "logs:PutLogEvents",
                ],
                "Resource": "*",
            }
        ]
    },
    f"arn:{PARTITION}:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole": {
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [
                    "logs:CreateLogGroup",
                    "logs:CreateLogStream",
                    "logs:PutLogEvents",
                    "ec2:CreateNetworkInterface",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeSubnets",
                    "ec2:DeleteNetworkInterface",
                    "ec2:AssignPrivateIpAddresses",
                    "ec2:UnassignPrivateIpAddresses",
                ],
                "Resource": "*",
            }
        ]
    },
    # A durable function's (the sample durable workflow's): its SDK checkpoints and reads its execution.
    f"arn:{PARTITION}:iam::aws:policy/service-role/AWSLambdaBasicDurableExecutionRolePolicy": {
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [
                    "logs:CreateLogGroup",
                    "logs:CreateLogStream",
                    "logs:PutLogEvents",
                    "lambda:CheckpointDurableExecution",
                    "lambda:GetDurableExecutionState",
                ],
                "Resource": "*",
            }
        ]
    },
}

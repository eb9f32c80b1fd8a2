"""The stack's configurations the checks translate the template in (the permission check, make validate):
the parameters beside the defaults of each; together they take every condition of the template both ways."""

from __future__ import annotations

from typing import Any

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
    "AuditObjectLockDays": 2555,
}
# The optional Strands layer, created and given to every function.
STRANDS: dict[str, Any] = {"StrandsAgents": "true"}
# Bedrock models: a foundation model, and a cross-Region inference profile (which routes to another).
BEDROCK: list[str] = ["anthropic.claude-3-5-haiku-20241022-v1:0", "us.anthropic.claude-3-5-sonnet-20241022-v2:0"]
# An application's own agents (app/): their factory (the app layer the functions that build agents get),
# their settings, secrets and models; and the team's durable functions that wait for its turns.
APP: dict[str, Any] = {
    "AgentFactory": "orders.agents:build_agents",
    "AppSettingsPath": "/team/orders",
    "AppSecretArns": [
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:orders-api-token-AbCdEf",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:team/orders/webhook-GhIjKl",
    ],
    "BedrockModelIds": BEDROCK,
    "DurableWorkflowFunctionArns": [
        "arn:aws:lambda:us-east-1:123456789012:function:claims-pipeline",
        "arn:aws:lambda:us-east-1:123456789012:function:deploy-pipeline",
    ],
}
# The ways in from chat and mail: the Slack function (made only when a channel is set), and
# one-click decision links.
SLACK: dict[str, Any] = {
    "DecisionLinksAnswerAs": "arn:aws:iam::123456789012:user/approver",
    "NotifyEmail": "approvers@example.com",
    "SlackChannel": "C0APPROVALS",
    "SlackTokenSecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:resumable-slack-AbCdEf",
    "SlackTeams": ["T0TEAM"],
}

# The sample durable workflow (ApprovalDurableFunction), whose callbacks the functions that settle turns complete.
SAMPLE: dict[str, Any] = {"SampleDurableWorkflow": "true"}


# The parameters beside the defaults each configuration is translated with; together they take every
# condition of the template both ways.
CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "AuthMode=IAM": AUTH_MODES["IAM"],
    "AuthMode=JWT": AUTH_MODES["JWT"],
    "every hardening parameter": HARDENED,
    "Bedrock models": {"BedrockModelIds": BEDROCK},
    "Strands": STRANDS,
    "an application's agents": APP,
    "Slack and decision links": SLACK,
    "Slack and decision links, hardened": {**HARDENED, **SLACK},
    "Slack, with an application's agents": {**SLACK, **APP},
    "the sample durable workflow": SAMPLE,
    "the sample durable workflow, with an application's": {**APP, **SAMPLE},
}

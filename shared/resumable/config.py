"""Settings, read from the environment once at the edge and passed down."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

if TYPE_CHECKING:
    from resumable.runtime.approval import ApprovalPolicy


MAX_INDEX_SHARDS = 64
"""A page of the inbox reads every shard: more than this would make each page a hundred Queries."""
MAX_SNAPSHOT_ITEM_BYTES = 64 * 1024
"""The most ``SNAPSHOT_ITEM_BYTES`` may be: an item of the table holds at most 400 KB, and past 8 KB a
snapshot costs more as an item (a write unit a KB, to put it and again to retire it) than as an object."""


class Settings(BaseModel):
    """Where the store lives and how the service behaves.

    Environment variables: ``RESUMABLE_TABLE``, ``RESUMABLE_BUCKET``, ``AWS_REGION`` (or
    ``AWS_DEFAULT_REGION``), ``AWS_ENDPOINT_URL`` (LocalStack, the embedded AWS), ``AGENT_FACTORY``
    (``module:function``), ``APPROVAL_EXPIRY_SECONDS``, ``LEASE_SECONDS``, ``TURN_BUDGET_SECONDS`` (how
    long one invocation runs a turn before it checkpoints it and continues it asynchronously, when
    it can), ``CONTINUE_FUNCTION`` (the Lambda function that continues turns: SubmitApproval),
    ``STALL_SECONDS`` (how long a checkpointed or fully answered turn may sit before a read asks for
    another continuation), ``SWEEP_LIMIT`` (how many turns one run of the sweeper looks at, at most),
    ``INDEX_SHARDS`` (how many partitions each deployment-wide index (the inbox, the sweeper's, the
    audit trail's days) is spread over; raise it, never lower it: see docs/scale.md),
    ``RETENTION_DAYS`` (how long a settled turn's records, and a session's after its last turn, are
    kept; a deleted session's, from its deletion), ``SNAPSHOT_ITEM_BYTES`` (snapshots of at most this
    many bytes are kept as items of the table instead of objects of the bucket: docs/snapshots.md; 0,
    the default, keeps every one in the bucket),
    ``APPROVER_PRINCIPALS``
    (comma-separated IAM principal ARNs, ``*`` wildcards allowed, that may read and answer every
    session, not only their own), ``EVENT_BUS_NAME`` (the bus the publisher puts events on),
    ``API_URL`` (the HTTP API's base URL, for the answer links in events), ``DEAD_LETTER_QUEUE_URL``
    (where the publisher sends an outbox record it can never publish), ``NOTIFY_TOPIC_ARN`` (the SNS
    topic the publisher tells of each question, for NotifyEmail: resumable.events.mail), ``CURSOR_SECRET_ARN`` (the
    Secrets Manager secret whose value signs the cursors of the inbox and the audit trail, read at run
    time; without it, a key of the process), ``APPROVAL_REQUIRED`` and ``APPROVAL_EDITS``
    (comma-separated tool-name patterns, e.g. ``delete_*,drop_*``: the deployment's approval policy),
    ``APPROVAL_RULES`` (a JSON list of approval rules: who may answer which tools' calls, and how many
    must agree; see ``resumable.runtime.approval.ApprovalRule``; a bad rule stops the start, named),
    ``AUDIT_RETENTION_DAYS`` (how long an audit record is kept, whatever becomes of its session) and
    ``AUDIT_INPUTS`` (what the audit trail shows of the inputs asked and approved: ``session``, the inputs
    while their session exists and their digests after; ``keep``, the inputs themselves for as long as
    the entry; ``digest``, digests only), ``AUTH_MODE`` (``IAM``, or ``JWT`` where people sign in: then
    ``JWT_ISSUER`` and ``JWT_AUDIENCE``
    tell the inbox page where to sign in), ``APPROVER_GROUPS`` (comma-separated groups whose members
    are approvers, read from the token's ``JWT_GROUPS_CLAIM``, default ``cognito:groups``),
    ``DECISION_LINKS_AS`` (the principal one-click decision links in e-mails answer as; unset: no links)
    and ``DECISION_LINKS_KEY`` (the KMS HMAC key that signs and checks them: resumable.aws.keys),
    ``APP_SETTINGS_PATH`` and ``APP_SECRETS`` (the application's settings, the SSM parameters under that
    path, and its secrets, these comma-separated Secrets Manager ARNs: resumable.aws.app_settings), and
    ``APP_SETTINGS_MAX_AGE`` (how many seconds one read of them is kept, 300), ``AUDIT_BUCKET`` and
    ``AUDIT_DIGEST_KEY`` (where each hour's audit records go with a signed digest chained to the last,
    and the KMS key that signs them: resumable.service.audit.delivery).
    """

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)  # (RETENTION_DAYS=inf: refused, not stored)

    table_name: str = "resumable"
    bucket_name: str = "resumable-snapshots"
    region: str = "us-east-1"
    endpoint_url: str | None = None
    access_key_id: str | None = Field(default=None, repr=False)
    secret_access_key: str | None = Field(default=None, repr=False)
    agent_factory: str = "resumable.demo_agents:build_demo_agents"
    approval_expiry_seconds: int = Field(default=24 * 3600, gt=0)
    lease_seconds: int = Field(default=120, gt=0)
    turn_budget_seconds: float = Field(default=15, ge=0)
    continue_function: str | None = None
    stall_seconds: float = Field(default=10, ge=0)
    sweep_limit: int = Field(default=100, gt=0)
    index_shards: int = Field(default=16, ge=1, le=MAX_INDEX_SHARDS)
    retention_days: float = Field(default=30, gt=0)
    snapshot_item_bytes: int = Field(default=0, ge=0, le=MAX_SNAPSHOT_ITEM_BYTES)
    # At most what AWS's hard limits leave room for (docs/aws-calls.md): a prompt travels in a 128 KB
    # request body and is kept on its turn (a 400 KB item); an answer is kept on its question and
    # published whole in Interaction Answered (a 256 KB EventBridge entry).
    max_prompt_chars: int = Field(default=16_000, gt=0, le=30_000)
    max_response_bytes: int = Field(default=8_192, gt=0, le=64 * 1024)
    approver_principals: tuple[str, ...] = ()
    event_bus_name: str = "resumable"
    api_url: str | None = None
    dead_letter_queue_url: str | None = None
    notify_topic_arn: str | None = None
    cursor_secret_arn: str | None = None
    approval_required: tuple[str, ...] = ()
    approval_edits: tuple[str, ...] = ()
    approval_rules: tuple[Any, ...] = ()  # ApprovalRule (the runtime is imported only when there are some)
    audit_retention_days: float = Field(default=400, gt=0)
    audit_inputs: Literal["session", "keep", "digest"] = "session"
    auth_mode: Literal["IAM", "JWT"] = "IAM"
    jwt_issuer: str | None = None
    jwt_audience: tuple[str, ...] = ()
    approver_groups: tuple[str, ...] = ()
    jwt_groups_claim: str = "cognito:groups"
    decision_links_as: str | None = None
    decision_links_key: str | None = None
    # Where each hour's audit records are delivered with their signed, chained digest, and the KMS key
    # (asymmetric) that signs the digests (the Sweeper's alone); unset: no delivery (docs/audit.md).
    audit_bucket: str | None = None
    audit_digest_key: str | None = None
    # The application's settings (SSM parameters under this path) and secrets (these Secrets Manager ARNs):
    # resumable.aws.app_settings reads them for its agent factory, keeping each for app_settings_max_age s.
    app_settings_path: str | None = Field(default=None, pattern=r"^(/[A-Za-z0-9_.-]+)+$")
    app_secrets: tuple[str, ...] = ()
    app_settings_max_age: int = Field(default=300, ge=0)

    @field_validator("approval_rules", mode="before")
    @classmethod
    def _rules(cls, rules: Any) -> Any:
        if not rules:
            return ()
        from resumable.runtime.rules import parse_rules

        return parse_rules(rules)

    @model_validator(mode="after")
    def _links_answer_as_an_approver(self) -> Settings:
        import fnmatch

        named = self.decision_links_as
        if named and not any(fnmatch.fnmatchcase(named, pattern) for pattern in self.approver_principals):
            raise ValueError(
                f"DECISION_LINKS_AS ({named}) is not one of APPROVER_PRINCIPALS: its links could answer nothing. "
                "Name an approver principal (DecisionLinksAnswerAs, ApproverPrincipals)"
            )
        if named and not self.decision_links_key:
            raise ValueError(
                f"DECISION_LINKS_AS ({named}) needs DECISION_LINKS_KEY, the KMS HMAC key its links are signed "
                "and checked with (the template makes one: DecisionLinksKey)"
            )
        return self

    @property
    def retention_seconds(self) -> float:
        return self.retention_days * 86400

    @property
    def audit_retention_seconds(self) -> float:
        return self.audit_retention_days * 86400

    @property
    def default_approval_policy(self) -> ApprovalPolicy | None:
        """The deployment's approval policy (tools that need approval, and whose input may be edited,
        where neither the tool's declaration nor its agent's policy decides); None if it has none."""
        if not (self.approval_required or self.approval_edits or self.approval_rules):
            return None
        from resumable.runtime.approval import ApprovalPolicy

        return ApprovalPolicy(require=self.approval_required, edits=self.approval_edits, rules=self.approval_rules)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        names = {
            "table_name": "RESUMABLE_TABLE",
            "bucket_name": "RESUMABLE_BUCKET",
            "endpoint_url": "AWS_ENDPOINT_URL",
            "agent_factory": "AGENT_FACTORY",
            "approval_expiry_seconds": "APPROVAL_EXPIRY_SECONDS",
            "lease_seconds": "LEASE_SECONDS",
            "turn_budget_seconds": "TURN_BUDGET_SECONDS",
            "continue_function": "CONTINUE_FUNCTION",
            "stall_seconds": "STALL_SECONDS",
            "sweep_limit": "SWEEP_LIMIT",
            "index_shards": "INDEX_SHARDS",
            "retention_days": "RETENTION_DAYS",
            "snapshot_item_bytes": "SNAPSHOT_ITEM_BYTES",
            "event_bus_name": "EVENT_BUS_NAME",
            "api_url": "API_URL",
            "dead_letter_queue_url": "DEAD_LETTER_QUEUE_URL",
            "notify_topic_arn": "NOTIFY_TOPIC_ARN",
            "cursor_secret_arn": "CURSOR_SECRET_ARN",
            "auth_mode": "AUTH_MODE",
            "jwt_issuer": "JWT_ISSUER",
            "jwt_groups_claim": "JWT_GROUPS_CLAIM",
            "approval_rules": "APPROVAL_RULES",
            "audit_retention_days": "AUDIT_RETENTION_DAYS",
            "audit_inputs": "AUDIT_INPUTS",
            "decision_links_as": "DECISION_LINKS_AS",
            "decision_links_key": "DECISION_LINKS_KEY",
            "audit_bucket": "AUDIT_BUCKET",
            "audit_digest_key": "AUDIT_DIGEST_KEY",
            "app_settings_path": "APP_SETTINGS_PATH",
            "app_settings_max_age": "APP_SETTINGS_MAX_AGE",
        }
        values: dict[str, str] = {field: env[var] for field, var in names.items() if env.get(var)}
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        if region:
            values["region"] = region

        def listed(variable: str) -> tuple[str, ...]:
            return tuple(p.strip() for p in env.get(variable, "").split(",") if p.strip())

        from pydantic import ValidationError

        try:
            return cls._from(values, listed)
        except ValidationError as error:
            said = [(names.get(str(e["loc"][0]), "") if e["loc"] else "", str(e["msg"])) for e in error.errors()]
            problems = "; ".join(  # each named by its variable (APPROVAL_RULES's own messages name it already)
                (f"{var}: " if var and not msg.startswith(f"Value error, {var}") else "")
                + msg.removeprefix("Value error, ")
                for var, msg in said
            )
            raise ValueError(f"the configuration in the environment is not valid: {problems}") from None

    @classmethod
    def _from(cls, values: dict[str, str], listed: Callable[[str], tuple[str, ...]]) -> Settings:
        return cls.model_validate(
            {
                **values,
                "approver_principals": listed("APPROVER_PRINCIPALS"),
                "approval_required": listed("APPROVAL_REQUIRED"),
                "approval_edits": listed("APPROVAL_EDITS"),
                "jwt_audience": listed("JWT_AUDIENCE"),
                "approver_groups": listed("APPROVER_GROUPS"),
                "app_secrets": listed("APP_SECRETS"),
            }
        )

    def environment(self) -> dict[str, str]:
        """The environment variables that make ``from_env`` (and boto3) see these settings: what a
        process serving the embedded AWS hands to the handlers it runs."""
        names = {
            "RESUMABLE_TABLE": self.table_name,
            "RESUMABLE_BUCKET": self.bucket_name,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            "EVENT_BUS_NAME": self.event_bus_name,
            "API_URL": self.api_url,
            "DEAD_LETTER_QUEUE_URL": self.dead_letter_queue_url,
            "NOTIFY_TOPIC_ARN": self.notify_topic_arn,
            "CONTINUE_FUNCTION": self.continue_function,
            "CURSOR_SECRET_ARN": self.cursor_secret_arn,
            "DECISION_LINKS_KEY": self.decision_links_key,
            "AUDIT_BUCKET": self.audit_bucket,
            "AUDIT_DIGEST_KEY": self.audit_digest_key,
            "INDEX_SHARDS": str(self.index_shards),
        }
        return {name: value for name, value in names.items() if value}

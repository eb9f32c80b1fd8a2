"""Approval rules in the runtime: which rule a call asks under (the deployment's first, then the
agent's), that a rule always asks, what the question carries, and a deployment's rules read from
configuration with an error that names the bad one."""

from __future__ import annotations

from typing import Any

import pytest

from resumable import Agent, ApprovalPolicy, ApprovalRule, Invocation, ScriptedModel
from resumable.config import Settings
from resumable.runtime.rules import parse_rules
from tests.agents import calls, says
from tests.unit.test_approval_policy import ThirdPartyTool

TWO_DBAS = ApprovalRule(tools=("drop_*",), approvers=("group:dba",), required=2, name="two DBAs")
ANYONE_ONCE = ApprovalRule(tools=("drop_table",), edits=True)


def asked(policy: ApprovalPolicy | None, default: ApprovalPolicy | None) -> dict[str, Any] | None:
    """The reason of the approval a call of drop_table asks (None: it ran without asking)."""
    ran: list[Any] = []
    built = Agent(
        name="ops",
        model=ScriptedModel([calls(("t-1", "drop_table", {"table": "users"})), says("done")]),
        tools=[ThirdPartyTool("drop_table", ran)],
        approval_policy=policy,
    )
    result = built.invoke("drop it", Invocation(agent_path=("ops",), default_policy=default))
    if result.stop_reason != "interrupt":
        assert ran == [("drop_table", {"table": "users"})]
        return None
    [question] = result.interrupts
    return dict(question.reason)


def test_a_rule_asks_even_where_the_agents_policy_exempts_the_tool() -> None:
    reason = asked(ApprovalPolicy(exempt=("drop_*",)), ApprovalPolicy(rules=(TWO_DBAS,)))
    assert reason is not None
    assert reason["rule"] == {
        "tools": ["drop_*"],
        "name": "two DBAs",
        "approvers": ["group:dba"],
        "required": 2,
        "edits": False,
        "on_expiry": "expire",
    }


def test_the_deployments_rule_comes_before_the_agents() -> None:
    reason = asked(ApprovalPolicy(rules=(ANYONE_ONCE,)), ApprovalPolicy(rules=(TWO_DBAS,)))
    assert reason is not None and reason["rule"]["name"] == "two DBAs"
    assert "editable" not in reason  # the governing rule allows no edits


def test_the_agents_rule_governs_what_the_deployment_has_no_rule_for_and_may_allow_edits() -> None:
    reason = asked(ApprovalPolicy(rules=(ANYONE_ONCE,)), ApprovalPolicy(require=("drop_*",)))
    assert reason is not None and reason["rule"]["tools"] == ["drop_table"]
    assert reason["editable"] is True and "inputSchema" in reason


def test_a_call_no_rule_matches_asks_as_before_with_no_rule() -> None:
    reason = asked(
        ApprovalPolicy(require=("drop_*",)), ApprovalPolicy(rules=(TWO_DBAS.model_copy(update={"tools": ("x",)}),))
    )
    assert reason == {"agent": "ops", "tool": "drop_table", "input": {"table": "users"}}
    assert asked(None, None) is None


@pytest.mark.parametrize(
    ("rule", "principal", "groups", "admitted"),
    [
        (ApprovalRule(tools=("*",)), "anyone", (), True),
        (ApprovalRule(tools=("*",), approvers=("arn:aws:iam::*:role/dba-*",)), "arn:aws:iam::1:role/dba-eu", (), True),
        (ApprovalRule(tools=("*",), approvers=("arn:aws:iam::*:role/dba-*",)), "arn:aws:iam::1:role/dev", (), False),
        (ApprovalRule(tools=("*",), approvers=("group:dba",)), "dave", ("dba", "ops"), True),
        (ApprovalRule(tools=("*",), approvers=("group:dba",)), "group:dba", (), False),
    ],
    ids=[
        "no approvers: everyone",
        "pattern",
        "pattern, not matched",
        "group",
        "a principal named like a group",
    ],
)
def test_who_a_rule_admits(rule: ApprovalRule, principal: str, groups: tuple[str, ...], admitted: bool) -> None:
    assert rule.admits(principal, frozenset(groups)) is admitted


@pytest.mark.parametrize(
    ("required", "self_approval", "allowed"), [(1, None, True), (2, None, False), (2, True, True), (1, False, False)]
)
def test_self_approval_defaults_to_no_when_two_or_more_must_agree(
    required: int, self_approval: bool | None, allowed: bool
) -> None:
    rule = ApprovalRule(tools=("*",), required=required, self_approval=self_approval)
    assert rule.allows_self_approval is allowed


def test_a_deployments_rules_are_read_from_its_configuration() -> None:
    settings = Settings.from_env(
        {"APPROVAL_RULES": '[{"tools": ["drop_*"], "approvers": ["group:dba"], "required": 2, "name": "two DBAs"}]'}
    )
    assert settings.approval_rules == (TWO_DBAS,)
    policy = settings.default_approval_policy
    assert policy is not None and policy.rule_for("drop_table") == TWO_DBAS


@pytest.mark.parametrize(
    ("configured", "said"),
    [
        ('[{"tools": ["ok_*"]}, {"tools": ["drop_*"], "required": 0}]', 'rule 2 (["drop_*"]) is not a rule: required'),
        ('[{"tools": ["x"], "name": "mine", "aprovers": ["bob"]}]', 'rule 1 ("mine") is not a rule: aprovers: Extra'),
        ('[{"tools": []}]', "rule 1 is not a rule: tools: Tuple should have at least 1 item"),
        ('[{"tools": ["x"], "approvers": ["group:"]}]', "must be followed by a group's name"),
        ('[{"tools": ["x"], "required": 11}]', "less than or equal to 10"),
        ('[{"tools": ["x"], "approvers": []}]', "approvers: Tuple should have at least 1 item"),
        ('[{"tools": ["x"], "required": true}]', "required: Input should be a valid integer"),
        ('[{"tools": ["x"], "self_approval": "no"}]', "self_approval: Input should be a valid boolean"),
        ('[{"tools": ["x"], "escalate_after": "30m"}]', "escalate_after and escalate_to go together"),
        ('[{"tools": ["x"], "escalate_after": "soon", "escalate_to": ["b"]}]', "a duration such as '90s'"),
        # (JSON's 1e400, and a duration of 400 digits, are infinity to Python: no reply or event could carry it)
        (
            '[{"tools": ["x"], "escalate_after": 1e400, "escalate_to": ["b"]}]',
            'rule 1 (["x"]) is not a rule: escalate_after: Input should be a finite number',
        ),
        (
            f'[{{"tools": ["x"]}}, {{"tools": ["y"], "escalate_after": "{"9" * 400}s", "escalate_to": ["b"]}}]',
            'rule 2 (["y"]) is not a rule: escalate_after: Input should be a finite',
        ),
        ('[{"tools": ["x"], "escalate_after": NaN, "escalate_to": ["b"]}]', "escalate_after: Input should be"),
        ('[{"tools": ["x"], "on_expiry": "approve"}]', "on_expiry: Input should be 'expire' or 'deny'"),
        (
            '[{"tools": ["x"], "required": 2, "approvers": ["alice"]}]',
            "names only 1 (alice): its questions could never",
        ),
        ("[{}]", "rule 1 is not a rule: tools: Field required"),
        ('{"tools": ["x"]}', "must be a list of rules"),
        ("[{tools: x}]", "APPROVAL_RULES is not JSON"),
    ],
)
def test_a_bad_rule_stops_the_start_naming_it(configured: str, said: str) -> None:
    with pytest.raises(ValueError, match="APPROVAL_RULES") as refused:
        Settings.from_env({"APPROVAL_RULES": configured})
    assert said in str(refused.value)


@pytest.mark.parametrize(
    ("variable", "value"), [("RETENTION_DAYS", "inf"), ("TURN_BUDGET_SECONDS", "nan"), ("LEASE_SECONDS", "0")]
)
def test_a_setting_out_of_bounds_is_refused_naming_its_variable(variable: str, value: str) -> None:
    with pytest.raises(ValueError, match=f"not valid: {variable}: Input should be"):
        Settings.from_env({variable: value})


def test_rules_given_in_code_are_checked_too() -> None:
    with pytest.raises(ValueError, match=r"ApprovalPolicy\.rules takes a tuple of ApprovalRule"):
        ApprovalPolicy(rules=({"tools": ["x"]},))  # type: ignore[arg-type]
    assert parse_rules([TWO_DBAS, {"tools": ["y"]}])[1] == ApprovalRule(tools=("y",))


@pytest.mark.parametrize(
    ("given", "seconds"), [(90, 90.0), ("90s", 90.0), ("30m", 1800.0), ("4h", 14400.0), ("2d", 172800.0)]
)
def test_escalate_after_takes_seconds_or_a_duration(given: Any, seconds: float) -> None:
    rule = ApprovalRule.model_validate({"tools": ["x"], "escalate_after": given, "escalate_to": ["group:leads"]})
    assert rule.escalate_after == seconds


def test_escalate_to_may_answer_only_once_escalated() -> None:
    rule = ApprovalRule(tools=("x",), approvers=("bob",), escalate_after=60, escalate_to=("group:leads",))
    assert not rule.admits("carol", frozenset({"leads"}))
    assert rule.admits("carol", frozenset({"leads"}), escalated=True)
    assert rule.admits("bob", frozenset(), escalated=True)


def test_the_command_shows_how_far_a_question_under_a_rule_is_and_the_input_approved_so_far() -> None:
    from resumable.cli.printed import approvals

    asked = {"rule": {"required": 2}, "approvals": [{"by": "alice", "input": {"name": "dev-db"}}]}
    assert approvals(asked) == '1 of 2: alice with {"name": "dev-db"}'
    assert approvals(asked | {"escalatedAt": "2026-12-03T10:00:00Z", "approvedByYou": True}) == (
        '1 of 2: alice with {"name": "dev-db"} (escalated) (you approved)'
    )
    assert approvals({"rule": None}) == ""


def test_a_question_stored_under_a_rule_escalating_after_infinity_reads_as_one_that_never_escalates() -> None:
    """Asked before such a rule was refused: its question is still answered under its rule, not left to nobody."""
    from resumable.service.access import rule_of
    from resumable.store.records import InteractionRecord

    stored = {"tools": ["drop_*"], "approvers": ["bob"], "escalate_after": float("inf"), "escalate_to": ["carol"]}
    asked = InteractionRecord(
        session_id="s", root_turn_id="t", turn_id="t", request_id="r", interrupt_id="i", name="approval",
        agent_path=["a"], status="requested", expires_at=2.0, created_at=1.0, updated_at=1.0, rule=stored,
    )  # fmt: skip
    rule = rule_of(asked)
    assert rule is not None and rule.title != "unreadable rule" and rule.approvers == ("bob",)
    assert rule.escalate_after is None and rule.escalate_to is None and asked.escalates_at is None

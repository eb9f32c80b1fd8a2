"""What a standing grant covers, by its tool, rule and input patterns (service.grants.giving.covers),
and what a grant request may say (GrantRequest)."""

from __future__ import annotations

from typing import Any

import pytest

from resumable.exceptions import ValidationFailedError
from resumable.runtime.rules import ApprovalRule
from resumable.service.grants.giving import covers, grant_request
from resumable.store.records import GrantRecord

RULE = ApprovalRule(tools=("delete_*",), name="deletes", grants={"max": "8h"})  # type: ignore[arg-type]


def grant(inputs: dict[str, str] | None = None, tool: str = "delete_record", rule: str = "deletes") -> GrantRecord:
    return GrantRecord(
        grant_id="g" + "0" * 24, scope="session", session_id="s", tool=tool, rule=rule, inputs=inputs,
        granted_by="alice", granted_at=0, expires_at=3600, root_turn_id="t", request_id="r", purge_at=9999,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("inputs", "called_with", "covered"),
    [
        (None, {"name": "anything"}, True),
        (None, "not even an object", True),
        ({"name": "orders-*"}, {"name": "orders-7"}, True),
        ({"name": "orders-*"}, {"name": "users-7"}, False),
        ({"name": "orders-*"}, {"other": "orders-7"}, False),  # (a named field must be there)
        ({"name": "orders-*"}, "orders-7", False),
        ({"count": "1?"}, {"count": 12}, True),  # (a number as its JSON)
        ({"count": "1?"}, {"count": 120}, False),
        ({"force": "false"}, {"force": False}, True),
        ({"force": "false"}, {"force": 0}, False),
        ({"name": "a"}, {"name": ["a"]}, False),
        ({"name": "orders-*", "region": "eu-*"}, {"name": "orders-1", "region": "us-east-1"}, False),
    ],
)
def test_a_grant_covers_only_inputs_whose_named_fields_match(inputs: Any, called_with: Any, covered: bool) -> None:
    assert covers(grant(inputs), "delete_record", called_with, RULE, 60) is covered


def test_a_grant_covers_only_its_tool_under_its_rule_while_live_and_as_the_rule_allows_now() -> None:
    assert covers(grant(), "delete_record", {}, RULE, 60)
    assert not covers(grant(), "delete_table", {}, RULE, 60)
    assert not covers(grant(), "delete_record", {}, RULE.model_copy(update={"name": "other deletes"}), 60)
    assert not covers(grant(), "delete_record", {}, RULE, 3600)  # (expired)
    assert not covers(grant().model_copy(update={"revoked_at": 30}), "delete_record", {}, RULE, 60)
    shorter = ApprovalRule(tools=("delete_*",), name="deletes", grants={"max": 30})  # type: ignore[arg-type]
    assert not covers(grant(), "delete_record", {}, shorter, 60)
    elsewhere = ApprovalRule(tools=("delete_*",), name="deletes", grants={"max": "8h", "scopes": ["principal"]})  # type: ignore[arg-type]
    assert not covers(grant(), "delete_record", {}, elsewhere, 60)
    assert not covers(grant(), "delete_record", {}, RULE.model_copy(update={"grants": None}), 60)


@pytest.mark.parametrize(
    "body",
    [{"for": "forever"}, {"for": -1}, {"for": 0}, {"for": float("inf")}, {"for": "1h", "scope": "everyone"},
     {"for": True}, {"for": "\uff11h"},
     {"for": "1h", "inputs": {}}, {"for": "1h", "inputs": {"name": 5}}, {"for": "1h", "inputs": {"": "x"}},
     {"for": "1h", "why": "x"}, [], "1h", {"scope": "session"}],
)  # fmt: skip
def test_a_grant_request_that_is_not_one_is_a_422(body: Any) -> None:
    with pytest.raises(ValidationFailedError, match="the grant is not one"):
        grant_request(body)


def test_a_grant_request_takes_seconds_or_a_duration() -> None:
    assert grant_request({"for": "30m"}).seconds == 1800
    assert grant_request({"for": 90, "scope": "principal"}).scope == "principal"

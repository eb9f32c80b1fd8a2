"""Your agents, offline, as the service runs them: every request builds them afresh, so each test
builds them again from what the request before stored (their snapshot) before it answers. Their secret
comes from an embedded AWS (``app_values``), as it comes from Secrets Manager on AWS."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from my_agent import agents
from my_agent.agents import build_agents

from resumable.exceptions import AppSettingError
from resumable.local.app_values import app_values


@pytest.fixture(scope="module", autouse=True)
def secrets() -> Iterator[None]:
    with app_values(secrets={"orders-api-token": "a token for the tests"}):
        yield


@pytest.fixture(autouse=True)
def orders() -> Iterator[None]:
    """The orders as they were, for each test (the tools change them)."""
    kept = {order_id: dict(order) for order_id, order in agents.ORDERS.items()}
    yield
    agents.ORDERS.clear()
    agents.ORDERS.update(kept)
    agents.REFUNDS.clear()


def answer(question: Any, decision: str, message: str = "") -> list[dict[str, Any]]:
    response = {"decision": decision} | ({"message": message} if message else {})
    return [{"interruptResponse": {"interruptId": question.id, "response": response}}]


def test_a_refund_waits_for_a_persons_approval_and_runs_once_when_given() -> None:
    first = build_agents()
    asked = first("refund order A-1001, it arrived broken")
    assert asked.stop_reason == "interrupt"
    [question] = asked.interrupts
    assert (question.reason["tool"], question.reason["input"]) == ("refund_order", {"order_id": "A-1001"})
    assert question.reason["risk"] == "destructive"
    assert agents.REFUNDS == [], "nothing is refunded before a person approves"

    rebuilt = build_agents()  # the next request, in another process: only the snapshot carries over
    rebuilt.restore(first.snapshot())
    done = rebuilt(answer(question, "approve"))
    assert done.stop_reason == "end_turn"
    assert done.text == "refunded $1,250.00 to Ada for order A-1001"
    assert agents.REFUNDS == ["A-1001"]


def test_a_denied_refund_never_runs_and_the_agent_is_told_why() -> None:
    first = build_agents()
    asked = first("refund order A-1002")
    [question] = asked.interrupts
    rebuilt = build_agents()
    rebuilt.restore(first.snapshot())
    done = rebuilt(answer(question, "deny", "not without a return"))
    assert "not without a return" in done.text
    assert agents.REFUNDS == []


def test_looking_an_order_up_needs_no_approval() -> None:
    done = build_agents()("where is order A-1002?")
    assert done.stop_reason == "end_turn"
    assert done.text == "order A-1002: Grace, $89.50, shipped, placed a day ago"


def test_a_refund_over_the_limit_is_refused_by_the_tool_once_approved() -> None:
    first = build_agents()
    [question] = first("refund order A-1003").interrupts
    rebuilt = build_agents()
    rebuilt.restore(first.snapshot())
    done = rebuilt(answer(question, "approve"))
    assert done.text == "order A-1003 is over the refund limit of $5,000.00: nothing was refunded"
    assert agents.REFUNDS == []


def test_without_its_secret_no_agent_is_built_and_the_error_names_the_secret() -> None:
    with app_values(), pytest.raises(AppSettingError, match="the app secret 'orders-api-token' is not one of"):
        build_agents()

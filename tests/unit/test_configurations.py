"""Behaviours 4 and 8: the four sub-agent configurations across a real rebuild, approve and deny.

A rebuild means new objects for every agent and tool; state comes only from the orchestrator's
snapshot (through JSON) and, where the sub-agent has one, its session files.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from resumable import Agent
from resumable.config import Settings
from tests.agents import approve, build_orchestrator, deny


class Deployment:
    """One configuration: builds the agent tree and says whether a rebuild happens between calls."""

    def __init__(self, name: str, tmp_path: Path) -> None:
        self.name = name
        self.runs: list[str] = []
        self.session_dir = tmp_path / "db_admin-session" if name == "own_session" else None
        self.preserve_context = name != "ephemeral"
        self.rebuilds = name != "in_memory"
        self.agent = self.build()

    def build(self) -> Agent:
        return build_orchestrator(
            self.runs, preserve_context=self.preserve_context, worker_session_dir=self.session_dir
        )

    def next_process(self) -> Agent:
        """The orchestrator the next request sees: the same objects, or a rebuild from stored state."""
        if self.rebuilds:
            state = json.loads(json.dumps(self.agent.snapshot()))
            self.agent = self.build()
            self.agent.restore(state)
        return self.agent

    def worker(self) -> Agent:
        tool: Any = self.agent.tools["db_admin"]
        return tool.agent  # type: ignore[no-any-return]


CONFIGURATIONS = ["ephemeral", "own_session", "in_memory", "rebuilt_without_session"]


@pytest.mark.parametrize("name", ["ephemeral", "own_session", "in_memory"])
def test_an_approved_nested_action_runs_once_after_the_resume(name: str, tmp_path: Path) -> None:
    deployment = Deployment(name, tmp_path)
    [interrupt] = deployment.agent("delete the prod-db record").interrupts
    result = deployment.next_process()([approve(interrupt.id)])
    assert (result.stop_reason, result.text) == ("end_turn", "The record is gone.")
    assert deployment.runs == ["prod-db"]


def test_a_sub_agent_with_its_own_session_keeps_its_history_intact(tmp_path: Path) -> None:
    deployment = Deployment("own_session", tmp_path)
    [interrupt] = deployment.agent("delete the prod-db record").interrupts
    deployment.next_process()([approve(interrupt.id)])
    saved = json.loads((tmp_path / "db_admin-session" / "db_admin.json").read_text())
    roles_and_kinds = [(m["role"], next(iter(m["content"][0]))) for m in saved["messages"]]
    assert roles_and_kinds == [
        ("user", "text"),
        ("assistant", "toolUse"),
        ("user", "toolResult"),
        ("assistant", "text"),
    ]
    assert saved["messages"][0]["content"][0]["text"] == "delete the prod-db record"
    assert deployment.worker().messages == saved["messages"]


def test_a_context_preserving_sub_agent_without_a_session_warns_when_its_interrupt_is_stored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    deployment = Deployment("rebuilt_without_session", tmp_path)
    with caplog.at_level(logging.WARNING, logger="resumable"):
        paused = deployment.agent("delete the prod-db record")
    assert paused.stop_reason == "interrupt"
    assert any("preserve_context=True with no session" in r.getMessage() for r in caplog.records)


def test_a_context_preserving_sub_agent_without_a_session_cannot_resume_after_a_rebuild(tmp_path: Path) -> None:
    deployment = Deployment("rebuilt_without_session", tmp_path)
    [interrupt] = deployment.agent("delete the prod-db record").interrupts
    orchestrator = deployment.next_process()
    orchestrator([approve(interrupt.id)])
    assert deployment.runs == []
    [tool_result] = [b["toolResult"] for m in orchestrator.messages for b in m["content"] if "toolResult" in b]
    assert tool_result["status"] == "error"
    text = tool_result["content"][0]["text"]
    assert "did NOT run" in text
    assert "Do not report this action as done" in text
    assert "preserve_context=True" in text
    assert "Give the agent a session" in text


@pytest.mark.parametrize("name", CONFIGURATIONS)
def test_deny_runs_nothing(name: str, tmp_path: Path) -> None:
    deployment = Deployment(name, tmp_path)
    [interrupt] = deployment.agent("delete the prod-db record").interrupts
    result = deployment.next_process()([deny(interrupt.id, "prod is frozen")])
    assert result.stop_reason == "end_turn"
    assert deployment.runs == []
    if name != "rebuilt_without_session":
        worker_results = [
            b["toolResult"] for m in deployment.worker().messages for b in m["content"] if "toolResult" in b
        ]
        assert worker_results[0]["status"] == "error"
        assert worker_results[0]["content"][0]["text"].startswith("DENIED: prod is frozen")


def test_decision_links_must_answer_as_an_approver_or_the_start_stops_naming_both_settings() -> None:
    approver = "arn:aws:iam::111122223333:user/alice"
    key = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    env = {"APPROVER_PRINCIPALS": "arn:aws:iam::111122223333:user/*", "DECISION_LINKS_AS": approver}
    env |= {"DECISION_LINKS_KEY": key}
    assert Settings.from_env(env).decision_links_as == approver
    with pytest.raises(ValueError, match=r"DECISION_LINKS_AS .* is not one of APPROVER_PRINCIPALS"):
        Settings.from_env({**env, "APPROVER_PRINCIPALS": "arn:aws:iam::111122223333:role/ops"})


def test_decision_links_need_their_key_or_the_start_stops_naming_it() -> None:
    env = {
        "APPROVER_PRINCIPALS": "arn:aws:iam::111122223333:user/*",
        "DECISION_LINKS_AS": "arn:aws:iam::111122223333:user/alice",
    }
    with pytest.raises(ValueError, match=r"DECISION_LINKS_AS .* needs DECISION_LINKS_KEY, the KMS HMAC key"):
        Settings.from_env(env)

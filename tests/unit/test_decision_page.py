"""The one-click decision link's page shows what the agent wrote literally: no markup, and no control or
format character (a right-to-left override, a bell) is obeyed; each is shown as its escape, as the
inbox page shows it."""

from __future__ import annotations

from typing import Any

import pytest

from resumable.service.views import InteractionView
from resumable.web.decision_page import confirmation, outcome

ANN = "arn:aws:iam::000000000000:user/approver-ann"
HOSTILE = "<!channel> <https://evil.example/approve|Approve>\u202e````\x07<script>\x85"
"""What an agent may write: a mention, a link, a right-to-left override, backticks, a bell, markup, a C1 control."""


def _question(name: str, reason: Any) -> InteractionView:
    return InteractionView.model_validate(
        {
            "session_id": "s1", "request_id": "r1", "interrupt_id": "i1", "turn_id": "t1", "child_turn_id": None,
            "name": name, "reason": reason, "agent_path": ["orchestrator", HOSTILE], "status": "requested",
            "editable": False, "response": None, "answered_by": None, "answered_at": None,
            "expires_at": "2026-12-04T11:00:00Z", "summary": HOSTILE,
        }
    )  # fmt: skip


@pytest.mark.parametrize(
    "question",
    [
        _question("approval", {"tool": HOSTILE, "input": {"q": HOSTILE}, "risk": "high", "impact": HOSTILE}),
        _question("ask_user", {"question": HOSTILE}),
    ],
    ids=["an approval", "a question answered in words"],
)
def test_the_page_obeys_no_control_or_format_character_and_shows_each_as_its_escape(question: InteractionView) -> None:
    page = confirmation(ANN, question)
    assert not [c for c in "\u202e\x07\x85" if c in page], f"obeyed, not shown: {page!r}"
    assert "<script>" not in page and "&lt;!channel&gt; &lt;https://evil.example/approve|Approve&gt;" in page
    assert "\\u202e````\\u0007&lt;script&gt;\\u0085" in page, "the agent's words are all there, each character seen"


def test_what_came_of_a_decision_obeys_no_control_or_format_character() -> None:
    page = outcome("Not recorded", f"the agent said {HOSTILE}")
    assert not [c for c in "\u202e\x07\x85" if c in page] and "\\u202e" in page and "&lt;script&gt;" in page


def test_a_refusal_that_begins_with_a_principal_shows_it_as_it_is() -> None:
    page = outcome("Not yours to decide", f"{ANN} is not one of the approvers of the approval rule 'dba'")
    assert f"<p>{ANN} is not one of the approvers" in page and "Arn:" not in page


def test_the_page_shows_what_the_inbox_card_shows_and_a_destructive_approval_needs_its_box_ticked() -> None:
    rule = {"name": "two", "tools": ["drop_*"], "approvers": None, "required": 2, "self_approval": False}
    asked = _question("approval", {"tool": "drop_db", "input": {"db": "prod"}, "explanation": HOSTILE})
    asked = InteractionView.model_validate(
        asked.model_dump(by_alias=False)
        | {
            "started_by": "arn:aws:iam::1:user/owner", "root_prompt": "tidy up " + "x" * 900,
            "explanation": HOSTILE, "risk": "destructive", "impact": "no undo", "confirm": True, "rule": rule,
            "approvals": [{"by": "arn:aws:iam::1:user/alice", "at": "2026-12-04T10:00:00Z"}], "summary": "drop_db prod",
        }
    )  # fmt: skip
    page = confirmation(ANN, asked)
    assert "Risk: destructive. no undo" in page and "Turn started by arn:aws:iam::1:user/owner" in page
    assert "Prompt: tidy up" in page and "x" * 400 not in page and "The agent's reason: &lt;!channel&gt;" in page
    assert "Approvals: 1 of 2: arn:aws:iam::1:user/alice" in page
    assert '<input type="checkbox" id="confirm" name="confirm" value="yes" required>' in page
    assert "I confirm: approving runs <b>drop_db prod</b>" in page
    plain = confirmation(ANN, _question("approval", {"tool": "read_db", "input": {}}))
    assert 'name="confirm"' not in plain and "Approvals" not in plain and "Turn started by" not in plain

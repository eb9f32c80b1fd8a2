"""What the CLI prints stays one row per question, whatever a question's text holds."""

from __future__ import annotations

from typing import Any

import pytest

from resumable.cli import printed


def question(request: str, name: str) -> dict[str, Any]:
    return {
        "requestId": request,
        "sessionId": "s",
        "turnId": "t",
        "name": "approval",
        "reason": {"tool": "delete_record", "input": {"name": "x"}},
        "summary": "delete_record x",
        "startedBy": "sub",
        "startedByName": name,
        "agentPath": ["a"],
        "expiresAt": None,
    }


def test_a_name_with_line_breaks_stays_on_its_row(capsys: pytest.CaptureFixture[str]) -> None:
    hostile = "Alice\n r-forged  low  read_config dev\r\u2028more"
    printed.print_inbox({"interactions": [question("r-1", hostile), question("r-2", "Bob")]})
    lines = capsys.readouterr().out.split("\n")
    rows = [line for line in lines if line and not line.startswith(" ")]
    assert [row.split()[0] for row in rows] == ["REQUEST", "r-1", "r-2"]
    assert "sub (who gives their name as \u201cAlice r-forged low read_config dev more\u201d)" in rows[1]


def test_the_principal_comes_first_and_a_name_from_the_token_is_shown_as_theirs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A name claim (name, email...) may be one the person set: it never stands in for who signed in."""
    printed.print_inbox({"interactions": [question("r-1", "The CFO")]})
    [row] = [line for line in capsys.readouterr().out.split("\n") if line.startswith("r-1")]
    assert "sub (who gives their name as \u201cThe CFO\u201d)" in row


def test_one_question_shows_how_it_was_settled_and_what_was_said(capsys: pytest.CaptureFixture[str]) -> None:
    denied = question("r-1", "Bob") | {
        "status": "answered",
        "decision": "denied",
        "response": {"decision": "deny", "message": "not staging\nnot today"},
        "answeredBy": "arn:aws:iam::1:user/ann",
        "answeredAt": "2026-12-07T01:00:00.000Z",
        "answeredVia": "page",
        "startedByYou": True,
    }
    printed.print_question(denied)
    out = capsys.readouterr().out.split("\n")
    assert out[0] == "question r-1  denied: delete_record x"
    assert "    started by: sub (who gives their name as \u201cBob\u201d) (you)" in out
    assert "    answered by: arn:aws:iam::1:user/ann at 2026-12-07T01:00:00.000Z via page" in out
    assert "    said: not staging not today" in out and not any(line.startswith("answer it:") for line in out)
    printed.print_question(question("r-2", "Bob") | {"status": "superseded", "decision": "superseded"})
    out = capsys.readouterr().out.split("\n")
    assert out[0] == "question r-2  superseded: delete_record x"
    assert "    superseded: its turn was canceled, or moved on without it" in out

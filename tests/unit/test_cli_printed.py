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

"""The CLI's confirmation of a destructive approval, on a terminal: the person types what it acts on;
anything else, end of input or Ctrl-C approves nothing; the prompt goes through stderr, never input()'s
own prompt (which writes to the terminal directly, escapes and all)."""

from __future__ import annotations

import builtins
import io
import sys
from typing import Any

import pytest

from resumable.cli import answer
from resumable.cli.main import _Harmless

QUESTION = {
    "summary": "delete_record prod-db\x1b[2J",
    "reason": {"tool": "delete_record", "input": {"name": "prod-db\x1b[2J"}},
    "impact": "Deletes it",
    "risk": "destructive",
    "confirm": True,
}


def typed(monkeypatch: pytest.MonkeyPatch, reply: Any) -> io.StringIO:
    """A terminal where the person types ``reply``; what the command writes on stderr."""
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    shown = io.StringIO()
    monkeypatch.setattr(sys, "stderr", _Harmless(shown, "\n"))

    def read(*prompt: str) -> str:
        assert prompt == (), "the prompt is written to stderr, not by input()"
        if isinstance(reply, BaseException):
            raise reply
        return str(reply)

    monkeypatch.setattr(builtins, "input", read)
    return shown


def test_typing_what_it_acts_on_confirms(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = typed(monkeypatch, "prod-db\x1b[2J")
    answer._confirm(QUESTION)
    assert "Type prod-db\\x1b[2J to approve it: " in terminal.getvalue() and "\x1b" not in terminal.getvalue()


@pytest.mark.parametrize(
    "reply", ["prod", "", EOFError(), KeyboardInterrupt()], ids=["other", "empty", "eof", "ctrl-c"]
)
def test_anything_else_approves_nothing(monkeypatch: pytest.MonkeyPatch, reply: Any) -> None:
    typed(monkeypatch, reply)
    with pytest.raises(answer.RefusedError, match="not approved"):
        answer._confirm(QUESTION)


def test_without_a_terminal_it_needs_yes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False, raising=False)
    with pytest.raises(answer.RefusedError, match="pass --yes"):
        answer._confirm(QUESTION)


def test_an_edit_is_confirmed_by_what_it_would_run(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = QUESTION | {"reason": {"tool": "delete_record", "input": {"name": "prod-db"}}}
    terminal = typed(monkeypatch, "prod-db-replica")
    answer._confirm(asked, {"name": "prod-db-replica"})
    said = terminal.getvalue()
    assert 'Approving runs delete_record {"name": "prod-db-replica"}' in said and "Type prod-db-replica" in said
    typed(monkeypatch, "prod-db")
    with pytest.raises(answer.RefusedError, match="not 'prod-db-replica'"):
        answer._confirm(asked, {"name": "prod-db-replica"})

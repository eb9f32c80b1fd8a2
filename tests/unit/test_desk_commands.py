"""The ``resumable`` command as docs/desk.md shows it: every command line it documents, with each
optional part, parses as written (placeholders given sample values); ``start --wait``'s progress."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from resumable.cli import main
from resumable.cli.client import LOCAL_URL, Reply, default_url
from resumable.cli.main import _parser

DESK = Path(__file__).resolve().parents[2] / "docs" / "desk.md"
# What a documented placeholder stands for, where any word would not do.
SAMPLES = {"D": "2026-01-01", "O": "approved", "JSON": '{"name": "prod-db"}', "URL": "https://sqs.example/q", "N": "20"}


def documented() -> list[str]:
    text = DESK.read_text()
    found = re.findall(r"`(resumable [^`]+)`", text)
    shown = [line.strip().removeprefix("$ ") for line in text.splitlines() if line.strip().startswith("$ resumable ")]
    found += [line.split(";")[0] for line in shown]  # (what follows a ; is the shell's)
    return sorted(set(found))


@pytest.mark.parametrize("command", documented())
def test_every_command_desk_md_documents_is_one_the_command_takes(command: str) -> None:
    words = shlex.split(command.replace("[", " ").replace("]", " "))[1:]
    words = [SAMPLES.get(w, "x" if w.isupper() else w) for w in words]
    try:
        _parser().parse_args(words)
    except SystemExit as refused:
        raise AssertionError(f"docs/desk.md documents {command!r}, which resumable does not take") from refused


def test_desk_md_documents_commands() -> None:
    assert len(documented()) >= 15


class _Running:
    """The API of a turn that runs for two polls, then completes."""

    def __init__(self) -> None:
        self.polls = 0

    def call(self, method: str, path: str, body: object = None) -> Reply:
        self.polls += 1
        return Reply(200, {"sessionId": "s", "turnId": "t", "status": "running" if self.polls < 2 else "completed"})


@pytest.mark.parametrize("terminal", [True, False])
def test_start_wait_redraws_its_progress_on_a_terminal_and_writes_plain_lines_anywhere_else(
    terminal: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(main, "_WAIT_POLL_SECONDS", 0)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    done = main._wait(_Running(), Reply(201, {"sessionId": "s", "turnId": "t", "status": "running"}))  # type: ignore[arg-type]
    assert done.body["status"] == "completed"
    said = capsys.readouterr().err
    if terminal:
        assert "\r| running for 0 s" in said
    else:
        assert said == "turn t running for 0 s\n"  # no carriage return, no padding in a capture


def test_the_command_calls_the_local_run_that_says_where_it_serves_unless_told_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "local-run.json"
    monkeypatch.setenv("RESUMABLE_LOCAL_STATE", str(state))
    monkeypatch.delenv("RESUMABLE_URL", raising=False)
    assert default_url() == LOCAL_URL  # no run said anything
    state.write_text(json.dumps({"url": "http://127.0.0.1:18431", "pid": os.getpid()}))
    assert default_url() == "http://127.0.0.1:18431"
    monkeypatch.setenv("RESUMABLE_URL", "https://api.example.com")
    assert default_url() == "https://api.example.com"  # what the person set wins
    monkeypatch.delenv("RESUMABLE_URL")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    state.write_text(json.dumps({"url": "http://127.0.0.1:18431", "pid": gone.pid}))
    assert default_url() == LOCAL_URL  # a run that died leaves its file: not followed
    elsewhere = json.dumps({"url": "http://evil.example:80", "pid": os.getpid()})
    for said in [elsewhere, "not json", '{"pid": "x"}']:
        state.write_text(said)
        assert default_url() == LOCAL_URL

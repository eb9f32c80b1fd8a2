"""``make smoke``'s sign-in token (AuthMode JWT) reaches the ``resumable`` command through its
environment (RESUMABLE_TOKEN), never its command line, where other users would see it; given as
``--token`` (docs/deploy.md's ``make smoke ARGS="--token $TOKEN"``) or as RESUMABLE_TOKEN, it is
printed nowhere."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from tools import smoke

TOKEN = "eyJ-the-smoke-token-7d1e"
WAITING = {
    "sessionId": "smoke-x",
    "turnId": "t1",
    "status": "waiting",
    "interactions": [
        {"requestId": "r1", "sessionId": "smoke-x", "turnId": "t1", "status": "requested", "agentPath": ["a"]}
    ],
}


class _Commands:
    """The ``resumable`` commands the smoke test ran: each one's command line and the token its
    environment held; each answered with a turn that waits on one question."""

    def __init__(self) -> None:
        self.ran: list[tuple[list[str], str | None]] = []

    def __call__(self, argv: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
        env = options.get("env")
        self.ran.append((argv, (os.environ if env is None else env).get("RESUMABLE_TOKEN")))
        return subprocess.CompletedProcess(argv, 0, json.dumps(WAITING), "")


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> _Commands:
    monkeypatch.delenv("RESUMABLE_TOKEN", raising=False)  # (and whatever the smoke test sets, taken back)
    ran = _Commands()
    monkeypatch.setattr(subprocess, "run", ran)
    return ran


@pytest.mark.parametrize("given", ["--token", "RESUMABLE_TOKEN"])
def test_the_smoke_tests_token_reaches_the_command_in_its_environment_and_is_printed_nowhere(
    given: str, commands: _Commands, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--url", "https://api.example.com", "--leave"]
    if given == "--token":
        argv += ["--token", TOKEN]
    else:
        monkeypatch.setenv("RESUMABLE_TOKEN", TOKEN)
    assert smoke.main(argv) == 0
    assert os.environ.get("RESUMABLE_TOKEN") == (TOKEN if given == "RESUMABLE_TOKEN" else None)  # (nothing left)
    [(command, token)] = commands.ran
    assert TOKEN not in " ".join(command) and "--token" not in command
    assert token == TOKEN
    out, err = capsys.readouterr()
    assert "left waiting, as told" in out
    assert TOKEN not in out + err

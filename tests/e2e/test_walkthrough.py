"""What a newcomer meets is true: ``make run``'s printed walkthrough, followed literally and in order in
bash, does what each step says."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.e2e.local_api import call
from tests.patience import HANG_SECONDS, eventually

END = "The OpenAPI document:"


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the run notes where it serves (``RESUMABLE_LOCAL_STATE``): this module's own."""
    return tmp_path_factory.mktemp("state") / "local-run.json"


@contextmanager
def make_run(state: Path, **env: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``python -m resumable.local.run`` (``make run``) with ``env``, and what it printed up to its
    walkthrough's end, while it keeps serving; stopped by SIGTERM as by Ctrl-C."""
    server = subprocess.Popen(
        [sys.executable, "-m", "resumable.local.run"],
        env={**os.environ, "PORT": "0", "RESUMABLE_LOCAL_STATE": str(state), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None
    lines: list[str] = []
    try:
        for line in server.stdout:
            lines.append(line)
            if line.startswith(END):
                break
        assert lines and lines[-1].startswith(END), "make run printed no walkthrough:\n" + "".join(lines)
        yield server, "".join(lines)
    finally:
        server.terminate()
        server.wait(HANG_SECONDS)


@pytest.fixture(scope="module")
def printed(state: Path) -> Iterator[str]:
    """The walkthrough ``make run`` prints, while it keeps serving."""
    with make_run(state) as (server, walkthrough):
        yield walkthrough
    # Stopped by SIGTERM as by Ctrl-C: it took back the note of where it served.
    assert server.returncode == 0 and not state.exists()


def commands(walkthrough: str) -> str:
    """The walkthrough's shell lines (indented, not a comment of their own), as one bash script."""
    shell = [line for line in walkthrough.splitlines() if line.startswith("  ") and not line.strip().startswith("#")]
    return "set -e\n" + "\n".join(shell) + "\n"


@pytest.mark.slow
def test_every_step_of_the_printed_walkthrough_works_when_followed_literally(printed: str) -> None:
    ran = subprocess.run(
        ["bash", "-c", commands(printed)], capture_output=True, text=True, timeout=HANG_SECONDS, check=False
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    out = ran.stdout
    said = [
        '"status": "waiting"',  # 1: the turn waits
        '"agentPath": ["orchestrator", "db_admin"]',  # 1: the question, listed
        '"output": "record prod-db deleted"',  # 2: approved
        "DENIED: not staging. The tool 'delete_record' did not run.",  # 3: denied
        '"status": "canceled"',  # 4: canceled
        '"status": "SUCCEEDED"',  # 5: the workflow
        "record dev-db deleted",
        "Interaction Requested  orchestrator -> db_admin wants to run delete_record",  # 6: the events
        '"outcome": "denied", "at"',  # 7: the audit trail
        '"message": "not staging"',
        "approved  delete_record",
        'button asks first: \\"Run it? Approving runs delete_record (risk: destructive). Deletes',  # 8: Slack's dialog
        '"Status": "SUCCEEDED"',  # 9: the durable workflow went on with the turn's outcome
        '\\"outcome\\": \\"completed\\"',
        "record test-db deleted",
    ]
    for step in said:
        assert step.replace(": ", ":").replace(", ", ",") in out.replace(": ", ":").replace(", ", ","), step
    assert "there is no record" not in out, "a step deleted a record an earlier one had deleted"
    assert '"code"' not in out, "a step got an error: " + out
    # Pasted again, every step runs again (a new workflow, new turns); the demo's records are gone by then.
    again = subprocess.run(
        ["bash", "-c", commands(printed)], capture_output=True, text=True, timeout=HANG_SECONDS, check=False
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.count('"status": "SUCCEEDED"') == 1 and "there is no record named dev-db" in again.stdout
    assert again.stdout.count('"Status": "SUCCEEDED"') == 1 and "there is no record named test-db" in again.stdout
    assert '"code"' not in again.stdout, "a step pasted again got an error: " + again.stdout


@pytest.mark.slow
def test_the_resumable_command_finds_the_local_run_by_itself(printed: str, state: Path) -> None:
    url = re.search(r"resumable is serving (http://127\.0\.0\.1:\d+)", printed)
    assert url is not None, printed
    assert f"export RESUMABLE_URL={url.group(1)}" in printed
    environment = {k: v for k, v in os.environ.items() if k != "RESUMABLE_URL"} | {"RESUMABLE_LOCAL_STATE": str(state)}
    ran = subprocess.run(
        [sys.executable, "-m", "resumable.cli", "inbox"],  # no --url: the run said where it serves
        env=environment,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert "could not reach" not in ran.stderr
    url_ = url.group(1)
    assert call(url_, "POST", "/sessions/evented/turns", {"prompt": "delete the evented record"})[0] == 201
    read = [sys.executable, "-m", "resumable.cli", "events", "--once"]  # no --queue: the run said which

    def evented() -> str | None:
        ran = subprocess.run(read, env=environment, capture_output=True, text=True, timeout=HANG_SECONDS, check=False)
        assert ran.returncode == 0, ran.stderr
        return ran.stdout if "evented" in ran.stdout else None

    assert "Interaction Requested" in eventually(evented, "the run's events, read from its own queue")


def test_make_run_with_decision_links_starts_and_its_mail_holds_a_link_that_decides(tmp_path: Path) -> None:
    """docs/desk.md's local run of one-click links: DECISION_LINKS_AS=... make run starts (the embedded
    AWS's link key in every function's environment before it is imported), prints how to read the mail,
    and the mail of a question holds a link whose form decides it."""
    state = tmp_path / "local-run.json"
    with make_run(state, DECISION_LINKS_AS="arn:aws:iam::000000000000:user/local") as (_, printed):
        reader = re.search(r"^  (\S+ -m resumable\.local\.events --mail \S+)$", printed, re.MULTILINE)
        assert reader, "make run printed no way to read the mail:\n" + printed
        url = json.loads(state.read_text())["url"]
        started = call(url, "POST", "/sessions/mailed/turns", {"prompt": "delete the mailed record"})
        assert started[0] == 201 and started[1]["status"] == "waiting", started

        def link() -> str | None:
            read = reader.group(1).split()
            mail = subprocess.run(read, capture_output=True, text=True, timeout=HANG_SECONDS, check=False)
            found = re.search(r"without signing in \(its page decides, once\): (\S+)", mail.stdout)
            return found.group(1) if found else None

        decide = eventually(link, "the question's e-mail, with its link")
        form = urllib.parse.urlencode({"decision": "approve", "confirm": "yes"}).encode()  # (destructive: ticked)
        with urllib.request.urlopen(urllib.request.Request(decide, data=form), timeout=HANG_SECONDS) as reply:
            assert reply.status == 200 and "Your approval is recorded" in reply.read().decode()


@pytest.mark.slow
def test_under_the_docs_two_person_rule_make_run_prints_a_walkthrough_that_completes_pasted_twice(
    tmp_path: Path,
) -> None:
    """docs/approval-rules.md's two-person rule under make run (IAM): you and the run's second local approver
    approve bob's question; the separation check passes; pasted again, it runs again."""
    rule = '[{"tools": ["delete_*"], "required": 2, "name": "two-person delete"}]'
    with make_run(tmp_path / "local-run.json", APPROVAL_RULES=rule) as (_, printed):
        assert "The approval rule 'two-person delete' governs delete_record: 2 approvals" in printed, printed
        for paste in ("first", "again"):
            ran = subprocess.run(
                ["bash", "-c", commands(printed)], capture_output=True, text=True, timeout=HANG_SECONDS, check=False
            )
            assert ran.returncode == 0, ran.stdout + ran.stderr
            out = ran.stdout.replace(": ", ":").replace(", ", ",")
            deleted = "record prod-db deleted" if paste == "first" else "there is no record named prod-db"
            assert f'"status":"completed","output":"{deleted}"' in out, out  # (the second approval ran it)
            assert '"approvals":[{"by":"arn:aws:iam::000000000000:user/local",' in out, "yours counted first"
            assert "exit 0" in out and '"code"' not in out, out
            assert "0 approved by the one who started its turn" in ran.stderr, ran.stderr

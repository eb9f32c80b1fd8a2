"""Each local run (``make run``) notes where it serves in a file of its own: a second run in the same
checkout never takes back the first's note, and the ``resumable`` command finds the run that serves
(the newest, saying so, where several do), and its event queue."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from resumable import local_runs as runs
from resumable.cli import main
from resumable.cli.client import LOCAL_URL, default_url


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project's folder of notes, as a newcomer's checkout has it (no variable naming another)."""
    monkeypatch.delenv("RESUMABLE_LOCAL_STATE", raising=False)
    monkeypatch.delenv("RESUMABLE_URL", raising=False)
    monkeypatch.setattr(runs, "RUNS", tmp_path / "runs")
    return tmp_path / "runs"


@pytest.fixture
def other_run() -> Iterator[int]:
    """Another process, alive for the test: the first make run."""
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield alive.pid
    alive.kill()
    alive.wait()


def _noted_by(pid: int, folder: Path, port: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    note = {"url": f"http://127.0.0.1:{port}", "pid": pid, "events_queue_url": f"http://127.0.0.1:5/q{port}"}
    (folder / f"{pid}.json").write_text(json.dumps(note))


def test_a_second_run_stopping_leaves_the_first_runs_note(folder: Path, other_run: int) -> None:
    _noted_by(other_run, folder, 3000)
    take_back = runs.note("http://127.0.0.1:3001", "http://127.0.0.1:5/q3001")
    assert [run.url for run in runs.serving()] == ["http://127.0.0.1:3001", "http://127.0.0.1:3000"]
    take_back()
    assert [run.url for run in runs.serving()] == ["http://127.0.0.1:3000"]
    assert default_url() == "http://127.0.0.1:3000"  # the command finds the run still serving


def test_where_several_serve_the_command_calls_the_newest_and_says_so(
    folder: Path, other_run: int, capsys: pytest.CaptureFixture[str]
) -> None:
    _noted_by(other_run, folder, 3000)
    take_back = runs.note("http://127.0.0.1:3001")
    try:
        assert default_url() == "http://127.0.0.1:3001"
        said = capsys.readouterr().err
        assert "2 local runs serve" in said and "not http://127.0.0.1:3000" in said and "RESUMABLE_URL" in said
    finally:
        take_back()


def test_a_note_whose_run_died_is_passed_over_and_cleared_by_the_next_run(folder: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _noted_by(gone.pid, folder, 3000)
    assert runs.serving() == [] and default_url() == LOCAL_URL
    take_back = runs.note("http://127.0.0.1:3001")
    assert not (folder / f"{gone.pid}.json").exists()
    take_back()
    assert list(folder.glob("*.json")) == []


def test_a_run_takes_back_its_own_note_never_one_a_later_run_wrote_in_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, other_run: int
) -> None:
    state = tmp_path / "local-run.json"  # (RESUMABLE_LOCAL_STATE: every run notes in this one file)
    monkeypatch.setenv("RESUMABLE_LOCAL_STATE", str(state))
    take_back = runs.note("http://127.0.0.1:3001")
    _noted_by(other_run, tmp_path, 3000)
    (tmp_path / f"{other_run}.json").replace(state)  # a later run noted in its place
    take_back()
    assert [run.url for run in runs.serving()] == ["http://127.0.0.1:3000"]


def test_a_note_whose_pid_went_to_another_process_is_passed_over(folder: Path, other_run: int) -> None:
    _noted_by(other_run, folder, 3000)
    note = folder / f"{other_run}.json"
    said = json.loads(note.read_text())
    note.write_text(json.dumps(said | {"started": runs._started_at(other_run)}))
    assert [run.url for run in runs.serving()] == ["http://127.0.0.1:3000"]
    note.write_text(json.dumps(said | {"started": "1"}))  # the run it names started at another time
    assert runs.serving() == []


def test_resumable_events_reads_the_serving_runs_queue_or_says_there_is_none(
    folder: Path, other_run: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("RESUMABLE_EVENTS_QUEUE", raising=False)
    assert main.main(["events", "--once"]) == 2
    assert "no local run serves here (start one with make run)" in capsys.readouterr().err
    _noted_by(other_run, folder, 3000)
    # The queue's URL is the run's: nothing listens there in this test, so the read fails naming it.
    assert main.main(["events", "--once"]) != 0
    assert "http://127.0.0.1:5/q3000" in capsys.readouterr().err

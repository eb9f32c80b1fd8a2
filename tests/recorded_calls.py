"""The pytest plugin that keeps tests/aws_calls.txt true: every AWS call a template function makes
while the tests run is recorded (resumable.local.permissions.calls); at the end, a call the file lacks
fails the run, and, when the whole suite ran and passed, so does a call the file lists that no test
made. ``RECORD_CALLS=1`` (make calls) writes the file instead.

With xdist each worker leaves its calls, and the test files it collected, in the run's folder; the
controller (or the only process) compares them all and removes the folder."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from resumable.local.permissions.calls import CALLS, RECORDER, Call, read_calls

RECORDER.install()  # on import (conftest imports this first): before any client is made
_FOLDER = "RESUMABLE_RECORDED_CALLS_DIR"
TESTS = Path(__file__).resolve().parent

_HEADER = """# Every AWS call a template function (or the state machine) makes, as the test suite records it:
# caller, IAM action, resource (named by the environment variable that configures it). The permission
# check (python -m resumable.local.permissions) holds the template's roles to these; make calls rewrites
# this file from a whole run of the suite.
"""


class _Narrowed:
    deselected = 0


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or the only process): workers inherit it
        os.environ[_FOLDER] = tempfile.mkdtemp(prefix="resumable-calls-")


def pytest_deselected(items: list[pytest.Item]) -> None:
    _Narrowed.deselected += len(items)  # -k, -m, --deselect, --lf, --sw


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    folder = os.environ.get(_FOLDER)
    if folder is None or session.config.option.collectonly:
        return
    me = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    files = sorted(
        {str(Path(item.path).relative_to(TESTS)) for item in session.items if TESTS in Path(item.path).parents}
    )
    (Path(folder) / f"{me}.calls").write_text("\n".join(sorted(c.line() for c in RECORDER.recorded())))
    (Path(folder) / f"{me}.files").write_text("\n".join([f"deselected {_Narrowed.deselected}", *files]))
    if hasattr(session.config, "workerinput"):
        return
    try:
        _compare(session, Path(folder), exitstatus)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _whole(folder: Path) -> bool:
    """Whether every test file was collected and nothing deselected, by every process that ran."""
    collected: set[str] = set()
    for listing in folder.glob("*.files"):
        first, *files = listing.read_text().splitlines()
        if first != "deselected 0":
            return False
        collected |= set(files)
    on_disk = {str(path.relative_to(TESTS)) for path in TESTS.rglob("test_*.py")}
    return bool(collected) and collected == on_disk


def _compare(session: pytest.Session, folder: Path, exitstatus: int) -> None:
    recorded: set[Call] = set()
    for made in folder.glob("*.calls"):
        recorded |= {Call.parse(line) for line in made.read_text().splitlines() if line}
    kept = read_calls()
    new = sorted(recorded - kept)
    gone = sorted(kept - recorded) if exitstatus == 0 and _whole(folder) else []
    if os.environ.get("RECORD_CALLS") == "1":
        if new or gone:  # make calls: what this run recorded (the permission check then judges it)
            CALLS.write_text(_HEADER + "\n".join(c.line() for c in sorted((kept | set(new)) - set(gone))) + "\n")
        return
    if new or gone:
        lines = [f"the functions made AWS calls {CALLS.name} does not list:", *(f"  {c.line()}" for c in new)]
        if gone:
            lines += [f"{CALLS.name} lists calls the whole suite no longer made:", *(f"  {c.line()}" for c in gone)]
        lines.append("make calls records them (then make permissions says whether the roles allow them)")
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("\n".join(lines), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

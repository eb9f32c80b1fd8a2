"""tools/checked.py: make validate and make scan pass once for the files they read; a change to any of
those files, or a failure, runs the check again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import checked


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose files are what the scan reads, with the stamps kept in its own .venv."""
    (tmp_path / "template.yaml").write_text("Resources: {}\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "checkov-requirements.txt").write_text("checkov==1\n")
    monkeypatch.setattr(checked, "ROOT", tmp_path)
    monkeypatch.setattr(checked, "STAMPS", tmp_path / ".venv" / "checked")
    return tmp_path


def test_a_check_that_passed_is_not_run_again_until_a_file_it_reads_changes(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = project / "ran"
    command = ["sh", "-c", f"echo once >> {ran}"]
    assert checked.main(["scan", "--", *command]) == 0
    assert checked.main(["scan", "--", *command]) == 0
    assert ran.read_text() == "once\n"
    assert "make scan: passed already for these files" in capsys.readouterr().out

    for read in ("template.yaml", "tools/checkov-requirements.txt"):
        (project / read).write_text((project / read).read_text() + "# changed\n")
        assert checked.main(["scan", "--", *command]) == 0
    assert ran.read_text() == "once\n" * 3, "each change runs it again"
    # A file it does not read changes nothing.
    (project / "README.md").write_text("news\n")
    assert checked.main(["scan", "--", *command]) == 0
    assert ran.read_text() == "once\n" * 3


def test_a_check_that_failed_runs_again_and_its_exit_code_is_kept(project: Path) -> None:
    ran = project / "ran"
    failing = ["sh", "-c", f"echo failed >> {ran}; exit 3"]
    assert checked.main(["scan", "--", *failing]) == 3
    assert checked.main(["scan", "--", *failing]) == 3
    assert ran.read_text() == "failed\n" * 2
    assert not (project / ".venv" / "checked").exists(), "no stamp"


def test_every_file_and_folder_a_check_reads_counts_and_bytecode_does_not(project: Path) -> None:
    (project / "shared" / "resumable" / "__pycache__").mkdir(parents=True)
    before = checked.digest("validate", ["v"])
    (project / "shared" / "resumable" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert checked.digest("validate", ["v"]) == before
    for read in checked.READS["validate"]:
        folder = "." not in read  # (statemachines, shared/resumable: every file in them)
        file = project / read / "inner" / "f.json" if folder else project / read
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(f"{read} changed\n")
        after = checked.digest("validate", ["v"])
        assert after != before, read
        before = after
    assert checked.digest("validate", ["v", "--other"]) != before, "the command counts too"

"""tools/checked.py: make validate and make scan pass once for what they read; a change to any file they
read, to the Region or to their settings, or a failure, runs the check again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import checked


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose files are what the scan reads, with the stamps kept in its own .venv, a home folder
    of its own, and the package imported from its shared/."""
    root = tmp_path / "project"
    (root / "tools").mkdir(parents=True)
    (root / "template.yaml").write_text("Resources: {}\n")
    (root / "tools" / "checkov-requirements.txt").write_text("checkov==1\n")
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "CKV_SKIP_CHECK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(checked, "ROOT", root)
    monkeypatch.setattr(checked, "STAMPS", root / ".venv" / "checked")
    monkeypatch.setattr(checked, "_package_elsewhere", lambda: None)
    return root


def test_a_check_that_passed_is_not_run_again_until_a_file_it_reads_changes(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = project / "ran"
    command = ["sh", "-c", f"echo once >> {ran}"]
    assert checked.main(["scan", "--", *command]) == 0
    assert checked.main(["scan", "--", *command]) == 0
    assert ran.read_text() == "once\n"
    assert "make scan: passed already for what it reads" in capsys.readouterr().out

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


def test_a_file_changed_while_the_check_ran_is_not_stamped_as_passed(project: Path) -> None:
    """The check may have read the file before or after the change: neither version is known to pass."""
    ran = project / "ran"
    changing = ["sh", "-c", f"echo ran >> {ran}; echo '# edited' >> {project / 'template.yaml'}"]
    assert checked.main(["scan", "--", *changing]) == 0
    assert not (project / ".venv" / "checked").exists(), "no stamp"


def test_a_check_whose_package_is_another_checkouts_is_run_and_never_stamped(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A .venv shared with another checkout imports its package: validate read that checkout's files, so
    neither a stamp of these files' nor one of its own stands for its verdict."""
    ran = project / "ran"
    command = ["sh", "-c", f"echo once >> {ran}"]
    assert checked.main(["validate", "--", *command]) == 0  # (stamped: the package is this checkout's)
    monkeypatch.setattr(checked, "_package_elsewhere", lambda: "/elsewhere/shared/resumable/__init__.py")
    assert checked.main(["validate", "--", *command]) == 0
    (project / "template.yaml").write_text("Resources: {Other: {}}\n")
    assert checked.main(["validate", "--", *command]) == 0
    assert checked.main(["validate", "--", *command]) == 0
    assert ran.read_text() == "once\n" * 4
    # These files' own package again: what ran under the other checkout's stands for nothing.
    monkeypatch.setattr(checked, "_package_elsewhere", lambda: None)
    assert checked.main(["validate", "--", *command]) == 0
    assert ran.read_text() == "once\n" * 5


def test_the_region_and_the_checks_settings_count_in_the_environment_and_in_the_home_folder(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = {checked.digest("scan", ["s"]), checked.digest("validate", ["v"])}
    for name, value in (("AWS_REGION", "ap-east-2"), ("AWS_DEFAULT_REGION", "eu-west-1"), ("CKV_SKIP_CHECK", "X")):
        monkeypatch.setenv(name, value)
        now = {checked.digest("scan", ["s"]), checked.digest("validate", ["v"])}
        assert not now & seen, name
        seen |= now
    monkeypatch.setenv("UNRELATED", "1")
    assert checked.digest("scan", ["s"]) in seen
    # Unset is us-east-1, as the checks take it: the same Region whether set so or unset.
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    unset_too = checked.digest("scan", ["s"])
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    assert checked.digest("scan", ["s"]) == unset_too
    home = Path.home()
    for made, check in (
        (home / ".checkov.yaml", "scan"),
        (home / ".cfnlintrc", "validate"),
        (project / ".cfnlintrc.yaml", "validate"),
    ):
        before = checked.digest(check, [check])
        made.write_text("soft-fail: true\n")
        assert checked.digest(check, [check]) != before, made


def test_every_file_and_folder_validate_reads_counts_by_path_and_content_and_bytecode_does_not(project: Path) -> None:
    package = project / "shared" / "resumable"
    (package / "__pycache__").mkdir(parents=True)
    (package / "a.py").write_text("x = 1\n")
    before = checked.digest("validate", ["v"])
    (package / "__pycache__" / "a.pyc").write_bytes(b"\0")
    assert checked.digest("validate", ["v"]) == before
    (package / "a.py").rename(package / "b.py")
    assert checked.digest("validate", ["v"]) != before, "a renamed module"
    before = checked.digest("validate", ["v"])
    for read in (
        "template.yaml",
        "statemachines",
        "tools/validate_template.py",
        "shared/resumable",
        "constraints.txt",
        "pyproject.toml",
    ):
        assert read in checked.READS["validate"]
        folder = "." not in read  # (statemachines, shared/resumable: every file in them)
        file = project / read / "inner" / "f.json" if folder else project / read
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(f"{read} changed\n")
        after = checked.digest("validate", ["v"])
        assert after != before, read
        before = after
    assert checked.digest("validate", ["v", "--other"]) != before, "the command counts too"

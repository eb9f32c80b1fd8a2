"""SAM translations kept on disk (resumable.local.permissions.kept): each is made once for what it rests
on, and made again when any of that changes, or when what was kept cannot be read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from resumable.local.permissions import kept


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(kept, "KEPT", tmp_path / "translations")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    return tmp_path / "translations"


def test_a_translation_is_made_once_and_again_for_another_text_parameters_or_partition(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []

    def translating(what: str) -> Any:
        def translate() -> dict[str, Any]:
            made.append(what)
            return {"Resources": {"Made": {"For": what}}}

        return translate

    first = kept.kept("Resources: {}", {"AuthMode": "IAM"}, translating("first"))
    again = kept.kept("Resources: {}", {"AuthMode": "IAM"}, translating("again"))
    assert first == again == {"Resources": {"Made": {"For": "first"}}} and made == ["first"]
    kept.kept("Resources: {A: 1}", {"AuthMode": "IAM"}, translating("text"))
    kept.kept("Resources: {}", {"AuthMode": "JWT"}, translating("parameters"))
    monkeypatch.setenv("AWS_DEFAULT_REGION", "cn-north-1")  # (another partition: aws-cn)
    kept.kept("Resources: {}", {"AuthMode": "IAM"}, translating("partition"))
    assert made == ["first", "text", "parameters", "partition"]
    assert not list(folder.glob("*.part")), "no half-written file is left"


def test_the_translating_codes_own_change_makes_it_again(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = Path.read_bytes
    for module in ("stack.py", "functions.py"):
        before = kept.key("Resources: {}", {})
        with monkeypatch.context() as changed:
            changed.setattr(Path, "read_bytes", lambda p, m=module: real(p) + (b"#" if p.name == m else b""))
            assert kept.key("Resources: {}", {}) != before, module


def test_a_kept_file_that_cannot_be_read_is_made_again_and_replaced(folder: Path) -> None:
    kept.kept("T", {}, lambda: {"v": 1})
    [file] = folder.glob("*.json")
    file.write_text('{"v": ')  # (cut short, as a disk that filled would leave it)
    assert kept.kept("T", {}, lambda: {"v": 2}) == {"v": 2}
    assert kept.kept("T", {}, lambda: {"v": 3}) == {"v": 2}

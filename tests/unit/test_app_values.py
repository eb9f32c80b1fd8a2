"""app/local.json, read for make run and make predeploy: what it may hold, and a clear refusal, naming
where it is wrong, of anything else (nothing is started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from resumable.local.app_values import LocalValues


def test_settings_and_secrets_are_read_and_no_file_is_none(tmp_path: Path) -> None:
    (tmp_path / "local.json").write_text('{"settings": {"REFUND_LIMIT": "5000"}, "secrets": {"team/token": "t"}}')
    read = LocalValues.read(tmp_path / "local.json")
    assert (read.settings, read.secrets) == ({"REFUND_LIMIT": "5000"}, {"team/token": "t"})
    assert LocalValues.read(tmp_path / "none.json") == LocalValues()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("nope", "(Expecting value: line 1 column 1"),
        ("[1]", "(the whole: Input should be a valid dictionary"),
        ('{"setting": {}}', "(setting: Extra inputs are not permitted)"),
        ('{"settings": {"A": 5}}', "(settings.A: Input should be a valid string)"),
        ('{"settings": {"A": ""}}', "(settings.A: String should have at least 1 character)"),
        ('{"secrets": {"tok\\n": "x"}}', "names settings or secrets AWS would not take: ['tok\\n']"),
        ('{"settings": {"a/b": "x"}}', "names settings or secrets AWS would not take: ['a/b']"),
    ],
)
def test_what_aws_would_not_take_is_refused_naming_where(text: str, said: str, tmp_path: Path) -> None:
    (tmp_path / "local.json").write_text(text)
    with pytest.raises(SystemExit, match="nothing was started") as refused:
        LocalValues.read(tmp_path / "local.json")
    assert said in str(refused.value)

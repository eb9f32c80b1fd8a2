"""The local tools read template.yaml with libyaml's reader where PyYAML has it: what they read is what
PyYAML's own pure-Python reader reads, intrinsics and all, both as the local run reads them (plain
values) and as the SAM translator does (``{"Ref": ...}``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from samtranslator.yaml_helper import yaml_parse  # type: ignore[import-untyped]

from resumable.local import functions
from resumable.local.functions import ROOT, load_template
from resumable.local.permissions.stack import read_template

TEMPLATE = ROOT / "template.yaml"


class _PurePython(yaml.SafeLoader):
    """The local run's reader on PyYAML's pure-Python reader: the same rule for intrinsics."""


_PurePython.yaml_multi_constructors = functions._CloudFormationLoader.yaml_multi_constructors


def test_the_local_run_reads_the_template_as_pyyamls_pure_python_reader_does() -> None:
    read = load_template(TEMPLATE)
    assert read == yaml.load(TEMPLATE.read_text(), Loader=_PurePython)
    assert read["Resources"]["StartTurnFunction"]["Properties"]["Events"]  # (not an empty read)
    assert any("${AWS::" in str(v) for v in read["Outputs"].values())  # (a !Sub's string, whole)


@contextmanager
def _pyyamls_own_loader_kept() -> Iterator[None]:
    """``yaml_parse`` adds its constructor to PyYAML's own SafeLoader: taken off again afterwards, so
    nothing else this process reads sees it."""
    own = "yaml_multi_constructors" in yaml.SafeLoader.__dict__  # (else it has its parent's)
    kept = dict(yaml.SafeLoader.yaml_multi_constructors)
    try:
        yield
    finally:
        if own:
            yaml.SafeLoader.yaml_multi_constructors = kept
        else:
            del yaml.SafeLoader.yaml_multi_constructors


def test_the_sam_translation_reads_the_template_as_the_sam_translators_own_reader_does() -> None:
    text = TEMPLATE.read_text()
    read = read_template(text)
    with _pyyamls_own_loader_kept():
        assert read == yaml_parse(text)
    assert "!" not in yaml.SafeLoader.yaml_multi_constructors
    # (each intrinsic as the translator reads it: a !GetAtt's shorthand as its two parts)
    access_log = read["Resources"]["HttpApi"]["Properties"]["AccessLogSettings"]["DestinationArn"]
    assert access_log == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}


def test_each_read_is_a_copy_of_its_own_and_a_file_rewritten_is_read_as_it_is_now(tmp_path: Path) -> None:
    template = tmp_path / "template.yaml"
    template.write_text("Resources:\n  A: {Type: 'AWS::SNS::Topic'}\n")
    first = load_template(template)
    first["Resources"]["A"]["Type"] = "changed by a caller"
    assert load_template(template) == {"Resources": {"A": {"Type": "AWS::SNS::Topic"}}}
    template.write_text("Resources:\n  B: {Type: 'AWS::SNS::Topic'}\n")  # (the same size, at once)
    assert list(load_template(template)["Resources"]) == ["B"]

"""The local tools read template.yaml with libyaml's reader where PyYAML has it: what they read is what
PyYAML's own pure-Python reader reads, intrinsics and all."""

from __future__ import annotations

import yaml

from resumable.local import functions
from resumable.local.functions import ROOT, load_template


class _PurePython(yaml.SafeLoader):
    """The template's reader on PyYAML's pure-Python reader: the same rule for intrinsics."""


_PurePython.yaml_multi_constructors = functions._CloudFormationLoader.yaml_multi_constructors


def test_the_template_reads_the_same_as_pyyamls_pure_python_reader_reads_it() -> None:
    path = ROOT / "template.yaml"
    read = load_template(path)
    assert read == yaml.load(path.read_text(), Loader=_PurePython)
    assert read["Resources"]["StartTurnFunction"]["Properties"]["Events"]  # (not an empty read)
    # An intrinsic is kept as its plain value, a !Sub's string whole.
    assert any("${AWS::" in str(v) for v in read["Outputs"].values())

"""make layer: shared/ and its pinned dependencies for python3.11 on arm64, without boto3, without
local-only code, under 10 MB."""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass

import pytest

from layers.build import build


@dataclass(frozen=True)
class Built:
    unzipped: int
    zipped: int
    names: list[str]
    archive: zipfile.ZipFile


@pytest.fixture(scope="module")
def layer(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """``make layer``'s build, in a directory of the tests' own (not layers/, which a developer's
    ``make layer`` may be writing)."""
    into = tmp_path_factory.mktemp("layer")
    unzipped, zipped = build(into)
    archive = zipfile.ZipFile(into / "layer.zip")
    return Built(unzipped, zipped, archive.namelist(), archive)


@pytest.mark.slow
def test_the_layer_ships_the_package_and_its_dependencies_without_boto3(layer: Built) -> None:
    assert layer.zipped < 10_000_000
    assert layer.unzipped > layer.zipped
    names = layer.names
    assert "python/resumable/__init__.py" in names
    assert "python/functions" not in {n.rsplit("/", 1)[0] for n in names}
    assert any(n.startswith("python/pydantic_core/") and "aarch64" in n and n.endswith(".so") for n in names)
    assert any(n.startswith("python/aws_lambda_powertools/") for n in names)
    assert any(n.startswith("python/aws_xray_sdk/") for n in names), "the Tracer's SDK (Tracing: Active)"
    assert not any(n.startswith(("python/boto3/", "python/botocore/")) for n in names)


@pytest.mark.slow
def test_every_module_the_layer_ships_is_compiled_for_the_runtime(layer: Built) -> None:
    """Lambda's /opt is read-only: a module without bytecode is compiled again on every cold start."""
    compiled = {n for n in layer.names if n.endswith(".cpython-311.pyc")}
    sources = [n for n in layer.names if n.endswith(".py")]
    uncompiled = [n for n in sources if _bytecode_of(n) not in compiled]
    assert len(sources) > 100 and uncompiled == [], f"modules shipped without bytecode: {uncompiled[:5]}"
    header = layer.archive.read("python/resumable/__pycache__/__init__.cpython-311.pyc")
    assert int.from_bytes(header[4:8], "little") == 0b01, "the bytecode must be unchecked-hash (flags 0b01)"


def _bytecode_of(source: str) -> str:
    folder, _, module = source.rpartition("/")
    return f"{folder}/__pycache__/{module[:-3]}.cpython-311.pyc"


# An import of moto, or of the local-only package, in shipped code.
_LOCAL_IMPORT = re.compile(r"^\s*(from|import)\s+(moto|resumable\.local)\b", re.MULTILINE)


@pytest.mark.slow
def test_the_layer_holds_no_local_only_code_and_nothing_it_ships_imports_it(layer: Built) -> None:
    archive, names = layer.archive, layer.names
    assert not any(n.startswith(("python/resumable/local/", "python/resumable/cli/", "python/moto/")) for n in names)
    importing = [
        n
        for n in names
        if n.startswith("python/resumable/") and n.endswith(".py") and _LOCAL_IMPORT.search(archive.read(n).decode())
    ]
    assert importing == [], f"shipped modules import local-only code: {importing}"


@pytest.mark.slow
def test_the_layer_ships_the_inbox_page(layer: Built) -> None:
    """The page's HTML, CSS and JavaScript are package data: shipped beside the code that serves them."""
    for name in ("inbox.html", "inbox.css", "inbox.js"):
        assert f"python/resumable/web/{name}" in layer.names

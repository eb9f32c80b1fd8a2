"""make layer: shared/ and its pinned dependencies for python3.11 on arm64, without boto3, without
local-only code, under 10 MB."""

from __future__ import annotations

import re
import zipfile

import pytest

from layers.build import ZIP, build


@pytest.mark.slow
def test_the_layer_ships_the_package_and_its_dependencies_without_boto3() -> None:
    unzipped, zipped = build()
    assert zipped < 10_000_000
    assert unzipped > zipped
    names = zipfile.ZipFile(ZIP).namelist()
    assert "python/resumable/__init__.py" in names
    assert "python/functions" not in {n.rsplit("/", 1)[0] for n in names}
    assert any(n.startswith("python/pydantic_core/") and "aarch64" in n and n.endswith(".so") for n in names)
    assert any(n.startswith("python/aws_lambda_powertools/") for n in names)
    assert not any(n.startswith(("python/boto3/", "python/botocore/")) for n in names)


# An import of moto, or of the local-only package, in shipped code.
_LOCAL_IMPORT = re.compile(r"^\s*(from|import)\s+(moto|resumable\.local)\b", re.MULTILINE)


@pytest.mark.slow
def test_the_layer_holds_no_local_only_code_and_nothing_it_ships_imports_it() -> None:
    build()
    archive = zipfile.ZipFile(ZIP)
    names = archive.namelist()
    assert not any(n.startswith(("python/resumable/local/", "python/moto/")) for n in names)
    importing = [
        n
        for n in names
        if n.startswith("python/resumable/") and n.endswith(".py") and _LOCAL_IMPORT.search(archive.read(n).decode())
    ]
    assert importing == [], f"shipped modules import local-only code: {importing}"

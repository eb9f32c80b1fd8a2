"""``make layer``: build the Lambda layer (layers/build/python/ and layers/layer.zip) and report its size.

The layer is shared/resumable without its local-only code (``resumable/local/``: the embedded AWS, the
local server, make run and make demo) plus layers/requirements.txt, installed for python3.11 on arm64
(manylinux wheels, whatever machine builds it). template.yaml's SharedLayer points at layers/build/.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUILD = HERE / "build"
ZIP = HERE / "layer.zip"


# What never ships: local-only code, and caches.
LOCAL_ONLY = "local"


def _not_shipped(directory: str, names: list[str]) -> set[str]:
    package = Path(directory) == ROOT / "shared" / "resumable"
    return {n for n in names if n == "__pycache__" or (package and n == LOCAL_ONLY)}


def build(into: Path = HERE) -> tuple[int, int]:
    """Build the layer in ``into`` (``build/`` and ``layer.zip``); return its (unzipped, zipped) sizes
    in bytes."""
    built, archive_path = into / "build", into / "layer.zip"
    shutil.rmtree(built, ignore_errors=True)
    target = built / "python"
    subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
            "--only-binary=:all:", "--platform", "manylinux2014_aarch64", "--implementation", "cp",
            "--python-version", "3.11", "--target", str(target), "-r", str(HERE / "requirements.txt"),
        ],
        check=True,
    )  # fmt: skip
    shutil.copytree(ROOT / "shared" / "resumable", target / "resumable", ignore=_not_shipped)
    for cache in target.rglob("__pycache__"):
        shutil.rmtree(cache)
    with zipfile.ZipFile(archive_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(built.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(built))
    unzipped = sum(p.stat().st_size for p in built.rglob("*") if p.is_file())
    return unzipped, archive_path.stat().st_size


def main() -> None:
    unzipped, zipped = build()
    print(f"layer: {ZIP.relative_to(ROOT)} {zipped / 1e6:.1f} MB zipped, {unzipped / 1e6:.1f} MB unzipped")


if __name__ == "__main__":
    main()

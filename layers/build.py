"""``make layer``: build the Lambda layers (layers/build/python/ and layers/layer.zip, the optional
Strands layer's in layers/strands-build/python/ and layers/strands-layer.zip) and report their sizes.

The layer is shared/resumable without its local-only code (``resumable/local/``: the embedded AWS, the
local server, make run and make demo) and without the ``resumable`` command (``resumable/cli/``),
plus layers/requirements.txt, installed for python3.11 on arm64 (manylinux wheels, whatever machine
builds it). The Strands layer is layers/strands-requirements.txt alone, built the same way: the
Strands Agents SDK and what it needs beyond the layer, for the stacks whose agents are written with it
(a layer of its own, twice the main one's size, which other stacks need not carry). template.yaml's
SharedLayer and StrandsLayer are built by ``sam build`` through layers/Makefile, which calls this same
build (``--artifacts DIR LAYER``); ``make layer`` builds both into layers/ for the benchmark and tests.

The requirements pip installs for a layer are kept in .venv/layer-requirements/ (per requirements
file): a later build of the same requirements copies them instead of asking pip again.

Every module ships compiled (``__pycache__/*.cpython-311.pyc``, unchecked-hash: used whatever the
files' times). Lambda extracts a layer to a read-only /opt, where Python cannot write bytecode, so a
layer without it compiles every module it imports on every cold start (measured: about 1.6x the import
time of the same handler with bytecode).
"""

from __future__ import annotations

import compileall
import contextlib
import hashlib
import importlib.metadata
import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Layer:
    """One layer: what it installs, whether it ships shared/resumable, and where its unzipped files
    (``directory``) and its archive go."""

    name: str
    requirements: str
    ships_package: bool
    directory: str
    archive: str


SHARED = Layer("layer", "requirements.txt", ships_package=True, directory="build", archive="layer.zip")
STRANDS = Layer(
    "strands layer",
    "strands-requirements.txt",
    ships_package=False,
    directory="strands-build",
    archive="strands-layer.zip",
)
# By their names in template.yaml, which layers/Makefile passes to --artifacts.
LAYERS = {"SharedLayer": SHARED, "StrandsLayer": STRANDS}


# What never ships: local-only code, the command people run in a terminal (a client, not a function's
# code), and caches.
NOT_SHIPPED = frozenset({"local", "cli"})


def _not_shipped(directory: str, names: list[str]) -> set[str]:
    package = Path(directory) == ROOT / "shared" / "resumable"
    return {n for n in names if n == "__pycache__" or (package and n in NOT_SHIPPED)}


# Lambda's runtime: the bytecode is for this Python and no other.
RUNTIME = (3, 11)


def _compile(target: Path) -> None:
    if sys.version_info[:2] != RUNTIME:
        raise SystemExit(
            f"the layer is for python{RUNTIME[0]}.{RUNTIME[1]} and ships its bytecode, which only that Python "
            f"writes; this is {sys.version_info[0]}.{sys.version_info[1]}: run make layer with python3.11"
        )
    compiled = compileall.compile_dir(
        target, quiet=2, workers=0, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
    )
    if not compiled:
        raise SystemExit(f"compiling the layer's modules in {target} failed: the layer was not built")


# pip's options for the layer's requirements: wheels for Lambda's python3.11 on arm64, whatever builds it.
PIP_TARGET = [
    "--no-deps", "--only-binary=:all:", "--platform", "manylinux2014_aarch64", "--implementation", "cp",
    "--python-version", "3.11",
]  # fmt: skip
# Where the installed requirements are kept, per requirements file and options, when the project has
# its .venv: a second build of unchanged requirements (sam build after make layer, make bench, the
# tests) copies them instead of asking pip again.
KEPT = ROOT / ".venv" / "layer-requirements"


def _install(layer: Layer, target: Path) -> None:
    """``layer``'s requirements installed into ``target``: by pip, or copied from what pip installed
    for the same requirements before."""
    requirements = HERE / layer.requirements
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *PIP_TARGET]
    if not KEPT.parent.is_dir():
        subprocess.run([*pip, "--target", str(target), "-r", str(requirements)], check=True)
        return
    # What pip installs depends on the requirements, the options, pip itself and where it looks.
    where = sorted((name, value) for name, value in os.environ.items() if name.startswith("PIP_"))
    key = [requirements.read_text(), *PIP_TARGET, importlib.metadata.version("pip"), repr(where)]
    digest = hashlib.sha256("\n".join(key).encode()).hexdigest()[:16]
    kept = KEPT / f"{layer.directory}-{digest}"
    if not kept.is_dir():
        KEPT.mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(dir=KEPT, ignore_cleanup_errors=True) as scratch:
            subprocess.run([*pip, "--target", scratch, "-r", str(requirements)], check=True)
            with contextlib.suppress(OSError):  # another build kept the same install first: use theirs
                os.rename(scratch, kept)
    shutil.copytree(kept, target)


def _assemble(built: Path, layer: Layer) -> None:
    """``layer``'s files in ``built``/python: its requirements, the package if it ships it, compiled."""
    shutil.rmtree(built, ignore_errors=True)
    target = built / "python"
    _install(layer, target)
    if layer.ships_package:
        shutil.copytree(ROOT / "shared" / "resumable", target / "resumable", ignore=_not_shipped)
    for cache in target.rglob("__pycache__"):
        shutil.rmtree(cache)
    _compile(target)


def build(into: Path = HERE, layer: Layer = SHARED) -> tuple[int, int]:
    """Build ``layer`` in ``into`` (its directory and archive, ``build/`` and ``layer.zip`` for the
    main one); return its (unzipped, zipped) sizes in bytes."""
    built, archive_path = into / layer.directory, into / layer.archive
    _assemble(built, layer)
    with zipfile.ZipFile(archive_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(built.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(built))
    unzipped = sum(p.stat().st_size for p in built.rglob("*") if p.is_file())
    return unzipped, archive_path.stat().st_size


def build_artifacts(artifacts: Path, layer: Layer) -> None:
    """``sam build`` (layers/Makefile, the layers' makefile build method): ``layer``'s files, built as
    ``make layer`` builds them, into the directory sam build names (which zips them itself)."""
    with tempfile.TemporaryDirectory() as scratch:
        _assemble(Path(scratch) / layer.directory, layer)
        shutil.copytree(Path(scratch) / layer.directory / "python", artifacts / "python", dirs_exist_ok=True)


def main() -> None:
    if sys.argv[1:2] == ["--artifacts"]:
        build_artifacts(Path(sys.argv[2]), LAYERS[sys.argv[3]])
        return
    for layer in LAYERS.values():
        unzipped, zipped = build(HERE, layer)
        archive = (HERE / layer.archive).relative_to(ROOT)
        print(f"{layer.name}: {archive} {zipped / 1e6:.1f} MB zipped, {unzipped / 1e6:.1f} MB unzipped")


if __name__ == "__main__":
    main()

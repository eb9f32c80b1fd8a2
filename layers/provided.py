"""What the layer, the Strands layer and the Lambda runtime ship, and so what the app layer leaves out:
the application's requirements are resolved against these pins, and a distribution one of them ships
is taken out of the app layer (in /opt/python one copy would hide the other)."""

from __future__ import annotations

import contextlib
import importlib.metadata
import re
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED_REQUIREMENTS, STRANDS_REQUIREMENTS, RUNTIME_REQUIREMENTS = (
    HERE / "requirements.txt",
    HERE / "strands-requirements.txt",
    HERE / "runtime-requirements.txt",
)


def shown(path: Path) -> str:
    """A path as the project's (relative to its root) where it is in it."""
    return str(path.relative_to(HERE.parent)) if path.is_relative_to(HERE.parent) else str(path)


def canonical(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(requirements: Path) -> dict[str, str]:
    """The ``name==version`` lines of a requirements file, by canonical name."""
    found = {}
    for line in requirements.read_text().splitlines():
        requirement = line.split("#", 1)[0].strip()
        if "==" in requirement:
            name, _, version = requirement.partition("==")
            found[canonical(name.split("[", 1)[0])] = version.strip()
    return found


def provided(strands: bool = False) -> dict[str, str]:
    """What the layer, the Lambda runtime and, with ``strands``, the Strands layer ship, by canonical name:
    the application's requirements are resolved against these pins, and none of them goes into its layer."""
    shipped = {**pins(SHARED_REQUIREMENTS), **pins(RUNTIME_REQUIREMENTS)}
    return {**shipped, **pins(STRANDS_REQUIREMENTS)} if strands else shipped


def refuse_editable(requirements: Path) -> None:
    """SystemExit for a requirement installed in editable mode: it would ship a .pth file and a path of
    the build machine, and Lambda reads no .pth file in /opt/python."""
    for number, line in enumerate(requirements.read_text().splitlines(), 1):
        if line.split("#", 1)[0].strip().startswith(("-e", "--editable")):
            raise SystemExit(
                f"{shown(requirements)}, line {number}, installs {line.strip()!r} in editable mode, which Lambda "
                "cannot import (no .pth file is read in /opt/python): name the package and its version, or put "
                "its code in app/; the app layer was not built"
            )


def drop_provided(target: Path, shipped: dict[str, str]) -> None:
    """Take out of ``target`` every distribution of ``shipped`` (another layer or the runtime ships it),
    and the scripts pip put in its bin/ (a layer runs none)."""
    inside = target.resolve()
    for info in sorted(target.glob("*.dist-info")):
        distribution = importlib.metadata.PathDistribution(info)
        if canonical(distribution.metadata["Name"]) not in shipped:
            continue
        for file in distribution.files or ():
            path = (target / file).resolve()
            if path.is_relative_to(inside):  # (a script's entry reads ../../bin/...: outside, never touched)
                with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                    path.unlink()
        shutil.rmtree(info, ignore_errors=True)
    shutil.rmtree(target / "bin", ignore_errors=True)
    for folder in sorted((p for p in target.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()  # (only where it is empty now)

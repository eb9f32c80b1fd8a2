"""``make layer``: build the Lambda layers and report their sizes against Lambda's limit.

- The **layer** (layers/build/python/, layers/layer.zip): shared/resumable without its local-only code
  (``resumable/local/``: the embedded AWS, the local server, make run and make demo; and
  ``resumable/local_runs.py``, where local runs serve) and without the
  ``resumable`` command (``resumable/cli/``), plus layers/requirements.txt.
- The optional **Strands layer** (layers/strands-build/, layers/strands-layer.zip):
  layers/strands-requirements.txt alone, the Strands Agents SDK and what it needs beyond the layer and
  the Lambda runtime, for the stacks whose agents are written with it (``StrandsAgents=true``).
- The **app layer** (layers/app-build/, layers/app-layer.zip), where the project has an ``app/`` folder:
  the application's own code (every file of app/ but its requirements.txt, tests/ and local.json) and
  the packages app/requirements.txt needs, resolved by pip against what the other layers and the
  Lambda runtime already ship (those are left out: a package in two layers would be two copies in
  /opt/python, the later one winning). It goes to the functions that build agents.

Every requirement is installed for Lambda's platform: python3.11 on arm64 (manylinux wheels, whatever
machine builds it; ``--only-binary``: a package with no such wheel stops the build, named by pip).
template.yaml's layers are built by ``sam build`` through layers/Makefile, which calls this same build
(``--artifacts DIR LAYER``); ``make layer`` builds them all into layers/ for the benchmark and tests.

``--local DIR`` builds the same layers (the Strands layer with StrandsAgents=true in samconfig.toml's
parameter overrides) for this machine instead (its own wheels: arm64's cannot be
imported here), with ``runtime/``: what Lambda's python3.11 runtime has beside the standard library
(boto3, botocore and what they need, at the versions this project pins: layers/runtime-requirements.txt).
make run serves an application's agents from them, each function in an interpreter of its own whose
path holds these and nothing else (resumable.local.execution).

What a function and its layers come to, unzipped, is held to Lambda's limit (262,144,000 bytes, "250
MB"): each layer's share is printed, and over the limit the build stops, naming the largest layer.

The requirements pip installs for a layer are kept in .venv/layer-requirements/ (per requirements and
options): a later build of the same requirements copies them instead of asking pip again.

Every module ships compiled (``__pycache__/*.cpython-311.pyc``, unchecked-hash: used whatever the
files' times). Lambda extracts a layer to a read-only /opt, where Python cannot write bytecode, so a
layer without it compiles every module it imports on every cold start (measured: about 1.6x the import
time of the same handler with bytecode).

This module uses the standard library only: ``sam build`` may run it with any python3.11.
"""

from __future__ import annotations

import compileall
import contextlib
import hashlib
import importlib.metadata
import os
import py_compile
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from layers.checks import MIB, check_limit, check_overlaps, size
from layers.provided import (
    RUNTIME_REQUIREMENTS,
    SHARED_REQUIREMENTS,
    STRANDS_REQUIREMENTS,
    drop_provided,
    provided,
    refuse_editable,
    shown,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
APP = ROOT / "app"


@dataclass(frozen=True)
class Layer:
    """One layer: its name in template.yaml, what it installs (``requirements``: pinned one by one, or
    the application's, resolved by pip), the code it copies in (``package``, shared/resumable, or the
    application's folder, ``app``), and where its unzipped files (``directory``) and archive go."""

    name: str
    logical_id: str
    requirements: Path
    directory: str
    archive: str
    package: Path | None = None
    app: Path | None = None
    strands: bool = False  # (the app layer's: whether the Strands layer ships beside it)


SHARED = Layer(
    "layer",
    "SharedLayer",
    SHARED_REQUIREMENTS,
    directory="build",
    archive="layer.zip",
    package=ROOT / "shared" / "resumable",
)
STRANDS = Layer(
    "strands layer",
    "StrandsLayer",
    STRANDS_REQUIREMENTS,
    directory="strands-build",
    archive="strands-layer.zip",
)
# What Lambda's python3.11 runtime has beside the standard library, as this project pins it (built for
# this machine only: the functions that run here need it; Lambda has its own).
RUNTIME = Layer("runtime", "runtime", RUNTIME_REQUIREMENTS, directory="runtime", archive="")


def app_layer(app: Path = APP, *, strands: bool = False) -> Layer:
    """The application's layer: ``app``'s code and what its requirements.txt needs beyond the layer, the
    runtime and, with ``strands`` (StrandsAgents=true), the Strands layer."""
    return Layer(
        "app layer",
        "AppLayer",
        app / "requirements.txt",
        directory="app-build",
        archive="app-layer.zip",
        app=app,
        strands=strands,
    )


# By their names in template.yaml, which layers/Makefile passes to --artifacts.
LAYERS = {layer.logical_id: layer for layer in (SHARED, STRANDS, app_layer())}


def with_strands() -> bool:
    """Whether the stack gets the Strands layer: ``STRANDS_AGENTS``, else samconfig.toml's StrandsAgents."""
    said = os.environ.get("STRANDS_AGENTS") or stack_parameters().get("StrandsAgents", "false")
    return said.strip().lower() == "true"


# What never ships: local-only code (and the notes of where local runs serve), the command people run in
# a terminal (a client, not a function's code), and caches. Of app/: its requirements (installed, not
# copied), its tests and its local values.
NOT_SHIPPED = frozenset({"local", "local_runs.py", "cli"})
APP_NOT_SHIPPED = frozenset({"requirements.txt", "tests", "local.json"})


def not_shipped(directory: str, names: list[str]) -> set[str]:
    package = Path(directory) == SHARED.package
    return {n for n in names if n == "__pycache__" or (package and n in NOT_SHIPPED)}


def _app_not_shipped(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n == "__pycache__" or n.startswith(".")}


# Lambda's runtime: the bytecode is for this Python and no other.
PYTHON = (3, 11)


def _compile(target: Path) -> None:
    """Every module of ``target`` (a folder, or one module) compiled for the runtime, unchecked-hash."""
    if sys.version_info[:2] != PYTHON:
        raise SystemExit(
            f"the layer is for python{PYTHON[0]}.{PYTHON[1]} and ships its bytecode, which only that Python "
            f"writes; this is {sys.version_info[0]}.{sys.version_info[1]}: run make layer with python3.11"
        )
    mode = py_compile.PycInvalidationMode.UNCHECKED_HASH
    if target.is_dir():
        compiled = compileall.compile_dir(target, quiet=2, workers=0, invalidation_mode=mode)
    else:
        compiled = target.suffix != ".py" or compileall.compile_file(target, quiet=2, invalidation_mode=mode)
    if not compiled:
        raise SystemExit(f"compiling the modules in {target} failed: the layer was not built")


@dataclass(frozen=True)
class Platform:
    """Whose wheels pip installs: Lambda's (``machine`` aarch64: template.yaml's Architectures arm64),
    or this machine's (``machine`` None: the interpreter that builds)."""

    machine: str | None

    @property
    def pip(self) -> list[str]:
        only_wheels = ["--only-binary=:all:"]
        if self.machine is None:
            return only_wheels
        return [
            *only_wheels, "--platform", f"manylinux2014_{self.machine}", "--implementation", "cp",
            "--python-version", f"{PYTHON[0]}.{PYTHON[1]}",
        ]  # fmt: skip


LAMBDA = Platform("aarch64")
HERE_AND_NOW = Platform(None)

# Where the installed requirements are kept, per requirements file and options, when the project has
# its .venv: a second build of unchanged requirements (sam build after make layer, make bench, the
# tests) copies them instead of asking pip again.
KEPT = ROOT / ".venv" / "layer-requirements"


def _pip(layer: Layer, platform: Platform, target: Path) -> None:
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
    command += platform.pip  # (--no-compile: the layer's bytecode is ours, unchecked-hash: _compile)
    if layer.app is None:
        command += ["--no-deps", "--target", str(target), "-r", str(layer.requirements)]
        subprocess.run(command, check=True)
        return
    refuse_editable(layer.requirements)
    shipped = provided(layer.strands)
    with tempfile.TemporaryDirectory() as scratch:
        constraints = Path(scratch) / "constraints.txt"
        constraints.write_text("".join(f"{name}=={version}\n" for name, version in sorted(shipped.items())))
        command += ["--target", str(target), "-r", str(layer.requirements), "-c", str(constraints)]
        done = subprocess.run(command, check=False)
    if done.returncode != 0:
        raise SystemExit(
            f"pip could not install {shown(layer.requirements)} for {_where(platform)} (it said why above): the "
            f"{layer.name} was not built. A requirement needs a wheel for that platform, and may not conflict with "
            f"what the other layers and the Lambda runtime ship ({shown(SHARED.requirements)}, "
            f"{shown(RUNTIME.requirements)}" + (f", {shown(STRANDS.requirements)})" if layer.strands else ")")
        )
    drop_provided(target, shipped)


def _where(platform: Platform) -> str:
    return "this machine" if platform.machine is None else f"Lambda's python3.11 on {platform.machine}"


def _install(layer: Layer, platform: Platform, target: Path) -> None:
    """``layer``'s requirements installed into ``target``: by pip, or copied from what pip installed
    for the same requirements before."""
    if not KEPT.parent.is_dir():
        _pip(layer, platform, target)
        _compile(target)
        return
    # What pip installs depends on the requirements (their comments and order aside), the options, pip
    # itself and where it looks.
    where = sorted((name, value) for name, value in os.environ.items() if name.startswith("PIP_"))
    asked = sorted(line.split("#", 1)[0].strip() for line in layer.requirements.read_text().splitlines())
    key = [*filter(None, asked), *platform.pip, importlib.metadata.version("pip"), repr(where), "compiled-2"]
    if layer.app is not None:
        key += [repr(sorted(provided(layer.strands).items()))]
    digest = hashlib.sha256("\n".join(key).encode()).hexdigest()[:16]
    kept = KEPT / f"{layer.directory}-{digest}"
    if not kept.is_dir():
        KEPT.mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(dir=KEPT, ignore_cleanup_errors=True) as scratch:
            _pip(layer, platform, Path(scratch))
            _compile(Path(scratch))  # (once: every build copies the bytecode with the modules)
            with contextlib.suppress(OSError):  # another build kept the same install first: use theirs
                os.rename(scratch, kept)
    shutil.copytree(kept, target)


def _assemble(built: Path, layer: Layer, platform: Platform) -> None:
    """``layer``'s files in ``built``/python: its requirements, its code, compiled."""
    shutil.rmtree(built, ignore_errors=True)
    target = built / "python"
    if layer.app is not None and not layer.app.is_dir():
        raise SystemExit(f"there is no {shown(layer.app)}/ to build the {layer.name} of: make new-agent makes one")
    if layer.requirements.exists():
        _install(layer, platform, target)
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    if layer.package is not None:
        shutil.copytree(layer.package, target / "resumable", ignore=not_shipped)
        copied.append(target / "resumable")
    if layer.app is not None:
        for source in sorted(layer.app.iterdir()):
            if source.name in APP_NOT_SHIPPED | _app_not_shipped(str(layer.app), [source.name]):
                continue
            if (target / source.name).exists():
                raise SystemExit(
                    f"app/{source.name} has the name of what {shown(layer.requirements)} installs: one would hide "
                    "the other in /opt/python. Rename it in app/; the app layer was not built"
                )
            if source.is_dir():
                shutil.copytree(source, target / source.name, ignore=_app_not_shipped)
            else:
                shutil.copy2(source, target / source.name)
            copied.append(target / source.name)
    for code in copied:  # (the requirements came compiled)
        _compile(code)


def build(into: Path = HERE, layer: Layer = SHARED, platform: Platform = LAMBDA) -> tuple[int, int]:
    """Build ``layer`` in ``into`` (its directory and archive, ``build/`` and ``layer.zip`` for the
    main one); return its (unzipped, zipped) sizes in bytes."""
    built, archive_path = into / layer.directory, into / layer.archive
    _assemble(built, layer, platform)
    with zipfile.ZipFile(archive_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(built.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(built))
    return size(built), archive_path.stat().st_size


def build_artifacts(artifacts: Path, layer: Layer) -> None:
    """``sam build`` (layers/Makefile, the layers' makefile build method): ``layer``'s files, built as
    ``make layer`` builds them, into the directory sam build names (which zips them itself). The app
    layer of a project without app/ is one file saying so: the stack attaches it only with an
    AgentFactory of the application's, which make predeploy checks can be imported."""
    if layer.app is not None and not layer.app.is_dir():
        (artifacts / "python").mkdir(parents=True, exist_ok=True)
        (artifacts / "python" / "NO-APP.txt").write_text("This project has no app/ folder: make new-agent makes one.\n")
        return
    if layer.app is not None:
        layer = app_layer(layer.app, strands=with_strands())
    with tempfile.TemporaryDirectory() as scratch:
        _assemble(Path(scratch) / layer.directory, layer, LAMBDA)
        shutil.copytree(Path(scratch) / layer.directory / "python", artifacts / "python", dirs_exist_ok=True)
    check_limit({layer.name: size(artifacts)})


def build_local(into: Path, app: Path | None = APP, *, strands: bool = False) -> dict[str, Path]:
    """The layers a function may get (the Strands layer with ``strands``, the app layer where ``app`` is a
    folder) and the runtime's packages, built for this machine into ``into``; each one's python/ folder,
    by logical id (``runtime`` for the runtime's)."""
    wanted = [SHARED, RUNTIME] + ([STRANDS] if strands else [])
    wanted += [app_layer(app, strands=strands)] if app is not None and app.is_dir() else []
    found = {}
    for layer in wanted:
        built = into / layer.logical_id
        _assemble(built, layer, HERE_AND_NOW)
        found[layer.logical_id] = built / "python"
    check_overlaps(found)
    return found


def stack_parameters(samconfig: Path = ROOT / "samconfig.toml") -> dict[str, str]:
    """The template's parameters as samconfig.toml's deploy section overrides them (what sam deploy
    --guided saved, or make new-agent wrote): ``Name=value`` pairs, as SAM reads them."""
    try:
        config = tomllib.loads(samconfig.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    overrides = config.get("default", {}).get("deploy", {}).get("parameters", {}).get("parameter_overrides", "")
    pairs: Iterable[str] = overrides if isinstance(overrides, list) else shlex.split(str(overrides))
    return dict(pair.split("=", 1) for pair in pairs if "=" in pair)


def main() -> None:
    if sys.argv[1:2] == ["--artifacts"]:
        build_artifacts(Path(sys.argv[2]), LAYERS[sys.argv[3]])
        return
    if sys.argv[1:2] == ["--local"]:
        for logical_id, python in build_local(Path(sys.argv[2]), strands=with_strands()).items():
            print(f"{logical_id}: {shown(python)} {size(python) / MIB:.1f} MiB (for this machine)")
        return
    strands = with_strands()
    layers = [SHARED, STRANDS] + ([app_layer(strands=strands)] if APP.is_dir() else [])
    unzipped = {}
    for layer in layers:
        unzipped[layer.name], zipped = build(HERE, layer)
        archive = (HERE / layer.archive).relative_to(ROOT)
        print(f"{layer.name}: {archive} {zipped / MIB:.1f} MiB zipped, {unzipped[layer.name] / MIB:.1f} MiB unzipped")
    check_overlaps({layer.name: HERE / layer.directory / "python" for layer in layers if strands or layer != STRANDS})
    carried = {name: bytes_ for name, bytes_ in unzipped.items() if strands or name != STRANDS.name}
    function = size(ROOT / "functions" / "start_turn")
    who = "StartTurn, SubmitApproval and Slack" if APP.is_dir() else "each function"
    said = " (StrandsAgents=true)" if strands else " (StrandsAgents=false: not the Strands layer)"
    print(check_limit({"function's code": function, **carried}, who + said))


if __name__ == "__main__":
    main()

"""make layer: shared/ and its pinned dependencies for python3.11 on arm64, without boto3, without
local-only code, under 10 MB; the optional Strands layer, the Strands Agents SDK with what it needs
beyond that layer and the Lambda runtime; and an application's layer, its code and what its
requirements need beyond both and the runtime."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from layers.build import SHARED, STRANDS, Layer, app_layer, build
from tests.patience import HANG_SECONDS


@dataclass(frozen=True)
class Built:
    unzipped: int
    zipped: int
    names: list[str]
    archive: zipfile.ZipFile
    # The unzipped layer's python/ directory, which Lambda puts on the path as /opt/python.
    python: Path


def _build(tmp_path_factory: pytest.TempPathFactory, layer: Layer) -> Built:
    """``make layer``'s build, in a directory of the tests' own (not layers/, which a developer's
    ``make layer`` may be writing)."""
    into = tmp_path_factory.mktemp(layer.directory)
    unzipped, zipped = build(into, layer)
    archive = zipfile.ZipFile(into / layer.archive)
    return Built(unzipped, zipped, archive.namelist(), archive, into / layer.directory / "python")


@pytest.fixture(scope="module")
def layer(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _build(tmp_path_factory, SHARED)


@pytest.fixture(scope="module")
def strands_layer(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _build(tmp_path_factory, STRANDS)


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
@pytest.mark.parametrize(("which", "package"), [("layer", "resumable"), ("strands_layer", "strands")])
def test_every_module_a_layer_ships_is_compiled_for_the_runtime(
    which: str, package: str, request: pytest.FixtureRequest
) -> None:
    """Lambda's /opt is read-only: a module without bytecode is compiled again on every cold start."""
    built: Built = request.getfixturevalue(which)
    compiled = {n for n in built.names if n.endswith(".cpython-311.pyc")}
    sources = [n for n in built.names if n.endswith(".py")]
    uncompiled = [n for n in sources if _bytecode_of(n) not in compiled]
    assert len(sources) > 100 and uncompiled == [], f"modules shipped without bytecode: {uncompiled[:5]}"
    header = built.archive.read(f"python/{package}/__pycache__/__init__.cpython-311.pyc")
    assert int.from_bytes(header[4:8], "little") == 0b01, "the bytecode must be unchecked-hash (flags 0b01)"


def _bytecode_of(source: str) -> str:
    folder, _, module = source.rpartition("/")
    return f"{folder}/__pycache__/{module[:-3]}.cpython-311.pyc"


@pytest.mark.slow
def test_a_second_build_of_unchanged_requirements_is_the_same_layer(
    layer: Built, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The requirements pip installed for the first build are kept (in .venv) and copied by the next."""
    again = _build(tmp_path_factory, SHARED)
    assert again.names == layer.names
    assert again.unzipped == layer.unzipped


# An import of moto, or of the local-only package, in shipped code.
_LOCAL_IMPORT = re.compile(r"^\s*(from|import)\s+(moto|resumable\.local)\b", re.MULTILINE)


@pytest.mark.slow
def test_the_layer_holds_no_local_only_code_and_nothing_it_ships_imports_it(layer: Built) -> None:
    archive, names = layer.archive, layer.names
    assert not any(n.startswith(("python/resumable/local/", "python/resumable/cli/", "python/moto/")) for n in names)
    assert "python/resumable/local_runs.py" not in names
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


# -- the optional Strands layer ----------------------------------------------------------------------------

# What the Lambda runtime has beside the standard library: boto3 and what it needs (modules and projects).
RUNTIME = frozenset({"boto3", "botocore", "jmespath", "s3transfer", "urllib3", "six", "dateutil", "python_dateutil"})


def _top_level(built: Built) -> set[str]:
    """What the layer puts in /opt/python: its packages, modules and distributions' metadata."""
    return {n.split("/")[1] for n in built.names} - {"bin", "__pycache__"}


@pytest.mark.slow
def test_the_strands_layer_ships_the_sdk_and_only_what_neither_the_layer_nor_the_runtime_has(
    layer: Built, strands_layer: Built
) -> None:
    """Both layers extract into /opt/python: a package in both would be two copies, the later one winning."""
    shipped = _top_level(strands_layer)
    assert {"strands", "opentelemetry", "mcp", "docstring_parser", "watchdog", "httpx", "cryptography"} <= shipped
    assert any(n.endswith("-aarch64-linux-gnu.so") for n in strands_layer.names), "compiled for arm64"
    assert shipped & _top_level(layer) == set()
    assert {re.split(r"[.-]", entry)[0] for entry in shipped} & RUNTIME == set()
    assert not any(n.startswith(("python/strands/", "python/strands_agents-")) for n in layer.names)
    assert layer.unzipped + strands_layer.unzipped < 250_000_000, "Lambda's limit, a function and its layers"


def _this_machines(entry: Path, site: Path) -> Path:
    """``entry`` of a layer, or this machine's copy of it where it holds extension modules (the layer's
    are for arm64)."""
    compiled = entry.suffix == ".so" or (entry.is_dir() and any(entry.rglob("*.so")))
    if not compiled:
        return entry
    if entry.is_dir():
        return site / entry.name
    [module] = site.glob(f"{entry.name.split('.')[0]}.*.so")
    return module


@pytest.mark.slow
def test_strands_imports_from_the_two_layers_and_the_runtime_alone(
    layer: Built, strands_layer: Built, tmp_path: Path
) -> None:
    """As in Lambda with StrandsAgents true: /opt/python holds both layers, the runtime has boto3, and
    nothing else is on the path (this test's site-packages are not)."""
    path = tmp_path / "opt-python"
    path.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for built in (layer, strands_layer):
        for entry in built.python.iterdir():
            if entry.name not in {"bin", "__pycache__"}:
                used = _this_machines(entry, site)
                (path / used.name).symlink_to(used)
    for module in RUNTIME - {"python_dateutil"}:
        [found] = [site / module] if (site / module).is_dir() else [site / f"{module}.py"]
        (path / found.name).symlink_to(found)
    probe = """
import resumable, strands
from strands import Agent, tool
from strands.models.bedrock import BedrockModel
from strands.tools.mcp import MCPClient

@tool
def get_weather(city: str) -> str:
    '''The weather in a city.'''
    return "sunny"

agent = Agent(model=BedrockModel(model_id="some-model", region_name="us-east-1"), tools=[get_weather])
assert agent.tool_names == ["get_weather"], agent.tool_names
print(strands.__file__)
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHON"))}
    env |= {"PYTHONPATH": str(path), "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"}
    env |= {"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": str(tmp_path / "none")}
    imported = subprocess.run(
        [sys.executable, "-S", "-c", probe],  # -S: no site-packages
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == str(path / "strands" / "__init__.py"), imported.stdout


# -- the app layer -----------------------------------------------------------------------------------------


def write_app(folder: Path, requirements: str) -> Path:
    """An application's folder: a package that imports a third-party module, its requirements, and what
    never ships (its tests, its local values)."""
    (folder / "orders").mkdir(parents=True)
    (folder / "orders" / "__init__.py").write_text("import humanize\n\nSIZE = humanize.naturalsize(2048)\n")
    (folder / "requirements.txt").write_text(requirements)
    (folder / "tests").mkdir()
    (folder / "tests" / "test_orders.py").write_text("def test_nothing() -> None:\n    pass\n")
    (folder / "local.json").write_text('{"secrets": {"token": "not for Lambda"}}\n')
    return folder


@pytest.fixture(scope="module")
def app_built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    # pydantic unpinned: resolved to the layer's pin, and left to the layer.
    app = write_app(tmp_path_factory.mktemp("project") / "app", "humanize==4.17.0\npydantic\n")
    return _build(tmp_path_factory, app_layer(app))


@pytest.mark.slow
def test_the_app_layer_ships_the_apps_code_and_what_its_requirements_need_beyond_the_other_layers(
    app_built: Built, layer: Built
) -> None:
    names = app_built.names
    assert "python/orders/__init__.py" in names
    assert "python/orders/__pycache__/__init__.cpython-311.pyc" in names, "compiled, as the other layers"
    assert any(n.startswith("python/humanize/") for n in names)
    assert not any(n.startswith(("python/requirements.txt", "python/tests/", "python/local.json")) for n in names)
    assert _top_level(app_built) & _top_level(layer) == set(), "what the layer ships stays the layer's"
    assert not any(n.startswith(("python/pydantic", "python/typing_extensions")) for n in names)
    assert {re.split(r"[.-]", entry)[0] for entry in _top_level(app_built)} & RUNTIME == set()


@pytest.mark.slow
def test_an_app_requirement_that_conflicts_with_the_other_layers_stops_the_build_naming_the_files(
    tmp_path: Path,
) -> None:
    app = write_app(tmp_path / "app", "pydantic<2\n")
    with pytest.raises(SystemExit) as stopped:
        build(tmp_path / "out", app_layer(app))
    said = str(stopped.value)
    assert f"pip could not install {app / 'requirements.txt'} for Lambda's python3.11 on aarch64" in said
    assert "the app layer was not built" in said and "layers/requirements.txt" in said


@pytest.mark.slow
def test_without_the_strands_layer_the_app_layer_keeps_what_only_that_layer_would_ship(tmp_path: Path) -> None:
    """requests needs idna and certifi, which the Strands layer ships: without it, the app layer must."""
    app = write_app(tmp_path / "app", "humanize==4.17.0\nrequests==2.32.3\n")
    build(tmp_path / "out", app_layer(app, strands=False))
    shipped = {p.name for p in (tmp_path / "out" / "app-build" / "python").iterdir()}
    assert {"requests", "idna", "certifi", "humanize"} <= shipped, shipped
    assert "urllib3" not in shipped, "the Lambda runtime's (boto3 needs it)"

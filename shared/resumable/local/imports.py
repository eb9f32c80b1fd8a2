"""make predeploy's import check: every function imports from its layers, and the agent factory builds.

For each of template.yaml's functions, a fresh interpreter whose path is what Lambda gives the
function (its code, its layers as built for this machine, the runtime's boto3: resumable.local.execution)
imports the handler; a function that builds agents (the template gives it the app layer) then builds
them once with the agent factory, against an embedded AWS. An import that fails is named with the file
that imported it, the layer that file is in, where the module was looked for, and the requirements file
to add it to. Then each layer ``sam build`` made for Lambda (.aws-sam/build) is held to the same layer
built here: the same packages at the same versions, so what imported here imports there.

    python -m resumable.local.imports     # make predeploy runs it after sam build
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from resumable.local.app_values import LocalValues, put
from resumable.local.application import APP, BUILT, DEMO, application, layers_build, shown
from resumable.local.execution import BOOTSTRAP, Layout, builds_agents
from resumable.local.functions import ROOT, Function, functions, load_template

# What each folder of a function's path is, and the requirements file that fills it.
PLACES = {
    "SharedLayer": ("the resumable layer", "layers/requirements.txt"),
    "StrandsLayer": ("the Strands layer", "layers/strands-requirements.txt"),
    "AppLayer": ("the app layer", "app/requirements.txt"),
    "runtime": ("the Lambda runtime", "layers/runtime-requirements.txt"),
}
SAM_BUILT = ROOT / ".aws-sam" / "build"


def check_function(
    function: Function,
    layout: Layout,
    template: dict[str, Any],
    factory: str,
    environment: Mapping[str, str],
    places: Mapping[str, tuple[str, str]] = PLACES,
) -> str | None:
    """What is wrong with ``function`` run from ``layout``, or None: its handler imports and, if it builds
    agents, ``factory`` builds them. ``places`` names the folders of its path (``PLACES``, by default)."""
    path = layout.path(function, template)
    factory = factory if builds_agents(function, template) else ""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        ran = subprocess.run(
            [
                sys.executable,
                "-I",
                "-S",
                str(BOOTSTRAP),
                "--check",
                json.dumps(path),
                function.handler,
                factory,
                str(report),
            ],
            env=dict(environment),
            cwd=path[0],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if not report.exists():
            return f"its check did not finish (exit {ran.returncode}): {ran.stderr.strip()[-2000:]}"
        said = json.loads(report.read_text())
    if said["failed"] is None:
        return None
    return _explained(said, path, {str(folder): places[name] for name, folder in layout.layers.items()}, factory)


def _explained(said: dict[str, Any], path: list[str], named: dict[str, tuple[str, str]], factory: str) -> str:
    """What failed, in words; ``named``: each layer's folder, what it is and the requirements that fill it."""
    what = "its handler" if said["failed"] == "handler" else f"the agent factory {factory}"
    code = ("its code", PLACES["SharedLayer"][1])
    places = [named.get(entry, code)[0] for entry in path]
    missing = said.get("missing")
    if not missing:
        return f"{what} failed: {said['error']}"
    if missing.partition(".")[0] == factory.partition(":")[0].partition(".")[0] and said["failed"] == "factory":
        return (
            f"the agent factory's module {missing} is in none of {', '.join(places)}: AgentFactory ({factory}) "
            "names a package of app/, which the app layer ships (is it spelled as in app/?)"
        )
    layer, requirements = named.get(said.get("in") or "", code)
    by = f"{said['importer']} (in {layer})" if said.get("importer") else what
    if missing.partition(".")[0] == "strands" and PLACES["StrandsLayer"][0] not in places:
        return (
            f"{by} imports {missing}, which the Strands layer ships, and this stack has none: deploy with "
            "StrandsAgents=true (samconfig.toml's parameter_overrides: make run and make predeploy read it too)"
        )
    return (
        f"{by} imports {missing}, which none of the places it was looked for has ({', '.join(places)}): "
        f"add it to {requirements}"
    )


def places_of(app: Path | None) -> dict[str, tuple[str, str]]:
    """``PLACES``, the app layer's requirements those of ``app`` (where there is one)."""
    return PLACES if app is None else {**PLACES, "AppLayer": ("the app layer", shown(app / "requirements.txt"))}


def compare_with_sam_build(layout: Layout, built: Path = SAM_BUILT) -> list[str]:
    """Each layer sam build made for Lambda against the same layer built here: what differs."""
    checks = layers_build("checks").same_distributions
    problems = []
    for logical_id, here in layout.layers.items():
        there = built / logical_id / "python"
        if logical_id != "runtime" and there.is_dir():
            problems += [f"{logical_id}: {difference}" for difference in checks(there, here)]
    return problems


def _carried(built: Path, strands: bool, app: bool) -> list[str]:
    """What a function that builds agents carries of what sam build built, against Lambda's limit (one
    line printed), or the problem it is over it."""
    layers = ["SharedLayer"] + (["StrandsLayer"] if strands else []) + (["AppLayer"] if app else [])
    if not all((built / name).is_dir() for name in [*layers, "StartTurnFunction"]):
        return []
    checks = layers_build("checks")
    shares = {name: checks.size(built / name) for name in ["StartTurnFunction", *layers]}
    try:
        print(checks.check_limit(shares, "StartTurn, SubmitApproval and Slack, as sam build built them"))
    except SystemExit as over:
        return [str(over)]
    return []


def main(argv: list[str] | None = None) -> int:
    import argparse

    from resumable.local.embedded_aws import embedded_aws

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--app", type=Path, default=APP, help="the application's folder (default: app/)")
    parser.add_argument("--samconfig", type=Path, default=ROOT / "samconfig.toml", help="its deploy parameters")
    parser.add_argument("--into", type=Path, default=BUILT, help="where to build the layers for this machine")
    parser.add_argument("--sam-build", type=Path, default=SAM_BUILT, help="what sam build built for Lambda")
    args = parser.parse_args(argv)
    began = time.monotonic()
    app = application(folder=args.app, samconfig=args.samconfig)
    factory = app.factory if app is not None else os.environ.get("AGENT_FACTORY") or DEMO
    folder, strands = (app.folder, app.strands) if app is not None else (None, False)
    layout = Layout(layers_build().build_local(args.into, folder, strands=strands))
    template = load_template()
    places = places_of(folder)
    failed: dict[str, list[str]] = {}
    named = f"predeploy-{uuid.uuid4().hex[:12]}"  # (one process's embedded AWSes share their backends)
    with embedded_aws(table_name=named, bucket_name=named) as settings:
        environment = {**os.environ, **settings.environment(), "AGENT_FACTORY": factory}
        if folder is not None:  # (its settings and secrets, as make run serves them: app/local.json)
            environment |= put(LocalValues.read(folder / "local.json"), settings)
        for function in functions(template).values():
            problem = check_function(function, layout, template, factory, environment, places)
            print(f"  {function.name}: {'ok' if problem is None else 'FAILED'}", flush=True)
            if problem is not None:
                failed.setdefault(problem, []).append(function.name)
    problems = [f"{', '.join(names)}: {problem}" for problem, names in failed.items()]
    problems += compare_with_sam_build(layout, args.sam_build)
    problems += _carried(args.sam_build, strands, folder is not None)
    if problems:
        print(f"the import check: {len(problems)} problem(s):\n" + "\n".join(f"  {p}" for p in problems))
        return 1
    print(
        f"the import check: every function's handler imports from its layers and {factory} builds its agents "
        f"({time.monotonic() - began:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

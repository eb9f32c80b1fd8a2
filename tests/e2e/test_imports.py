"""make predeploy's import check (resumable.local.imports): every function's handler imports from its
layers, built for this machine, in a fresh interpreter with nothing else on its path; the agent factory
builds its agents once; a module no layer has is named with who imported it, where it was looked for
and the requirements file to add it to; and sam build's layers hold the same packages as the ones
checked here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from resumable.local.execution import Layout
from resumable.local.imports import _explained, compare_with_sam_build, main
from tools.new_agent import main as new_agent
from tools.predeploy import CHECKS

ROOT = Path(__file__).resolve().parents[2]


def _project(root: Path, requirements: str | None = None) -> Path:
    shutil.copy(ROOT / "samconfig.toml", root / "samconfig.toml")
    assert new_agent(["--name", "orders", "--into", str(root)]) == 0
    if requirements is not None:
        (root / "app" / "requirements.txt").write_text(requirements)
    return root


def _check(root: Path) -> int:
    """The import check of ``root``'s app, its factory the one its samconfig.toml names (as make predeploy
    runs it: the tests' own AGENT_FACTORY, the demo's, aside)."""
    args = ["--app", str(root / "app"), "--samconfig", str(root / "samconfig.toml")]
    with pytest.MonkeyPatch.context() as env:
        env.delenv("AGENT_FACTORY", raising=False)
        return main([*args, "--into", str(root / "lambda"), "--sam-build", str(root / "none")])


@pytest.mark.slow
def test_a_dependency_missing_from_the_apps_requirements_is_named_with_the_file_to_add_it_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example without humanize in its requirements (the negative control of docs/your-agent.md's make
    predeploy, which passes: tests/e2e/test_your_agent.py)."""
    root = _project(tmp_path, requirements="# nothing\n")
    assert _check(root) == 1
    said = capsys.readouterr().out
    assert "StartTurnFunction: FAILED" in said and "GetTurnFunction: ok" in said
    assert (
        "StartTurnFunction, SubmitApprovalFunction, SlackFunction: orders/agents.py (in the app layer) imports "
        "humanize, which none of the places it was looked for has (its code, the resumable layer, the app layer, "
        f"the Lambda runtime): add it to {root / 'app' / 'requirements.txt'}"
    ) in said


def test_a_failure_is_told_by_what_failed_where_the_module_was_looked_for_and_what_brings_it() -> None:
    named = {
        "/opt/shared": ("the resumable layer", "layers/requirements.txt"),
        "/opt/app": ("the app layer", "app/r.txt"),
    }
    path = ["/task", "/opt/shared", "/opt/app"]
    factory = "orders.agents:build_agents"
    assert _explained({"failed": "handler", "error": "KeyError: 'x'"}, path, named, factory) == (
        "its handler failed: KeyError: 'x'"
    )
    spelled = {"failed": "factory", "error": "ValueError: ...", "missing": "orders"}
    assert _explained(spelled, path, named, factory).startswith(
        "the agent factory's module orders is in none of its code, the resumable layer, the app layer: AgentFactory"
    )
    by_the_layer = {
        "failed": "handler",
        "error": "...",
        "missing": "jsonschema",
        "importer": "x.py",
        "in": "/opt/shared",
    }
    assert _explained(by_the_layer, path, named, factory).endswith("add it to layers/requirements.txt")
    strands = {"failed": "factory", "error": "...", "missing": "strands", "importer": "o/a.py", "in": "/opt/app"}
    assert _explained(strands, path, named, factory) == (
        "o/a.py (in the app layer) imports strands, which the Strands layer ships, and this stack has none: deploy "
        "with StrandsAgents=true (samconfig.toml's parameter_overrides: make run and make predeploy read it too)"
    )
    unplaced = {"failed": "factory", "error": "...", "missing": "numpy"}
    assert _explained(unplaced, path, named, factory).startswith(f"the agent factory {factory} imports numpy")


def test_a_layer_sam_build_built_with_other_packages_than_the_one_checked_here_is_named(tmp_path: Path) -> None:
    here, there = tmp_path / "here" / "AppLayer", tmp_path / "built" / "AppLayer" / "python"
    for folder, names in ((here, ["humanize-4.17.0", "tzdata-2026.1"]), (there, ["humanize-4.17.0", "tzdata-2025.2"])):
        for name in names:
            (folder / f"{name}.dist-info").mkdir(parents=True)
    layout = Layout({"AppLayer": here, "runtime": tmp_path / "runtime"})
    assert compare_with_sam_build(layout, tmp_path / "built") == [
        "AppLayer: only for Lambda: tzdata-2025.2",
        "AppLayer: only for this machine: tzdata-2026.1",
    ]
    assert compare_with_sam_build(layout, tmp_path / "nothing-built") == []


def test_predeploy_runs_the_import_check_after_sam_build() -> None:
    names = list(CHECKS)
    assert names.index("every function imports from its layers and the agent factory builds") == len(names) - 1
    assert names.index("sam build") < len(names) - 1

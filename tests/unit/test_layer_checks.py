"""make layer's checks that need no build: Lambda's size limit on a function and its layers, two layers
shipping one name, and the stack's parameters as samconfig.toml overrides them."""

from __future__ import annotations

from pathlib import Path

import pytest

from layers.build import stack_parameters
from layers.checks import LIMIT_BYTES, MIB, check_limit, check_overlaps, overlaps
from layers.provided import drop_provided, refuse_editable


def test_a_function_under_lambdas_limit_gets_one_line_with_each_layers_share() -> None:
    said = check_limit({"function's code": 4096, "layer": 26 * MIB, "app layer": 3 * MIB}, "StartTurn")
    assert said.startswith("StartTurn: 29.0 MiB unzipped of Lambda's 250 MiB")
    assert "layer 26.0 MiB" in said and "app layer 3.0 MiB" in said


def test_over_lambdas_limit_the_build_stops_naming_the_largest_layer() -> None:
    shares = {"layer": 26 * MIB, "strands layer": 42 * MIB, "app layer": LIMIT_BYTES - 60 * MIB}
    with pytest.raises(SystemExit) as stopped:
        check_limit(shares, "StartTurn")
    said = str(stopped.value)
    assert "over Lambda's limit" in said and "nothing was deployed" in said
    assert "The largest is the app layer (190.0 MiB)" in said


def test_exactly_at_the_limit_is_allowed() -> None:
    check_limit({"layer": LIMIT_BYTES})


def test_a_name_two_layers_ship_is_found_with_the_layers_that_ship_it(tmp_path: Path) -> None:
    shared, app = tmp_path / "shared", tmp_path / "app"
    for folder, names in ((shared, ["pydantic", "resumable", "typing_extensions.py"]), (app, ["pydantic", "orders"])):
        folder.mkdir()
        for name in names:
            if name.endswith(".py"):
                (folder / name).write_text("")
            else:
                (folder / name).mkdir()
                (folder / name / "__init__.py").write_text("")
    (app / "typing_extensions.py").write_text("")
    (app / "__pycache__").mkdir()
    (shared / "__pycache__").mkdir()
    assert overlaps({"layer": shared, "app layer": app}) == {
        "pydantic": ["layer", "app layer"],
        "typing_extensions": ["layer", "app layer"],
    }
    with pytest.raises(SystemExit, match=r"pydantic \(in layer and app layer\)"):
        check_overlaps({"layer": shared, "app layer": app})
    check_overlaps({"layer": shared})


def test_the_stacks_parameters_are_read_from_samconfigs_overrides_as_sam_reads_them(tmp_path: Path) -> None:
    config = tmp_path / "samconfig.toml"
    config.write_text(
        'version = 0.1\n[default.deploy.parameters]\nstack_name = "x"\n'
        'parameter_overrides = "AgentFactory=\\"orders.agents:build_agents\\" StrandsAgents=true Note=\\"a b\\""\n'
    )
    assert stack_parameters(config) == {
        "AgentFactory": "orders.agents:build_agents",
        "StrandsAgents": "true",
        "Note": "a b",
    }
    config.write_text('[default.deploy.parameters]\nparameter_overrides = ["AgentFactory=o.a:b", "BedrockModelIds="]\n')
    assert stack_parameters(config) == {"AgentFactory": "o.a:b", "BedrockModelIds": ""}
    assert stack_parameters(tmp_path / "none.toml") == {}


def test_a_folder_several_layers_share_without_init_is_a_namespace_lambda_merges(tmp_path: Path) -> None:
    strands, app = tmp_path / "strands", tmp_path / "app"
    for folder in (strands, app):
        (folder / "opentelemetry" / "sdk" if folder == strands else folder / "opentelemetry" / "exporter").mkdir(
            parents=True
        )
    assert overlaps({"strands layer": strands, "app layer": app}) == {}
    (app / "opentelemetry" / "__init__.py").write_text("")
    assert overlaps({"strands layer": strands, "app layer": app}) == {"opentelemetry": ["strands layer", "app layer"]}


def test_dropping_what_another_layer_ships_touches_nothing_outside_the_layer(tmp_path: Path) -> None:
    """pip's RECORD lists a script as ../../bin/<name> when it installs with --target."""
    target, outside = tmp_path / "kept" / "scratch", tmp_path / "bin"
    info = target / "httpx-0.29.0.dist-info"
    info.mkdir(parents=True)
    outside.mkdir()
    (outside / "httpx").write_text("a script of another environment")
    (target / "httpx").mkdir()
    (target / "httpx" / "__init__.py").write_text("")
    (target / "bin").mkdir()
    (target / "bin" / "httpx").write_text("the layer's copy of the script")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: httpx\nVersion: 0.29.0\n")
    (info / "RECORD").write_text("httpx/__init__.py,,\n../../bin/httpx,,\nhttpx-0.29.0.dist-info/RECORD,,\n")
    drop_provided(target, {"httpx": "0.29.0"})
    assert (outside / "httpx").read_text() == "a script of another environment"
    assert not (target / "httpx" / "__init__.py").exists() and not (target / "bin").exists() and not info.exists()


def test_an_editable_requirement_stops_the_build_saying_why(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("humanize==4.17.0\n-e ./vendor/orders-client  # ours\n")
    with pytest.raises(SystemExit, match=r"line 2, installs '-e ./vendor/orders-client  # ours' in editable mode"):
        refuse_editable(requirements)

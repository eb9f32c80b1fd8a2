"""make new-agent's checks that need no build: the names it takes, and its edit of samconfig.toml, which
it makes only where the file reads back as the same overrides with AgentFactory set."""

from __future__ import annotations

from pathlib import Path

import pytest

from layers.build import stack_parameters
from tools.new_agent import NotWrittenError, new_agent, set_parameter


@pytest.mark.parametrize(
    "name",
    ["Orders", "2fast", "class", "ﬁle", "café", "a" * 64, "_private", "pydantic", "humanize", "json", "app", "test"],
)
def test_a_name_that_is_no_package_of_its_own_is_refused_and_nothing_is_written(name: str, tmp_path: Path) -> None:
    (tmp_path / "samconfig.toml").write_text("version = 0.1\n")
    with pytest.raises(NotWrittenError, match="nothing was written"):
        new_agent(tmp_path, name)
    assert not (tmp_path / "app").exists()
    assert (tmp_path / "samconfig.toml").read_text() == "version = 0.1\n"


def test_agent_factory_is_added_beside_the_overrides_a_samconfig_already_has(tmp_path: Path) -> None:
    config = tmp_path / "samconfig.toml"
    config.write_text(
        'version = 0.1\n[default.deploy.parameters]  # ours\nstack_name = "s"  # a comment\n'
        'parameter_overrides = "BedrockModelIds=\\"a,b\\" Note=\\"x y\\""\n\n'
        '[prod.deploy.parameters]\nstack_name = "p"\n'
    )
    set_parameter(config, "AgentFactory", "orders.agents:build_agents")
    assert stack_parameters(config) == {
        "BedrockModelIds": "a,b",
        "Note": "x y",
        "AgentFactory": "orders.agents:build_agents",
    }
    assert "# ours" in config.read_text() and '[prod.deploy.parameters]\nstack_name = "p"' in config.read_text()


@pytest.mark.parametrize(
    "text",
    [
        '[default.deploy.parameters]\nparameter_overrides = [\n  "A=1",\n  "B=2",\n]\n',
        '[default.deploy.parameters]\nparameter_overrides = """A=1\nB=2"""\n',
        "[default.deploy.parameters\nbroken",
        '[default.deploy.parameters]\nparameter_overrides = "A=\\"unclosed"\n',
    ],
)
def test_a_samconfig_this_edit_cannot_read_back_is_left_as_it_was(text: str, tmp_path: Path) -> None:
    config = tmp_path / "samconfig.toml"
    config.write_text(text)
    with pytest.raises(NotWrittenError, match="nothing was written"):
        new_agent(tmp_path, "orders")
    assert config.read_text() == text and not (tmp_path / "app").exists()

"""What a factory enters through ``AgentContext.enter_context`` (an MCP client, say) is exited when the
run that built the agents ends, however it ends."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from resumable import Agent, FileSession, ScriptedModel
from resumable.exceptions import AgentFactoryError
from resumable.service.agent_factory import AgentContext, AgentFactory, build, load_factory


class Held:
    """A resource that records whether it is open."""

    def __init__(self, fails_to_close: bool = False) -> None:
        self.open = False
        self.fails_to_close = fails_to_close

    @contextmanager
    def opened(self) -> Iterator[Held]:
        self.open = True
        try:
            yield self
        finally:
            self.open = False
            if self.fails_to_close:
                raise OSError("the server would not stop")


@pytest.fixture
def context(tmp_path: Path) -> AgentContext:
    return AgentContext("s-1", "t-1", FileSession(tmp_path))


def holding(*resources: Held) -> AgentFactory:
    """A factory that enters ``resources`` and builds an agent."""

    def factory(context: AgentContext) -> Agent:
        for resource in resources:
            assert context.enter_context(resource.opened()) is resource
        return Agent(name="ops", model=ScriptedModel([]))

    return factory


def test_what_the_factory_entered_stays_open_during_the_run_and_is_exited_after_it(context: AgentContext) -> None:
    held = Held()

    with build(holding(held), context) as agent:
        assert agent.name == "ops"
        assert held.open

    assert not held.open


def test_what_the_factory_entered_is_exited_when_the_run_fails(context: AgentContext) -> None:
    held = Held()

    with pytest.raises(RuntimeError, match="the run failed"), build(holding(held), context):
        raise RuntimeError("the run failed")

    assert not held.open


def test_what_the_factory_entered_is_exited_when_the_factory_then_fails(context: AgentContext) -> None:
    held = Held()

    def factory(context: AgentContext) -> Agent:
        context.enter_context(held.opened())
        raise ValueError("the factory failed after connecting")

    with (
        pytest.raises(AgentFactoryError, match="raised ValueError: the factory failed after connecting"),
        build(factory, context),
    ):
        pytest.fail("no agent was built")

    assert not held.open


def test_what_the_factory_entered_is_exited_when_it_returns_no_agent(context: AgentContext) -> None:
    held = Held()

    def factory(context: AgentContext) -> Agent:
        context.enter_context(held.opened())
        return "an agent"  # type: ignore[return-value]

    with pytest.raises(AgentFactoryError, match="returned str, not an Agent"), build(factory, context):
        pytest.fail("no agent was built")

    assert not held.open


def test_a_resource_that_fails_to_close_is_logged_the_others_close_and_the_run_stands(
    context: AgentContext, caplog: pytest.LogCaptureFixture
) -> None:
    first, failing, last = Held(), Held(fails_to_close=True), Held()

    with build(holding(first, failing, last), context):
        pass

    assert not any(r.open for r in (first, failing, last))
    [logged] = [r for r in caplog.records if r.name == "resumable.service.agent_factory"]
    assert logged.levelname == "ERROR"
    assert "turn_id=<t-1> | a resource the agent factory entered failed to close: OSError" in logged.getMessage()


def test_a_factory_needing_the_missing_strands_sdk_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def without_strands(name: str, *args: object, **kwargs: object) -> object:
        if name.split(".", maxsplit=1)[0] == "strands":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", without_strands)
    monkeypatch.delitem(sys.modules, "tests.strands_factories", raising=False)
    with pytest.raises(ValueError, match=r"No module named 'strands'.*strands extra .*-e '\.\[strands\]'"):
        load_factory("tests.strands_factories:nested")

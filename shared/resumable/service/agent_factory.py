"""The application's agent factory: ``module:function``, called to build every agent afresh per call."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass

from resumable.runtime.agent import Agent
from resumable.runtime.session import Session


@dataclass(frozen=True)
class AgentContext:
    """What a factory may use: the session and turn it builds for, and ``session``, the Session to
    give agents that keep their own context (``as_tool(preserve_context=True)``)."""

    session_id: str
    turn_id: str
    session: Session


AgentFactory = Callable[[AgentContext], Agent]


def load_factory(spec: str) -> AgentFactory:
    """Import ``module:function``. The function takes an ``AgentContext`` (or nothing) and returns
    the root agent."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(
            f"agent factory {spec!r} must be 'module:function', e.g. 'resumable.demo_agents:build_demo_agents'"
        )
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"agent factory {spec!r} cannot be loaded: {error}") from error
    if not callable(function):
        raise ValueError(f"agent factory {spec!r} is not callable")
    if not inspect.signature(function).parameters:
        return lambda _context: function()
    return function  # type: ignore[no-any-return]


def build(factory: AgentFactory, context: AgentContext) -> Agent:
    agent = factory(context)
    if not isinstance(agent, Agent):
        raise TypeError(f"the agent factory returned {agent!r}, not an Agent: it must return the root agent")
    return agent

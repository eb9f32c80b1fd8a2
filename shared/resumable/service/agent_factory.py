"""The application's agent factory: ``module:function``, called to build every agent afresh per call."""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from resumable.exceptions import AgentFactoryError, AwsError
from resumable.runtime.seam import AgentRuntime

if TYPE_CHECKING:
    from resumable.runtime.session import Session

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class AgentContext:
    """What a factory may use: the session and turn it builds for, ``session``, the Session to give
    agents that keep their own context (``as_tool(preserve_context=True)``), and ``enter_context``
    for what the agents hold open during the run (an ``MCPClient``)."""

    session_id: str
    turn_id: str
    session: Session
    resources: ExitStack = field(default_factory=ExitStack, repr=False, compare=False)

    def enter_context(self, resource: AbstractContextManager[T]) -> T:
        """Enter ``resource`` and return what it gives (``with resource as it``); it is exited when
        the run that built these agents ends, however it ends, and after the run's commit."""
        return self.resources.enter_context(resource)


AgentFactory = Callable[[AgentContext], Any]
"""Returns the root ``Agent``, another ``AgentRuntime`` (``resumable.integrations.strands.StrandsTree``),
or the root agent of a Strands Agents SDK tree (wrapped in a ``StrandsTree`` with the context's session)."""


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
        missing = getattr(error, "name", None) or ""
        hint = ""
        if isinstance(error, ModuleNotFoundError) and missing.split(".")[0] != module_name.split(".")[0]:
            hint = (
                f"; {missing} is installed nowhere this function imports from: where the application needs it, "
                "add it to app/requirements.txt (make predeploy names the file), and retrying will not help until then"
            )
        if missing.split(".")[0] == "strands":
            hint = (
                "; the Strands Agents SDK is not installed: install this package with its strands extra "
                "(in this repository: .venv/bin/pip install -c constraints.txt -e '.[strands]'; in Lambda: "
                "deploy with StrandsAgents=true)"
            )
        raise ValueError(f"agent factory {spec!r} cannot be loaded: {error}{hint}") from error
    if not callable(function):
        raise ValueError(f"agent factory {spec!r} is not callable")
    if not inspect.signature(function).parameters:
        return lambda _context: function()
    return function  # type: ignore[no-any-return]


class LazyFactory:
    """The agent factory ``spec`` names, imported on first use: a function that runs no agent (GetTurn,
    Cancel) does not import the application's agents in its cold start (nor what they import: a
    Strands tree, the SDK). The use cases that run agents call ``load()`` before they write anything,
    so a factory that cannot be loaded refuses the request as before."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self._loaded: AgentFactory | None = None

    def load(self) -> AgentFactory:
        if self._loaded is None:
            self._loaded = load_factory(self.spec)
        return self._loaded

    def __call__(self, context: AgentContext) -> Any:
        return self.load()(context)


@contextmanager
def build(factory: AgentFactory, context: AgentContext) -> Iterator[AgentRuntime]:
    """The root agent ``factory`` builds, for one run: on leaving, what the factory entered through
    ``context.enter_context`` is exited, also when the factory or the run fails. A resource that fails
    to close is logged; it changes nothing of the run's outcome."""
    try:
        try:
            agent = factory(context)
        except AwsError:
            raise  # the store failed (a session's snapshot, say): the turn stays resumable, as anywhere
        except Exception as error:
            raise AgentFactoryError(
                f"the agent factory raised {type(error).__name__}: {error}; no agent ran"
            ) from error
        yield _runtime_of(agent, context)
    finally:
        try:
            context.resources.close()
        except Exception as error:
            logger.error(
                "session_id=<%s>, turn_id=<%s> | a resource the agent factory entered failed to close: %s: %s",
                context.session_id,
                context.turn_id,
                type(error).__name__,
                error,
            )


def _runtime_of(agent: Any, context: AgentContext) -> AgentRuntime:
    """What the factory returned, as the runtime the service runs: our ``Agent`` or another
    ``AgentRuntime`` as it is, the root of a Strands agent tree in a ``StrandsTree`` (imported only then)."""
    from resumable.runtime.agent import Agent  # (the factory has loaded it, when it built ours)

    if isinstance(agent, Agent):
        return agent
    if any(cls.__module__.split(".")[0] == "strands" and cls.__name__ == "Agent" for cls in type(agent).__mro__):
        from resumable.integrations.strands import StrandsTree

        try:
            return StrandsTree(agent, session=context.session)
        except ValueError as error:
            raise AgentFactoryError(
                f"the agent factory's Strands agents cannot run here: {error}; no agent ran"
            ) from error
    if isinstance(agent, AgentRuntime):
        return agent
    raise AgentFactoryError(
        f"the agent factory returned {type(agent).__name__}, not an Agent: it must return the root agent (ours, or "
        "a Strands Agent); no agent ran"
    )

"""What one call of an agent carries down to its tools and sub-agents."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Invocation:
    """The cooperative stop signal and where in the agent tree a call runs.

    ``id_prefix`` is what the root agent puts before this agent's local interrupt ids (empty for the
    root), and ``agent_path`` names the agents from the root down to this one.
    """

    stop: Callable[[], bool] | None = None
    id_prefix: str = ""
    agent_path: tuple[str, ...] = ()

    def should_stop(self) -> bool:
        return self.stop is not None and self.stop()

    def nested(self, id_prefix: str, agent_name: str) -> Invocation:
        """The invocation of a sub-agent called by this one's tool."""
        return replace(self, id_prefix=self.id_prefix + id_prefix, agent_path=(*self.agent_path, agent_name))

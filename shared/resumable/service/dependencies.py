"""What the use cases need, and nothing more: built once per process and passed to each use case."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from resumable.clock import Clock
from resumable.config import Settings
from resumable.service.agent_factory import AgentFactory
from resumable.store.base import Snapshots, Store

if TYPE_CHECKING:
    from resumable.aws.callbacks import DurableCallbacks
    from resumable.aws.keys import Keys
    from resumable.aws.stepfunctions import TaskTokens

Continuation = Callable[[str, str], None]
"""Asks another invocation to continue a turn (``session_id``, ``turn_id``): see service.advancing.continuation."""


@dataclass(frozen=True)
class Dependencies:
    """``store``: the records (DynamoDB). ``snapshots``: agent state (S3). ``factory``: builds the
    agents afresh for every run. ``workflow``: tells a Step Functions workflow that waits on a turn
    how it went (None: nobody to tell); ``callbacks``, a Lambda durable function (None: nobody to tell).
    ``continuation``: how a checkpointed turn is continued
    (None: runs never checkpoint). ``keys``: the cursor key and the decision-link key (none in the
    environment). ``runs_agents``: False where this function hands every run of agents to
    ``continuation`` (the DecisionLinks function, which holds no model's or application's grants)."""

    store: Store
    snapshots: Snapshots
    settings: Settings
    clock: Clock
    factory: AgentFactory
    keys: Keys
    workflow: TaskTokens | None = None
    callbacks: DurableCallbacks | None = None
    continuation: Continuation | None = None
    runs_agents: bool = True

    def continued_by(self, continuation: Continuation | None, runs_agents: bool = True) -> Dependencies:
        return replace(self, continuation=continuation, runs_agents=runs_agents and self.runs_agents)

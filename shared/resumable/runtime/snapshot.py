"""The snapshot: an agent's serialised state (messages and interrupt state), versioned.

A snapshot is plain JSON. ``load_snapshot`` checks it fully before anything is applied, so a
snapshot that cannot be loaded changes nothing.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from resumable.exceptions import SnapshotError
from resumable.runtime.interrupts import Interrupt, InterruptState

SCHEMA_VERSION = "1.0"


class _InterruptModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    id: str
    name: str
    reason: Any = None


class _InterruptStateModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    activated: bool
    pending: list[_InterruptModel]
    answers: dict[str, Any]
    context: dict[str, Any]


class SnapshotModel(BaseModel):
    """The shape of a snapshot; ``schema_version`` must be one this code knows."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    schema_version: Literal["1.0"]
    agent: str
    messages: list[dict[str, Any]]
    interrupt_state: _InterruptStateModel


def make_snapshot(agent_name: str, messages: list[dict[str, Any]], state: InterruptState) -> dict[str, Any]:
    """A deep copy of the agent's state: later changes to the agent never reach it."""
    return copy.deepcopy(
        {
            "schema_version": SCHEMA_VERSION,
            "agent": agent_name,
            "messages": messages,
            "interrupt_state": state.to_dict(),
        }
    )


def load_snapshot(agent_name: str, data: Any) -> tuple[list[dict[str, Any]], InterruptState]:
    """Validate ``data`` and return the messages and interrupt state it holds, as fresh copies."""
    if isinstance(data, dict) and data.get("schema_version") != SCHEMA_VERSION:
        raise SnapshotError(
            f"snapshot for agent '{agent_name}' has schema_version {data.get('schema_version')!r}, "
            f"but this version of resumable reads only {SCHEMA_VERSION!r}: nothing was restored; "
            "load it with the version that wrote it or migrate it"
        )
    try:
        model = SnapshotModel.model_validate(data)
    except ValidationError as error:
        raise SnapshotError(f"snapshot for agent '{agent_name}' is malformed, nothing was restored: {error}") from error
    if model.agent != agent_name:
        raise SnapshotError(
            f"snapshot belongs to agent '{model.agent}', not '{agent_name}': nothing was restored; "
            "restore each agent from its own snapshot"
        )
    state = model.interrupt_state
    interrupt_state = InterruptState(
        activated=state.activated,
        pending={i.id: Interrupt(i.id, i.name, copy.deepcopy(i.reason)) for i in state.pending},
        answers=copy.deepcopy(state.answers),
        context=copy.deepcopy(state.context),
    )
    return copy.deepcopy(model.messages), interrupt_state

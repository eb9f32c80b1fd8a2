"""The snapshot: an agent's serialised state (messages, interrupt state, cycle, dropped messages), versioned.

A snapshot is plain JSON. ``load_snapshot`` checks it fully before anything is applied, so a
snapshot that cannot be loaded changes nothing. Schema 1.1 added ``cycle`` (how many model replies
the agent recorded); a 1.0 snapshot still loads: its cycle is its number of assistant messages, and
a turn it paused keeps the interrupt ids it was paused with. Schema 1.2 added ``dropped_messages``
(how many messages the agent's conversation manager took out of its conversation); a 1.0 or 1.1
snapshot loads with none dropped.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from resumable.exceptions import SnapshotError
from resumable.runtime.interrupts import Interrupt, InterruptState

SCHEMA_VERSION = "1.2"
READABLE_VERSIONS = ("1.0", "1.1", SCHEMA_VERSION)
# The fields a schema version added: a snapshot has each exactly when its version is that one or later.
_ADDED_IN = {"cycle": "1.1", "dropped_messages": "1.2"}


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
    schema_version: Literal["1.0", "1.1", "1.2"]
    agent: str
    messages: list[dict[str, Any]]
    interrupt_state: _InterruptStateModel
    cycle: int | None = Field(default=None, ge=0)
    dropped_messages: int | None = Field(default=None, ge=0)


def make_snapshot(
    agent_name: str, messages: list[dict[str, Any]], state: InterruptState, cycle: int, dropped_messages: int
) -> dict[str, Any]:
    """A deep copy of the agent's state: later changes to the agent never reach it."""
    return copy.deepcopy(
        {
            "schema_version": SCHEMA_VERSION,
            "agent": agent_name,
            "messages": messages,
            "interrupt_state": state.to_dict(),
            "cycle": cycle,
            "dropped_messages": dropped_messages,
        }
    )


def load_snapshot(agent_name: str, data: Any) -> tuple[list[dict[str, Any]], InterruptState, int, int]:
    """Validate ``data`` and return the messages, interrupt state, cycle and dropped messages it holds,
    as fresh copies."""
    if isinstance(data, dict) and data.get("schema_version") not in READABLE_VERSIONS:
        raise SnapshotError(
            f"snapshot for agent '{agent_name}' has schema_version {data.get('schema_version')!r}, "
            f"but this version of resumable reads only {', '.join(map(repr, READABLE_VERSIONS))}: nothing was "
            "restored; load it with the version that wrote it or migrate it"
        )
    try:
        model = SnapshotModel.model_validate(data)
    except ValidationError as error:
        raise SnapshotError(f"snapshot for agent '{agent_name}' is malformed, nothing was restored: {error}") from error
    version = READABLE_VERSIONS.index(model.schema_version)
    for name, since in _ADDED_IN.items():
        expected = version >= READABLE_VERSIONS.index(since)
        if expected != (getattr(model, name) is not None):
            raise SnapshotError(
                f"snapshot for agent '{agent_name}' is malformed, nothing was restored: schema_version "
                f"{model.schema_version!r} {'needs' if expected else 'has no'} {name!r} (schema_version {since!r} "
                "added it)"
            )
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
    messages = copy.deepcopy(model.messages)
    cycle = model.cycle if model.cycle is not None else sum(1 for m in messages if m.get("role") == "assistant")
    return messages, interrupt_state, cycle, model.dropped_messages or 0

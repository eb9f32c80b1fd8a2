"""Child turns: every sub-agent call inside a run becomes a child turn record of the root's tree."""

from __future__ import annotations

from dataclasses import dataclass, field

from resumable.runtime.agent_as_tool import call_prefix
from resumable.runtime.interrupts import CHECKPOINT_INTERRUPT, Interrupt
from resumable.runtime.invocation import SubAgentCall
from resumable.service.ids import child_turn_id
from resumable.store.records import SETTLED, TurnRecord, TurnStatus

_CHILD_STATUS: dict[str, TurnStatus] = {
    "end_turn": "completed",
    "interrupt": "waiting",
    "max_steps": "failed",
    "canceled": "canceled",
    "failed": "failed",
}


@dataclass
class ChildTurns:
    """The sub-agent observer: turns every sub-agent call into a child turn record."""

    root: TurnRecord
    now: float
    records: dict[str, TurnRecord] = field(default_factory=dict)
    touched: set[str] = field(default_factory=set)

    def turn_id(self, prefix: str) -> str:
        return child_turn_id(self.root.turn_id, prefix) if prefix else self.root.turn_id

    def started(self, call: SubAgentCall) -> None:
        turn_id = self.turn_id(call.id_prefix)
        existing = self.records.get(turn_id)
        self.records[turn_id] = (existing or self._new(turn_id, call)).model_copy(
            update={"status": "running", "updated_at": self.now}
        )
        self.touched.add(turn_id)

    def finished(self, call: SubAgentCall, stop_reason: str) -> None:
        turn_id = self.turn_id(call.id_prefix)
        self.records[turn_id] = self.records[turn_id].model_copy(
            update={"status": _CHILD_STATUS[stop_reason], "updated_at": self.now}
        )

    def _new(self, turn_id: str, call: SubAgentCall) -> TurnRecord:
        return TurnRecord(
            session_id=self.root.session_id,
            turn_id=turn_id,
            root_turn_id=self.root.turn_id,
            parent_turn_id=self.turn_id(call.parent_prefix),
            parent_tool_use_id=call.tool_use_id,
            agent=call.agent_path[-1],
            agent_path=list(call.agent_path),
            status="running",
            created_at=self.now,
            updated_at=self.now,
        )

    def show_checkpointed(self, interrupts: list[Interrupt]) -> None:
        """A child that paused only for checkpoints (no question of its own or below it) is running."""
        asking = set()
        for interrupt in interrupts:
            if interrupt.name != CHECKPOINT_INTERRUPT:
                turn_id: str | None = self.turn_id(call_prefix(interrupt.id))
                while turn_id is not None and turn_id in self.records and turn_id not in asking:
                    asking.add(turn_id)
                    turn_id = self.records[turn_id].parent_turn_id
        for turn_id, record in self.records.items():
            if record.status == "waiting" and turn_id in self.touched and turn_id not in asking:
                self.records[turn_id] = record.model_copy(update={"status": "running"})

    def settle_all(self, status: TurnStatus) -> None:
        """Settle every child that is not settled yet (the root is settling)."""
        for turn_id, record in self.records.items():
            if record.status not in SETTLED:
                self.records[turn_id] = record.model_copy(update={"status": status, "updated_at": self.now})
                self.touched.add(turn_id)

"""The service: the use cases (start-turn, submit-approval, cancel, get-turn, recover) over a store.

Agents are built afresh from the application's agent factory on every call and never cached.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from typing import Any

from resumable.aws.stepfunctions import TaskTokens
from resumable.clock import Clock, SystemClock
from resumable.config import Settings
from resumable.exceptions import NotFoundError
from resumable.service.agent_factory import AgentFactory, load_factory
from resumable.service.cancel import cancel
from resumable.service.get_turn import get_turn
from resumable.service.ids import root_of, valid_session_id, valid_turn_id
from resumable.service.recover import recover
from resumable.service.start_turn import start_turn
from resumable.service.submit_approval import submit_approval
from resumable.service.views import InteractionView, TurnView
from resumable.store.base import Store
from resumable.store.records import InteractionStatus, TurnTree


class Service:
    """The use cases. Every public method validates its input before it writes anything."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        clock: Clock | None = None,
        factory: AgentFactory | None = None,
        task_tokens: TaskTokens | None = None,
    ) -> None:
        self.store = store
        self.task_tokens = task_tokens
        # How a checkpointed turn gets continued by another invocation (see service.continuation);
        # without one, a run never checkpoints.
        self.continuation: Callable[[str, str], None] | None = None
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        self.factory: AgentFactory = factory or load_factory(settings.agent_factory)

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock | None = None) -> Service:
        from resumable.aws.stepfunctions import TaskTokens
        from resumable.store.dynamodb import DynamoDBStore

        return cls(DynamoDBStore(settings), settings, clock, task_tokens=TaskTokens(settings))

    def may_act_for(self, owner: str | None, principal: str | None) -> bool:
        """Whether ``principal`` may see and act on a session owned by ``owner``: its owner, or an
        approver principal. ``None`` is the application itself (recovery, Step Functions), trusted."""
        return principal is None or owner is None or owner == principal or self.is_approver(principal)

    def is_approver(self, principal: str) -> bool:
        """Whether ``principal`` matches one of the configured approver principals (``*`` wildcards)."""
        return any(fnmatch.fnmatchcase(principal, pattern) for pattern in self.settings.approver_principals)

    def load(self, session_id: str, turn_id: str, principal: str | None = None) -> TurnTree:
        """The tree of ``turn_id`` (a root or child turn id) in ``session_id``, or 404 (also when the
        session is another principal's: its existence is not revealed)."""
        missing = f"there is no turn {turn_id!r} in session {session_id!r}; nothing was done"
        if not valid_session_id(session_id) or not valid_turn_id(turn_id):
            raise NotFoundError(missing)
        tree = self.store.load_tree(session_id, root_of(turn_id))
        if tree is None or (turn_id != tree.root.turn_id and all(c.turn_id != turn_id for c in tree.children)):
            raise NotFoundError(missing)
        if not self.may_act_for(tree.root.principal, principal):
            raise NotFoundError(missing)
        return tree

    def start_turn(
        self, session_id: str, prompt: Any, principal: str | None = None, *, workflow: bool = False
    ) -> TurnView:
        """``workflow``: a Step Functions workflow starts the turn and will wait for it to settle."""
        return start_turn(self, session_id, prompt, principal, workflow)

    def submit_approval(
        self, session_id: str, turn_id: str, request_id: str, response: Any, principal: str | None = None
    ) -> TurnView:
        return submit_approval(self, session_id, turn_id, request_id, response, principal)

    def cancel(self, session_id: str, turn_id: str, principal: str | None = None) -> TurnView:
        return cancel(self, session_id, turn_id, principal)

    def get_turn(self, session_id: str, turn_id: str, principal: str | None = None) -> TurnView:
        return get_turn(self, session_id, turn_id, principal)

    def recover(self, session_id: str, turn_id: str) -> TurnView:
        return recover(self, session_id, turn_id)

    def list_interactions(
        self, session_id: str, status: InteractionStatus | None = None, principal: str | None = None
    ) -> list[InteractionView]:
        """A session's interactions, oldest first; with ``status``, only those in it (an interaction
        past its expiry counts as ``expired`` even before its turn is settled)."""
        missing = NotFoundError(f"there is no session {session_id!r}; nothing was done")
        if not valid_session_id(session_id):
            raise missing
        now = self.clock.now()
        found = self.store.list_interactions(session_id, status)
        if status == "expired":
            found += self.store.list_interactions(session_id, "requested")
        if not all(self.may_act_for(i.owner, principal) for i in found):
            raise missing
        if not found:
            # Nothing listed says whose session it is: read it, so that an unknown session and another
            # principal's look the same (404), and only its principal (or an approver) sees it empty.
            session = self.store.get_session(session_id)
            if session is None or not self.may_act_for(session.principal, principal):
                raise missing
        views = [InteractionView.of(i, now) for i in found]
        return [v for v in views if status is None or v.status == status]

"""The service: a thin facade over the use cases (start-turn, submit-approval, cancel, get-turn,
recover, list-interactions, inbox, audit, delete-session, restore-session, sweep), each a plain function of
the ``Dependencies`` it needs.

Agents are built afresh from the application's agent factory on every call and never cached.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from resumable.clock import Clock, SystemClock
from resumable.config import Settings
from resumable.service.agent_factory import AgentFactory, LazyFactory
from resumable.service.caller import Caller
from resumable.service.dependencies import Continuation, Dependencies
from resumable.service.reading.inbox import DEFAULT_PAGE
from resumable.store.base import Snapshots, Store

if TYPE_CHECKING:
    from resumable.aws.callbacks import DurableCallbacks
    from resumable.aws.keys import Keys
    from resumable.aws.stepfunctions import TaskTokens
    from resumable.service.audit.trail import AuditPage
    from resumable.service.audit.verification import TrailCheck
    from resumable.service.grants.managing import GrantList, GrantView
    from resumable.service.operating import admin
    from resumable.service.operating.sweep import SweepReport
    from resumable.service.reading.conversation import ConversationPage
    from resumable.service.reading.inbox import InboxPage
    from resumable.service.views import InteractionView, SessionView, TurnView
    from resumable.store.records import InteractionStatus


class Service:
    """The use cases. Every public method validates its input before it writes anything. Its
    ``principal`` is who calls: a ``Caller`` (its identity, groups, sign-in and channel), a bare
    principal (a Caller of that identity alone), or None for the application itself."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        clock: Clock | None = None,
        factory: AgentFactory | None = None,
        task_tokens: TaskTokens | None = None,
        continuation: Continuation | None = None,
        snapshots: Snapshots | None = None,
        keys: Keys | None = None,
        callbacks: DurableCallbacks | None = None,
    ) -> None:
        if callbacks is None:
            from resumable.aws.callbacks import DurableCallbacks

            callbacks = DurableCallbacks(settings)
        if keys is None:
            from resumable.aws.keys import Keys

            keys = Keys(settings)
        if snapshots is None:
            from resumable.store.snapshots import TableOrS3Snapshots

            # (a snapshot kept in the table goes through the store's client: one client a process)
            snapshots = TableOrS3Snapshots(settings, getattr(store, "dynamodb", None))
        self.deps = Dependencies(
            store=store,
            snapshots=snapshots,
            settings=settings,
            clock=clock or SystemClock(),
            factory=factory or LazyFactory(settings.agent_factory),
            workflow=task_tokens,
            callbacks=callbacks,
            continuation=continuation,
            keys=keys,
        )

    @classmethod
    def of(cls, deps: Dependencies) -> Service:
        service = cls.__new__(cls)
        service.deps = deps
        return service

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock | None = None) -> Service:
        """The service on AWS (or what ``settings`` point at): DynamoDB and S3, Step Functions."""
        from resumable.aws.stepfunctions import TaskTokens
        from resumable.store.dynamodb import DynamoDBStore

        return cls(DynamoDBStore(settings), settings, clock, task_tokens=TaskTokens(settings))

    def continued_by(self, continuation: Continuation | None, runs_agents: bool = True) -> Service:
        """This service, with checkpointed turns continued by ``continuation`` (without ``runs_agents``,
        every run of agents too)."""
        return Service.of(self.deps.continued_by(continuation, runs_agents))

    def _agents(self) -> None:
        """Before a use case that may run agents writes anything: the factory is loaded (a bad one is
        refused here, with nothing done), where this service runs them."""
        if self.deps.runs_agents and isinstance(self.deps.factory, LazyFactory):
            self.deps.factory.load()

    @property
    def store(self) -> Store:
        return self.deps.store

    @property
    def snapshots(self) -> Snapshots:
        return self.deps.snapshots

    @property
    def settings(self) -> Settings:
        return self.deps.settings

    @property
    def clock(self) -> Clock:
        return self.deps.clock

    def start_turn(
        self,
        session_id: str,
        prompt: Any,
        principal: Caller | str | None = None,
        *,
        workflow: bool = False,
        callback_id: str | None = None,
        heartbeat_seconds: int | None = None,
    ) -> TurnView:
        """``workflow``: a Step Functions workflow starts the turn and will wait for it to settle.
        ``callback_id``: a Lambda durable function's callback waits for it (started once per callback),
        kept alive every third of ``heartbeat_seconds`` while it waits."""
        from resumable.service.advancing.start import start_turn

        self._agents()
        caller = Caller.of(principal)
        return start_turn(self.deps, session_id, prompt, caller, workflow, callback_id, heartbeat_seconds)

    def conversation(
        self,
        session_id: str,
        turn_id: str,
        principal: Caller | str | None = None,
        before: int | None = None,
        limit: int = 20,
    ) -> ConversationPage:
        from resumable.service.reading.conversation import conversation

        return conversation(self.deps, session_id, turn_id, Caller.of(principal), before, limit)

    def dismiss(
        self,
        session_id: str,
        turn_id: str,
        request_id: str,
        principal: Caller | str | None = None,
        dismissed: bool = True,
    ) -> InteractionView:
        from resumable.service.answering.dismissal import dismiss

        return dismiss(self.deps, session_id, turn_id, request_id, Caller.of(principal), dismissed)

    def submit_approval(
        self,
        session_id: str,
        turn_id: str,
        request_id: str,
        response: Any,
        principal: Caller | str | None = None,
        grant: Any = None,
    ) -> TurnView:
        """Answer a question (``grant``: the standing grant an approval also gives, where its rule allows)."""
        from resumable.service.answering.answer import submit_approval

        self._agents()
        return submit_approval(self.deps, session_id, turn_id, request_id, response, Caller.of(principal), grant)

    def grants(self, principal: Caller | str | None = None, status: str = "live") -> GrantList:
        """The standing grants the caller may see (``status``: ``live`` or ``all``)."""
        from resumable.service.grants.managing import list_grants

        return list_grants(self.deps, Caller.of(principal), "all" if status == "all" else "live")

    def revoke_grant(self, grant_id: str, principal: Caller | str | None = None) -> GrantView:
        """Revoke a standing grant now (its grantor or an approver)."""
        from resumable.service.grants.managing import revoke_grant

        return revoke_grant(self.deps, grant_id, Caller.of(principal))

    def decision_link(self, token: str) -> tuple[str, InteractionView]:
        """Whom a one-click decision link answers as, and its question as it stands (its page's GET:
        decides nothing)."""
        from resumable.service.answering.decision_links import question

        link, asked = question(self.deps, token)
        return link.p, asked

    def decide_by_link(
        self,
        token: str,
        decision: Literal["approve", "deny", "reply"],
        text: str | None = None,
        confirmed: bool = False,
    ) -> tuple[str, TurnView]:
        """Take a one-click decision link's decision, once (its page's POST): the question's request
        id, and its turn after. Approving a call that needs a confirmation (destructive, or its rule's)
        needs ``confirmed``: the page's box naming what will run, ticked."""
        from resumable.service.answering.decision_links import decide

        self._agents()
        return decide(self.deps, token, decision, text, confirmed)

    def cancel(self, session_id: str, turn_id: str, principal: Caller | str | None = None) -> TurnView:
        from resumable.service.advancing.cancel import cancel

        return cancel(self.deps, session_id, turn_id, Caller.of(principal))

    def get_turn(self, session_id: str, turn_id: str, principal: Caller | str | None = None) -> TurnView:
        from resumable.service.reading.turn import get_turn

        return get_turn(self.deps, session_id, turn_id, Caller.of(principal))

    def recover(self, session_id: str, turn_id: str) -> TurnView:
        from resumable.service.advancing.recover import recover

        self._agents()
        return recover(self.deps, session_id, turn_id)

    def list_interactions(
        self, session_id: str, status: InteractionStatus | None = None, principal: Caller | str | None = None
    ) -> list[InteractionView]:
        from resumable.service.reading.interactions import list_interactions

        return list_interactions(self.deps, session_id, status, Caller.of(principal))

    def show_interaction(self, request_id: str, principal: Caller | str | None = None) -> InteractionView:
        from resumable.service.reading.interactions import show_interaction

        return show_interaction(self.deps, request_id, Caller.of(principal))

    def inbox(
        self,
        principal: Caller | str | None = None,
        status: str = "requested",
        limit: int = DEFAULT_PAGE,
        cursor: str | None = None,
        dismissed: bool = False,
        started: bool = False,
    ) -> InboxPage:
        from resumable.service.reading.inbox import inbox

        return inbox(self.deps, Caller.of(principal), status, limit, cursor, dismissed, started)

    def sweep(self, limit: int | None = None) -> SweepReport:
        """Move on the turns nobody is moving (the sweeper's scheduled run), at most ``limit`` of them
        (None: ``sweep.DEFAULT_LIMIT``). It runs agents only where no other function continues turns
        (``continued_by``): only then is the factory loaded (the deployed Sweeper hands every run to
        SubmitApproval, and has no layer of the application's)."""
        from resumable.service.operating.sweep import DEFAULT_LIMIT, sweep

        if self.deps.continuation is None:
            self._agents()
        return sweep(self.deps, DEFAULT_LIMIT if limit is None else limit)

    def audit(self, principal: Caller | str | None = None, **query: Any) -> AuditPage:
        """A page of the audit trail (approvers only): ``since``, ``until``, ``by``, ``tool``, ``outcome``,
        ``limit``, ``after`` (the previous page's cursor); see ``service.audit.trail.audit``."""
        from resumable.service.audit.trail import audit

        return audit(self.deps, Caller.of(principal), **query)

    def verify_audit(
        self, since: str | None = None, until: str | None = None, principal: Caller | str | None = None
    ) -> TrailCheck:
        """The delivered audit trail of [``since``, ``until``) (ISO 8601) checked (approvers only): see
        ``service.audit.verification``."""
        from resumable.service.audit.verification import verify

        return verify(self.deps, Caller.of(principal), since, until)

    def delete_session(self, session_id: str, principal: Caller | str | None = None) -> SessionView:
        from resumable.service.sessions.deletion import delete_session

        return delete_session(self.deps, session_id, Caller.of(principal))

    def restore_session(self, session_id: str, principal: Caller | str | None = None) -> SessionView:
        from resumable.service.sessions.deletion import restore_session

        return restore_session(self.deps, session_id, Caller.of(principal))

    # the operator's (resumable admin; approvers only)
    def stalled(self, principal: Caller | str | None = None, limit: int | None = None) -> admin.StalledTurns:
        from resumable.service.operating import admin
        from resumable.service.operating.sweep import DEFAULT_LIMIT

        return admin.stalled(self.deps, Caller.of(principal), DEFAULT_LIMIT if limit is None else limit)

    def inspect(self, session_id: str, turn_id: str, principal: Caller | str | None = None) -> admin.TurnRecords:
        from resumable.service.operating import admin

        return admin.inspect(self.deps, session_id, turn_id, Caller.of(principal))

    def recover_turn(self, session_id: str, turn_id: str, principal: Caller | str | None = None) -> TurnView:
        from resumable.service.operating import admin

        self._agents()
        return admin.recover_turn(self.deps, session_id, turn_id, Caller.of(principal))

    def republish(self, session_id: str, principal: Caller | str | None = None) -> admin.Republished:
        from resumable.service.operating import admin

        return admin.republish(self.deps, session_id, Caller.of(principal))

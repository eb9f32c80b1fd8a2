"""The use cases: start-turn, submit-approval, cancel, get-turn, list-interactions, inbox, recover,
delete-session, restore-session and sweep."""

from resumable.service.agent_factory import AgentContext
from resumable.service.caller import Caller
from resumable.service.reading.inbox import InboxPage
from resumable.service.service import Service
from resumable.service.views import ChildView, InteractionView, SessionView, TurnView

__all__ = ["AgentContext", "Caller", "ChildView", "InboxPage", "InteractionView", "Service", "SessionView", "TurnView"]

"""The use cases: start-turn, submit-approval, cancel, get-turn, list-interactions, inbox, recover,
delete-session, restore-session and sweep."""

from resumable.service.advancing.agent_factory import AgentContext
from resumable.service.caller import Caller
from resumable.service.reading.inbox import InboxPage
from resumable.service.reading.views import ChildView, InteractionView, SessionView, TurnView
from resumable.service.service import Service

__all__ = ["AgentContext", "Caller", "ChildView", "InboxPage", "InteractionView", "Service", "SessionView", "TurnView"]

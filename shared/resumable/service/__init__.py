"""The use cases: start-turn, submit-approval, cancel, get-turn, list-interactions, inbox and recover."""

from resumable.service.agent_factory import AgentContext
from resumable.service.inbox import InboxPage
from resumable.service.service import Service
from resumable.service.views import ChildView, InteractionView, TurnView

__all__ = ["AgentContext", "ChildView", "InboxPage", "InteractionView", "Service", "TurnView"]

"""The use cases: start-turn, submit-approval, cancel, get-turn and recover."""

from resumable.service.agent_factory import AgentContext
from resumable.service.service import Service
from resumable.service.views import ChildView, InteractionView, TurnView

__all__ = ["AgentContext", "ChildView", "InteractionView", "Service", "TurnView"]

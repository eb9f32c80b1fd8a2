"""The store on one DynamoDB table: the only code that calls DynamoDB. Each record's reads and writes
live in a module of their own (turns, interactions and their reads, journal, commit, unsettled,
deletion); items are coded in codec."""

from __future__ import annotations

from resumable.store.audit import AuditItems
from resumable.store.base import Store
from resumable.store.commit import CommitItems
from resumable.store.decision_links import DecisionLinkItems
from resumable.store.deletion import DeletionItems
from resumable.store.grants import GrantItems
from resumable.store.interaction_reads import InteractionReads
from resumable.store.interactions import InteractionItems
from resumable.store.journal import ActionItems
from resumable.store.publishing import OutboxItems
from resumable.store.turns import TurnItems
from resumable.store.unsettled import UnsettledTurns


class DynamoDBStore(
    TurnItems,
    InteractionItems,
    InteractionReads,
    ActionItems,
    CommitItems,
    UnsettledTurns,
    DeletionItems,
    OutboxItems,
    AuditItems,
    DecisionLinkItems,
    GrantItems,
    Store,
):
    """``Store`` on one DynamoDB table (``Table`` takes the settings and, optionally, a client)."""

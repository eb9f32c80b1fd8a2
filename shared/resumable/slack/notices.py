"""The bus's events, in Slack: each ``Interaction Requested`` posted to the channel as a question
with its buttons (once, however often the event is delivered), and the message updated in place,
its buttons gone, once the question settles by any path (``Interaction Answered``: the page, the
CLI, Slack, another person; ``Interaction Closed``: expiry, a cancel). Events come at least once and
in any order; ``SlackMessages`` keeps the message's place and the outcome so that neither is lost
whichever comes first."""

from __future__ import annotations

import time
from typing import Any, Protocol

from resumable.events.schemas import InteractionAnswered, InteractionClosed, InteractionRequested
from resumable.slack.messages import fallback, question, settled
from resumable.store.outbox import INTERACTION_ANSWERED, INTERACTION_CLOSED, INTERACTION_REQUESTED
from resumable.store.slack_messages import SlackMessage, SlackMessages

_DECISIONS = {"approve": "Approved", "deny": "Denied"}


class SlackWeb(Protocol):
    """What of slack_sdk's ``WebClient`` the notices use."""

    def chat_postMessage(self, **kwargs: Any) -> Any: ...  # noqa: N802 (slack_sdk's name)

    def chat_update(self, **kwargs: Any) -> Any: ...


class Notices:
    def __init__(self, messages: SlackMessages, slack: SlackWeb, channel: str, keep_seconds: float) -> None:
        """``keep_seconds``: how long the message's item is kept (the deployment's retention)."""
        self.messages, self.slack, self.channel, self.keep_seconds = messages, slack, channel, keep_seconds

    def handle(self, event: dict[str, Any], now: float | None = None) -> str:
        """Post or update what ``event`` (an EventBridge event of the bus) says; what was done, in words."""
        at = time.time() if now is None else now
        kind, detail = event.get("detail-type"), event.get("detail") or {}
        if kind == INTERACTION_REQUESTED:
            return self._post(InteractionRequested.model_validate(detail), at)
        if kind == INTERACTION_ANSWERED:
            answered = InteractionAnswered.model_validate(detail)
            decided = _DECISIONS.get(answered.decision or "", "Answered")
            outcome = f"{decided} by {answered.answered_by} at {_hhmm(answered.answered_at)} UTC"
            return self._settle(answered.session_id, answered.request_id, outcome, at)
        if kind == INTERACTION_CLOSED:
            closed = InteractionClosed.model_validate(detail)
            outcome = "Expired: nobody answered in time" if closed.status == "expired" else f"Closed: {closed.why}"
            return self._settle(closed.session_id, closed.request_id, outcome, at)
        return f"nothing to do for {kind!r}"

    def _post(self, asked: InteractionRequested, now: float) -> str:
        claimed = self.messages.claim_post(
            asked.session_id, asked.request_id, asked.model_dump_json(by_alias=True), now, now + self.keep_seconds
        )
        if claimed is None:
            return f"{asked.request_id}: posted already (or being posted)"
        blocks = settled(asked, claimed.outcome) if claimed.outcome else question(asked)
        channel = (asked.rule or {}).get("slackChannel") or self.channel  # (the rule's own channel, if it names one)
        reply = self.slack.chat_postMessage(channel=channel, text=fallback(asked.summary), blocks=blocks)
        where = self.messages.posted(asked.session_id, asked.request_id, reply["channel"], reply["ts"])
        if where.outcome and not claimed.outcome:  # (it settled while the message was being posted)
            self._update(where)
            return f"{asked.request_id}: posted, and updated: {where.outcome}"
        return f"{asked.request_id}: posted"

    def _settle(self, session_id: str, request_id: str, outcome: str, now: float) -> str:
        where = self.messages.settle(session_id, request_id, outcome, now + self.keep_seconds)
        if where.ts is None:
            return f"{request_id}: settled before its message was posted ({where.outcome})"
        self._update(where)
        return f"{request_id}: updated: {where.outcome}"

    def _update(self, where: SlackMessage) -> None:
        if where.asked is None or where.outcome is None:  # (never: a post is claimed with the question)
            return
        asked = InteractionRequested.model_validate_json(where.asked)
        self.slack.chat_update(
            channel=where.channel, ts=where.ts, text=fallback(where.outcome), blocks=settled(asked, where.outcome)
        )


def _hhmm(iso: str) -> str:
    return iso[11:16] if len(iso) >= 16 else iso

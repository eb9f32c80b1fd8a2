"""The bus's events, in Slack: each ``Interaction Requested`` posted to the channel as a question
with its buttons (once, however often the event is delivered), and the message updated in place,
its buttons gone, once the question settles by any path (``Interaction Answered``: the page, the
CLI, Slack, another person; ``Interaction Closed``: expiry, a cancel), and drawn again with the
approvals so far at each vote under a rule of several approvers (``Interaction Voted``, from any
channel; a vote pressed in Slack draws it at once too). Events come at least once and
in any order; ``SlackMessages`` keeps the message's place and the outcome so that neither is lost
whichever comes first.

Anyone allowed ``events:PutEvents`` on the bus can put a look-alike event on it, so an event only
names the question to look at: before anything is posted or updated, the question is read from the
table (one consistent read), and what Slack shows is what the table holds. A question is posted only
while the table holds it ``requested``, with the table's words, tool and input; its message says it
was answered only once the table does, by whom and how the table says, and closed only once the
table holds it closed so. An event the table does not bear out changes nothing and is logged."""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from resumable.events.schemas import InteractionAnswered, InteractionClosed, InteractionRequested, InteractionVoted
from resumable.runtime.rules import MAX_REQUIRED
from resumable.service.ids import root_of
from resumable.service.views import InteractionView
from resumable.slack.messages import fallback, question, settled
from resumable.store.outbox import (
    INTERACTION_ANSWERED,
    INTERACTION_CLOSED,
    INTERACTION_REQUESTED,
    INTERACTION_VOTED,
    interaction_requested,
)
from resumable.store.records import InteractionRecord
from resumable.store.slack_messages import SlackMessage, SlackMessages

logger = logging.getLogger(__name__)

_DECISIONS = {"approve": "Approved", "deny": "Denied"}


class SlackWeb(Protocol):
    """What of slack_sdk's ``WebClient`` the notices use."""

    def chat_postMessage(self, **kwargs: Any) -> Any: ...  # noqa: N802 (slack_sdk's name)

    def chat_update(self, **kwargs: Any) -> Any: ...


class Interactions(Protocol):
    """Where a question is read as the table holds it: its interaction (the store's)."""

    def get_interaction(self, session_id: str, root_turn_id: str, request_id: str) -> InteractionRecord | None: ...


class Notices:
    def __init__(
        self,
        messages: SlackMessages,
        interactions: Interactions,
        slack: SlackWeb,
        channel: str,
        keep_seconds: float,
        api_url: str | None = None,
    ) -> None:
        """``keep_seconds``: how long the message's item is kept (the deployment's retention);
        ``api_url``: the HTTP API, whose inbox page a message links to (None: no link)."""
        self.messages, self.interactions, self.slack = messages, interactions, slack
        self.channel, self.keep_seconds, self.api_url = channel, keep_seconds, api_url

    def handle(self, event: dict[str, Any], now: float | None = None) -> str:
        """Post or update the message of the question ``event`` (an EventBridge event of the bus) names,
        as the table holds it; what was done, in words."""
        at = time.time() if now is None else now
        kind, detail = event.get("detail-type"), event.get("detail") or {}
        if kind == INTERACTION_REQUESTED:
            asked = InteractionRequested.model_validate(detail)
            held = self._held(asked)
            if held is None or held.status != "requested" or held.deleted_generation is not None:
                return self._unmatched(kind, asked, held)
            return self._post(self._as_held(held, asked), InteractionView.of(held, at), at)
        if kind == INTERACTION_ANSWERED:
            answered = InteractionAnswered.model_validate(detail)
            held = self._held(answered)
            if held is None or held.status != "answered":
                return self._unmatched(kind, answered, held)
            return self._settle(held, _answered(held), at)
        if kind == INTERACTION_VOTED:  # (the approvals so far, as the table holds them: drawn again)
            voted = InteractionVoted.model_validate(detail)
            return self.refresh(voted.session_id, root_of(voted.turn_id or ""), voted.request_id, at)
        if kind == INTERACTION_CLOSED:
            closed = InteractionClosed.model_validate(detail)
            held = self._held(closed)
            if held is None or held.status != closed.status:
                return self._unmatched(kind, closed, held)
            # (the table holds no words for why: the event's, of a closing the table bears out)
            outcome = "Expired: nobody answered in time" if held.status == "expired" else f"Closed: {closed.why}"
            return self._settle(held, outcome, at)
        return f"nothing to do for {kind!r}"

    def _held(self, said: InteractionRequested | InteractionAnswered | InteractionClosed) -> InteractionRecord | None:
        """The question the event names, as the table holds it (its turn may be a child turn)."""
        if not said.turn_id:
            return None
        return self.interactions.get_interaction(said.session_id, root_of(said.turn_id), said.request_id)

    def _unmatched(
        self,
        kind: str,
        said: InteractionRequested | InteractionAnswered | InteractionClosed,
        held: InteractionRecord | None,
    ) -> str:
        table = "holds no such question" if held is None else f"holds it {held.status}"
        if held is not None and held.deleted_generation is not None:
            table += ", in a deleted session"
        logger.warning(
            "session_id=<%s>, turn_id=<%s>, request_id=<%s> | an %s event the table does not bear out (it %s): "
            "nothing was posted or updated",
            said.session_id,
            said.turn_id,
            said.request_id,
            kind,
            table,
        )
        return f"{said.request_id}: not as the event says (the table {table}): nothing was posted or updated"

    def _as_held(self, held: InteractionRecord, said: InteractionRequested) -> InteractionRequested:
        """The question as the table holds it (the inbox page's links drawn from ``api_url``, as the
        publisher draws them), under the event's id and number."""
        detail = interaction_requested(held).detail
        links: dict[str, Any] = {"answerUrl": None, "inboxUrl": None}
        if self.api_url:
            api = self.api_url.rstrip("/")
            links = {"answerUrl": api + detail["answerPath"], "inboxUrl": f"{api}/inbox#q-{held.request_id}"}
        return InteractionRequested.model_validate(
            {
                "eventId": said.event_id,
                "sessionId": held.session_id,
                "turnId": held.root_turn_id,
                "sequence": said.sequence,
                "occurredAt": said.occurred_at,
                **detail,
                **links,
            }
        )

    def refresh(self, session_id: str, root_turn_id: str, request_id: str, now: float | None = None) -> str:
        """The message of a question that still waits, drawn again as the table holds it now (the
        approvals so far): after a vote. What was done, in words.

        Draws overlap (a vote's press and its event, two votes at once), and Slack keeps the last one
        it gets: so after each draw the question is read again, and drawn again while its votes moved
        on since (at most ``MAX_REQUIRED`` times: each time is another vote); and once it settled, its
        settled message is drawn last, whatever became of the draw before."""
        at = time.time() if now is None else now
        drawn = -1
        for _ in range(MAX_REQUIRED + 1):
            held = self.interactions.get_interaction(session_id, root_turn_id, request_id)
            where = self.messages.get(session_id, request_id)
            if where is not None and where.outcome and where.ts is not None:
                if drawn >= 0:  # (it settled while this drew the buttons again: drawn settled, last)
                    self._update(where)
                return f"{request_id}: its message shows it settled" + (" (drawn so again)" if drawn >= 0 else "")
            waits = held is not None and held.status == "requested" and held.deleted_generation is None
            if held is None or not waits or where is None or where.ts is None or where.asked is None:
                if drawn < 0:
                    logger.info("request_id=<%s> | no waiting question's message to draw again", request_id)
                return f"{request_id}: no waiting question's message to draw again"
            if held.vote_count == drawn:
                return f"{request_id}: drawn again with {drawn} approval(s)"
            asked = self._as_held(held, InteractionRequested.model_validate_json(where.asked))
            try:
                blocks = question(asked, InteractionView.of(held, at))
                self.slack.chat_update(channel=where.channel, ts=where.ts, text=fallback(asked.summary), blocks=blocks)
            finally:
                drawn = held.vote_count
        return f"{request_id}: drawn again with {drawn} approval(s)"

    def _post(self, asked: InteractionRequested, held: InteractionView, now: float) -> str:
        claimed = self.messages.claim_post(
            asked.session_id, asked.request_id, asked.model_dump_json(by_alias=True), now, now + self.keep_seconds
        )
        if claimed is None:
            return f"{asked.request_id}: posted already (or being posted)"
        blocks = settled(asked, claimed.outcome) if claimed.outcome else question(asked, held)
        channel = (asked.rule or {}).get("slackChannel") or self.channel  # (the rule's own channel, if it names one)
        reply = self.slack.chat_postMessage(channel=channel, text=fallback(asked.summary), blocks=blocks)
        where = self.messages.posted(asked.session_id, asked.request_id, reply["channel"], reply["ts"])
        if where.outcome and not claimed.outcome:  # (it settled while the message was being posted)
            self._update(where)
            return f"{asked.request_id}: posted, and updated: {where.outcome}"
        # A vote that landed while it was being posted found no message to draw again: drawn now
        now_held = self.interactions.get_interaction(asked.session_id, held.turn_id, asked.request_id)
        if not claimed.outcome and now_held is not None and len(now_held.votes) != len(held.approvals):
            self.refresh(asked.session_id, held.turn_id, asked.request_id, now)
        return f"{asked.request_id}: posted"

    def _settle(self, held: InteractionRecord, outcome: str, now: float) -> str:
        where = self.messages.settle(held.session_id, held.request_id, outcome, now + self.keep_seconds)
        if where.ts is None:
            return f"{held.request_id}: settled before its message was posted ({where.outcome})"
        self._update(where)
        return f"{held.request_id}: updated: {where.outcome}"

    def _update(self, where: SlackMessage) -> None:
        if where.asked is None or where.outcome is None:  # (never: a post is claimed with the question)
            return
        asked = InteractionRequested.model_validate_json(where.asked)
        self.slack.chat_update(
            channel=where.channel, ts=where.ts, text=fallback(where.outcome), blocks=settled(asked, where.outcome)
        )


def _answered(held: InteractionRecord) -> str:
    """How an answered question settled, as the table holds it: the decision, by whom, when."""
    decision = held.response.get("decision") if isinstance(held.response, dict) else None
    decided = _DECISIONS.get(decision, "Answered") if isinstance(decision, str) else "Answered"
    at = time.strftime("%H:%M", time.gmtime(held.answered_at if held.answered_at is not None else held.updated_at))
    return f"{decided} by {held.answered_by} at {at} UTC"

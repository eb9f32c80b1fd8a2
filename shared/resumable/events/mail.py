"""The e-mail that tells ``NotifyEmail`` of a question: what resumable says first (where to decide,
until when), then what the agent wrote, marked as the agent's and never obeyed (each control or
direction-changing character shown as its escape), so that a link the agent put in its input sits
below the genuine ones, under a line saying none of its links is resumable's."""

from __future__ import annotations

from resumable.events.schemas import EventDetail, InteractionEscalated, InteractionRequested
from resumable.plain import plain

SUBJECT = {
    "requested": "A question waits for your decision",
    "escalated": "A question was escalated to you",
}
AGENTS_WORDS = "What the agent wrote (its own words, not resumable's: no link in them is one of ours):"
MAX_AGENTS_CHARS = 2000


def told(detail: EventDetail, decision_url: str | None = None) -> tuple[str, str] | None:
    """The subject and the text of the e-mail of ``detail`` (with a question's one-click
    ``decision_url``, which only the e-mail carries); None for an event nobody is mailed."""
    if isinstance(detail, InteractionRequested):
        subject, lines = SUBJECT["requested"], []
    elif isinstance(detail, InteractionEscalated):
        subject = SUBJECT["escalated"]
        lines = [f"Its approval rule {plain(detail.rule)} escalated it to {plain(', '.join(detail.escalated_to))}."]
    else:
        return None
    lines.insert(0, f"A question waits for a decision, until {detail.expires_at} (request {detail.request_id}).")
    if detail.inbox_url:
        lines.append(f"Decide on the inbox page (opening it decides nothing): {detail.inbox_url}")
    else:
        lines.append(f"Answer it at {detail.answer_path} of the deployment's API.")
    if decision_url:
        lines.append(f"Or decide without signing in (its page decides, once): {decision_url}")
    said = [detail.summary]
    lines += _judged(detail)
    # (what a person or the agent wrote, below the line: a name a sign-in token gives, which its holder may
    # set; the turn's prompt; the agent's reason)
    said += (
        [f"The one who started the turn gives their name as: {detail.started_by_name}"]
        if detail.started_by_name
        else []
    )
    said += [f"Prompt: {detail.root_prompt}"] if detail.root_prompt else []
    reason = (
        detail.reason.get("explanation")
        if isinstance(detail, InteractionRequested) and isinstance(detail.reason, dict)
        else None
    )
    said += [f"Reason: {reason}"] if isinstance(reason, str) and reason else []
    words = plain("\n".join(said))
    if len(words) > MAX_AGENTS_CHARS:
        words = words[: MAX_AGENTS_CHARS - 1] + "…"
    quoted = [f"> {line}" for line in words.split("\n")]  # (each line marked: none passes for ours)
    return subject, "\n".join([*lines, "", AGENTS_WORDS, *quoted]) + "\n"


def _judged(detail: InteractionRequested | InteractionEscalated) -> list[str]:
    """What the inbox card shows to judge it, in resumable's words: the risk and impact (declared by the
    tool or its rule, never by the agent), who started the turn (the principal that signed), how many
    approvals it needs, and whether approving needs a confirmation."""
    lines = []
    if detail.risk or detail.impact:
        impact = " ".join(plain(detail.impact).split()) if detail.impact else ""
        lines.append(f"Risk: {plain(detail.risk or 'not declared')}" + (f": {impact}" if impact else ""))
    if detail.started_by:
        lines.append(f"Turn started by {plain(detail.started_by)}.")
    rule = (detail.rule or {}) if isinstance(detail, InteractionRequested) else {}  # (an escalation names its rule)
    required, name = rule.get("required"), rule.get("name") or ",".join(map(str, rule.get("tools") or []))
    if isinstance(required, int) and required > 1:
        lines.append(f"It needs {required} approvals from distinct approvers (its approval rule: {plain(str(name))}).")
    if detail.confirm:
        lines.append("Approving it runs the call for real: each page asks you to confirm it first.")
    return lines

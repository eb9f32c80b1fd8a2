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
    if isinstance(detail, InteractionRequested):
        lines += _judged(detail)
        reason = detail.reason.get("explanation") if isinstance(detail.reason, dict) else None
        said += [f"Prompt: {detail.root_prompt}"] if detail.root_prompt else []
        said += [f"Reason: {reason}"] if isinstance(reason, str) and reason else []
    words = plain("\n".join(said))
    if len(words) > MAX_AGENTS_CHARS:
        words = words[: MAX_AGENTS_CHARS - 1] + "…"
    quoted = [f"> {line}" for line in words.split("\n")]  # (each line marked: none passes for ours)
    return subject, "\n".join([*lines, "", AGENTS_WORDS, *quoted]) + "\n"


def _judged(detail: InteractionRequested) -> list[str]:
    """What the inbox card shows to judge it, in resumable's words: the risk and impact, who started the
    turn, how many approvals it needs, and whether approving needs a confirmation."""
    lines = []
    if detail.risk or detail.impact:
        lines.append(
            f"Risk: {plain(detail.risk or 'not declared')}" + (f": {plain(detail.impact)}" if detail.impact else "")
        )
    if detail.started_by:
        name = f" ({plain(detail.started_by_name)}, as their sign-in says)" if detail.started_by_name else ""
        lines.append(f"Turn started by {plain(detail.started_by)}{name}.")
    rule = detail.rule or {}
    required, name = rule.get("required"), rule.get("name") or ",".join(map(str, rule.get("tools") or []))
    if isinstance(required, int) and required > 1:
        lines.append(f"It needs {required} approvals from distinct approvers (its approval rule: {plain(str(name))}).")
    if detail.confirm:
        lines.append("Approving it runs the call for real: each page asks you to confirm it first.")
    return lines

"""The pages of a one-click decision link (``/decide/<token>``): the question with its forms (GET:
nothing is decided; no form once it is settled, or once the link's approval is in and it waits for
others), and what came of a decision (POST). Drawn on the server, escaped (``_escaped``), with no script
at all; the forms post only to the page's own address."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from resumable.plain import plain
from resumable.runtime.interrupts import APPROVAL_INTERRUPT
from resumable.service.views import InteractionView

MAX_INPUT_CHARS = 4000
_STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:2em auto;padding:0 1em;color:#222}"
    "pre{background:#f4f4f4;padding:.75em;white-space:pre-wrap;word-break:break-all}"
    ".risk{color:#a00;font-weight:600}button{font-size:1em;padding:.4em 1.2em;margin-top:.5em}"
    "textarea{width:100%}form{margin:1em 0}"
)
HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # (the link is the credential: it leaves in no Referer)
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
}


def _escaped(text: str) -> str:
    """``text`` as the page shows it literally: its markup escaped, each hidden character (a right-to-left
    override, a bell) shown as its escape."""
    return escape(plain(text))


def _page(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
        f'content="width=device-width"><meta name="robots" content="noindex"><title>{_escaped(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{_escaped(title)}</h1>{body}</body></html>"
    )


def standing(question: InteractionView) -> str:
    """Where the question stands, in words: its status, and under a rule of several approvers how many
    approvals it has and needs."""
    from resumable.service.answering.decision_links import said_of

    rule = question.rule
    if question.status == "requested" and rule is not None and rule.required > 1:
        have, need = len(question.approvals), rule.required
        return f"The question has {have} of the {need} approvals it needs: it waits for {need - have} more"
    return f"The question is {said_of(question.status)}"


def confirmation(answers_as: str, question: InteractionView) -> str:
    """The question, and (while it is open, and the link's approver has not voted on it) the forms
    that approve or deny it."""
    reason: Any = question.reason if isinstance(question.reason, dict) else {}
    approval = question.name == APPROVAL_INTERRUPT
    asked = reason.get("input") if approval else reason.get("question", question.reason)
    shown = asked if isinstance(asked, str) and not approval else json.dumps(asked, indent=2, ensure_ascii=False)
    if len(shown) > MAX_INPUT_CHARS:
        shown = shown[:MAX_INPUT_CHARS] + "\n... (cut: the whole of it is on the inbox page)"
    who = f"<b>{_escaped(' -> '.join(question.agent_path))}</b>"
    does = f"wants to run <b>{_escaped(str(reason.get('tool')))}</b> with:" if approval else "asks:"
    rows = [f"<p>{who} {does}</p><pre>{_escaped(shown)}</pre>", *_judged(question, reason)]
    if question.status != "requested":
        from resumable.service.answering.decision_links import said_of

        said = f"It is {said_of(question.status)} already" + (
            f", by {question.answered_by}" if question.answered_by else ""
        )
        return _page("Nothing to decide", "".join(rows) + f"<p>{_escaped(said)}: this link decides nothing now.</p>")
    voted = next((vote for vote in question.approvals if vote.by == answers_as), None)
    if voted is not None:  # (under a rule of several approvers: the link's approval is in, others are awaited)
        said = f"{answers_as} approved it at {voted.at}. {standing(question)}. This link decides nothing more."
        return _page("Approved: waiting for others", "".join(rows) + f"<p>{_escaped(said)}</p>")
    rows.append(f"<p>Decide before {_escaped(question.expires_at or 'it expires')} (UTC). Each link decides once.</p>")
    if not approval:  # (a question answered in words)
        rows.append(
            '<form method="post"><input type="hidden" name="decision" value="reply">'
            '<label for="text">Your answer (what the agent is told):</label>'
            '<textarea id="text" name="text" rows="4" maxlength="2000" required></textarea>'
            '<button type="submit">Send the answer</button></form>'
        )
        return _page(question.summary, "".join(rows))
    confirm = (  # (as the inbox page asks again and the CLI has its name typed: the box must be ticked)
        '<p><input type="checkbox" id="confirm" name="confirm" value="yes" required> <label for="confirm">'
        f"I confirm: approving runs <b>{_escaped(question.summary)}</b></label></p>"
        if question.needs_confirmation
        else ""
    )
    rows.append(
        f'<form method="post"><input type="hidden" name="decision" value="approve">{confirm}'
        '<button type="submit">Approve: run it</button></form>'
        '<form method="post"><input type="hidden" name="decision" value="deny">'
        '<label for="text">Why not (told to the agent):</label>'
        '<textarea id="text" name="text" rows="3" maxlength="2000"></textarea>'
        '<button type="submit">Deny</button></form>'
    )
    return _page(question.summary, "".join(rows))


MAX_PROMPT_CHARS, MAX_REASON_CHARS = 300, 600


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _judged(question: InteractionView, reason: dict[str, Any]) -> list[str]:
    """What the inbox card shows to judge it: risk and impact, who started the turn and its prompt, the
    agent's reason, and the approvals so far under a rule of several approvers."""
    rows = []
    risk, impact = question.risk or reason.get("risk"), question.impact or reason.get("impact")
    if risk or impact:
        said = f"Risk: {risk}. " if risk else ""
        rows.append(f'<p class="risk">{_escaped(said + str(impact or ""))}</p>')
    if question.started_by:  # (with the name a sign-in token gives, which its holder may set: quoted, as the page)
        name = f" (who gives their name as \u201c{question.started_by_name}\u201d)" if question.started_by_name else ""
        rows.append(f"<p>Turn started by {_escaped(question.started_by + name)}</p>")
    if question.root_prompt:
        rows.append(f"<p>Prompt: {_escaped(_cut(question.root_prompt, MAX_PROMPT_CHARS))}</p>")
    if question.explanation:
        rows.append(f"<p>The agent's reason: {_escaped(_cut(question.explanation, MAX_REASON_CHARS))}</p>")
    rule = question.rule
    if rule is not None and rule.required > 1:
        voters = ", ".join(vote.by for vote in question.approvals)
        said = f"Approvals: {len(question.approvals)} of {rule.required}" + (f": {voters}" if voters else "")
        rows.append(f"<p>{_escaped(said)}</p>")
    return rows


def outcome(title: str, text: str) -> str:
    """What came of opening or using the link, in words, as given (never re-cased: a refusal may begin
    with a principal, ``arn:aws:iam::...``, which is shown as it is)."""
    return _page(title, f"<p>{_escaped(text)}</p>")

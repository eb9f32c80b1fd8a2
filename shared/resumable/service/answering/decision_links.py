"""One-click decision links, for deployments whose approvers do not sign in (``DECISION_LINKS_AS``):
the e-mail that tells of a question carries a link bound to that question and to one approver (the
principal the setting names), expiring with the question. Opening it (GET) shows the question and
decides nothing, because mail scanners and link previews open links; its form (POST) decides, once:
the link is marked used before the answer is recorded, so a second use is refused, as is a link of a
settled or expired question. docs/desk.md says what the risks are.

A link holds a random secret and is signed by the decision-link key, a KMS HMAC key no function's
environment holds (resumable.aws.keys). Its issue is recorded in the table before it is mailed, with
the question, the approver and the secret's digest (never the secret): a link whose record is
missing, names another question or approver, or holds another secret, was never issued and decides
nothing. Everything else a link holds is public (ids the API and the bus show), so it is the secret
that keeps someone holding the key, or reading the table, from making one. Links go in the e-mail
alone, never on the event bus (resumable.events.mail).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from resumable.exceptions import (
    AwsError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    GoneError,
    NotFoundError,
    ServiceError,
)
from resumable.runtime.interrupts import APPROVAL_INTERRUPT
from resumable.service.caller import Caller
from resumable.service.ids import root_of
from resumable.service.views import InteractionView

if TYPE_CHECKING:
    from resumable.aws.keys import LinkKey
    from resumable.config import Settings
    from resumable.service.dependencies import Dependencies
    from resumable.service.views import TurnView
    from resumable.store.decision_links import DecisionLinkItems

PARTITION = "decision-link"  # (what the key signs: nothing else is signed with it)
MAX_LINK_CHARS = 600
METHOD = "decision_link"
Decision = Literal["approve", "deny", "reply"]


class Link(BaseModel):
    """What a link holds: the question, the principal it answers as, when it stops working, and its id."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    s: str  # session
    t: str  # turn
    r: str  # request
    p: str  # the principal it answers as
    e: int  # expires at (epoch seconds: the question's expiry)
    j: str  # its id (its record's: what says it was issued, and marks it used)
    n: str  # its secret (random: its record keeps only the digest)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    """The bytes of unpadded base64url ``text``, strictly: one spelling per token (ValueError otherwise)."""
    raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    if _b64(raw) != text:
        raise ValueError("not the one spelling of its bytes")
    return raw


def digest_of(secret: str) -> str:
    return hashlib.sha256(f"decision-link-secret\n{secret}".encode()).hexdigest()


def _signed(payload: str) -> bytes:
    return f"{PARTITION}\n{payload}".encode()


def issue(
    settings: Settings,
    key: LinkKey,
    links: DecisionLinkItems,
    ids: tuple[str, str, str],
    expires_at: float,
    event_id: str,
) -> str | None:
    """The token of a link answering the question ``ids`` (session, turn, request) as
    ``settings.decision_links_as``, its issue recorded first; None without links, where the link was
    used already, or where the question's ids and the principal make a link too long to be read back.
    Its id comes from ``event_id`` (the event's, stable); each issue draws a new secret, which its
    record adds to those of the e-mails before: each e-mail's link works, once for all of them."""
    if not settings.decision_links_as:
        return None
    session_id, turn_id, request_id = ids
    link_id = _b64(hashlib.sha256(f"link\n{event_id}".encode()).digest()[:12])
    secret = secrets.token_urlsafe(16)
    link = Link(
        s=session_id, t=turn_id, r=request_id, p=settings.decision_links_as, e=int(expires_at), j=link_id, n=secret
    )
    payload = _b64(json.dumps(link.model_dump(), sort_keys=True, separators=(",", ":")).encode())
    if len(payload) + 1 + 43 > MAX_LINK_CHARS:  # (the MAC: 32 bytes, 43 characters)
        return None
    token = f"{payload}.{_b64(key.mac(_signed(payload)))}"
    purge_at = link.e + settings.retention_seconds
    issued = links.record_link(session_id, link_id, (turn_id, request_id, link.p), digest_of(secret), purge_at)
    return token if issued else None


def _held(deps: Dependencies, token: str) -> Link | None:
    """The link ``token`` holds, if the decision-link key signed it as it is; else None."""
    payload, _, mac = token.partition(".")
    if len(token) > MAX_LINK_CHARS or not token.isascii() or not payload or not mac:
        return None
    try:
        held = json.loads(_unb64(payload))
        signature = _unb64(mac)
    except (binascii.Error, ValueError):
        return None
    if not isinstance(held, dict) or len(signature) != 32:
        return None
    try:
        link = Link.model_validate(held)
    except ValidationError:
        return None
    return link if deps.keys.link.verified(_signed(payload), signature) else None


def read(deps: Dependencies, token: str, now: float) -> Link:
    """The link ``token`` is, if this deployment issued it, unexpired, for the approver it names now;
    otherwise the refusal, saying why."""
    settings = deps.settings
    if not settings.decision_links_as:
        raise NotFoundError(
            "one-click decision links are off in this deployment (DecisionLinksAnswerAs); decide on the inbox page"
        )
    link = _held(deps, token)
    if link is None:
        raise NotFoundError("this is not a decision link this deployment made (or it was changed); nothing was decided")
    if link.p != settings.decision_links_as:
        raise ForbiddenError("this link answers as someone links no longer answer as; decide on the inbox page")
    if link.e <= now:
        raise GoneError("this link expired with its question; nothing was decided")
    issued = deps.store.issued_link(link.s, link.j)
    if (
        issued is None
        or (issued.turn_id, issued.request_id, issued.principal) != (link.t, link.r, link.p)
        or not any(hmac.compare_digest(held, digest_of(link.n)) for held in issued.digests)
    ):
        raise NotFoundError(_UNISSUED)
    return link


_UNISSUED = "this decision link was never issued by this deployment; nothing was decided: decide on the inbox page"


_SAID = {"superseded": "withdrawn (its turn was canceled, or moved on without it)"}


def said_of(status: str) -> str:
    """A question's status in words a person reads."""
    return _SAID.get(status, status)


def caller(link: Link) -> Caller:
    return Caller(link.p, frozenset(), {"method": METHOD, "link": link.j}, via="email")


def question(deps: Dependencies, token: str) -> tuple[Link, InteractionView]:
    """What the link's page shows: the question as it stands now (a settled one says how)."""
    now = deps.clock.now()
    link = read(deps, token, now)
    found = deps.store.get_interaction(link.s, root_of(link.t), link.r)
    if found is None:
        raise NotFoundError("the question of this link is gone (its session was deleted); nothing was decided")
    return link, InteractionView.of(found, now)


def decide(
    deps: Dependencies, token: str, decision: Decision, text: str | None, confirmed: bool = False
) -> tuple[str, TurnView]:
    """Take the link's decision, once (``approve`` or ``deny`` with ``text`` its message, for an
    approval; ``reply`` with ``text`` the answer, for a question answered in words): refused if the
    link was used, or its question is settled or expired, or it approves a call that needs a
    confirmation (``InteractionView.needs_confirmation``) without one. The question's request id, and its turn."""
    from resumable.service.answering.answer import submit_approval

    link, asked = question(deps, token)
    if (decision == "reply") != (asked.name != APPROVAL_INTERRUPT) or (decision == "reply" and not text):
        wanted = "approve or deny" if asked.name == APPROVAL_INTERRUPT else "a reply in words"
        raise BadRequestError(f"this question takes {wanted}; nothing was decided")
    if asked.status != "requested":  # (410 for one no longer live, 409 for one answered: as the API answers)
        refused = GoneError if asked.status in ("superseded", "expired") else ConflictError
        raise refused(f"the question is {said_of(asked.status)} already: this link decides nothing now")
    if decision == "approve" and asked.needs_confirmation and not confirmed:
        raise BadRequestError(
            f"approving this call needs its confirmation (it runs {asked.summary}): tick the box that names it and "
            "approve again; nothing was decided"
        )
    claim = deps.store.claim_link(link.s, link.j, digest_of(link.n), deps.clock.now())
    if claim == "unissued":  # (its record purged, or issued again, since it was read)
        raise NotFoundError(_UNISSUED)
    if claim == "used":
        raise ConflictError("this link was used already: each decides once; see the question on the inbox page")
    response: Any = text if decision == "reply" else {"decision": decision}
    if decision != "reply" and text:  # (a deny's message for the agent; an approval's note, for the trail)
        response["message"] = text
    try:
        return link.r, submit_approval(deps, link.s, link.t, link.r, response, caller(link))
    except (ServiceError, AwsError):
        if _nothing_recorded(deps, link):  # (refused, or the turn busy: the link may be used again)
            deps.store.release_link(link.s, link.j)
        raise


def _nothing_recorded(deps: Dependencies, link: Link) -> bool:
    """Whether the question, read again, shows nothing of the link's: still open, and no vote of its
    principal (an answer written before a later step failed keeps the link spent: under a rule the
    question stays open, and a second use could deny what the first approved)."""
    try:
        found = deps.store.get_interaction(link.s, root_of(link.t), link.r)
    except AwsError:
        return False  # (cannot tell: spent)
    return found is not None and found.status == "requested" and link.p not in found.votes

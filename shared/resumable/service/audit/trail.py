"""GET /audit: the audit trail (``service.audit.entries``) read a page at a time, oldest first, by approvers."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from resumable.clock import iso
from resumable.exceptions import ForbiddenError, ValidationFailedError
from resumable.service import cursor
from resumable.service.access import is_approver
from resumable.service.audit.entries import approved_as_asked, asked_input, digest
from resumable.service.caller import Caller
from resumable.service.views import View
from resumable.store.audit import audit_day, audit_pk
from resumable.store.records import AuditOutcome, AuditRecord, InteractionRecord, expired

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

DEFAULT_PAGE = 100
MAX_PAGE = 500
DEFAULT_DAYS = 7
READ_SIZE = 100
# A page reads at most this many times (records a filter leaves out), and days that hold nothing for
# at most this many Queries (a day is a Query of each of its shards, each a few milliseconds: 25 days
# at 16 shards) and this many days; the cursor goes on from there.
MAX_READS_PER_PAGE = 40
MAX_EMPTY_QUERIES_PER_PAGE = 400
MAX_EMPTY_READS_PER_PAGE = 100
SKEW = 60.0  # (records made by a function whose clock runs ahead: read up to a minute past now)
NOW = 0.001  # (default until: just past now, so that a record made at this very moment is in)
EARLIEST, LATEST = 0.0, 253_402_300_799.0  # 1970-01-01 and 9999-12-31T23:59:59Z: any moment outside is one of them
MAX_PAGE_BYTES = 4 * 1024 * 1024  # of records' JSON: a reply stays under Lambda's 6 MB
OUTCOMES: tuple[AuditOutcome, ...] = ("voted", "approved", "denied", "ran", "failed", "unknown", "not_run", "refused")


class AuditVoteView(View):
    by: str
    at: str
    authentication: dict[str, str] | None
    message: str | None = None


class AuditRecordView(View):
    """One record of the audit trail."""

    kind: Literal["vote", "decision", "action", "refused", "grant"] = Field(
        description="'vote': an approval that waits for more under its rule; 'decision': the answer that settled "
        "the question; 'action': what became of the approved action; 'refused': an answer refused though its "
        "caller may see the question (once a day per question, principal and refusal); 'grant': a standing grant "
        "revoked."
    )
    outcome: AuditOutcome = Field(description=f"One of {', '.join(OUTCOMES)}.")
    at: str
    session_id: str
    root_turn_id: str
    turn_id: str
    request_id: str = Field(description="The question's id: every record of one question has it.")
    tool: str | None
    agent_path: list[str]
    rule: str | None = Field(
        description="The approval rule the question was asked under (its name); of an action, its approval's."
    )
    started_by: str | None = Field(
        default=None, description="Who started the turn that asked (null in records written before it was kept)."
    )
    by: str | None = Field(
        description="Who answered (or tried to): a principal, 'application', or 'expiry' (a rule denied it)."
    )
    refusal: str | None = Field(
        default=None,
        description="Of a refused answer, why: not_an_approver, self_approval, duplicate_vote, other_input (a vote "
        "for another input than the votes so far) or after_settlement.",
    )
    authentication: dict[str, str] | None = Field(
        description="How they proved it: {method: iam, arn, accessKey}, {method: jwt, subject, issuer}, ..."
    )
    message: str | None
    votes: list[AuditVoteView] = Field(description="Of a decision: every approval counted under its rule.")
    input_asked_digest: str | None = Field(description="sha256: of the canonical JSON of the input asked.")
    input_approved_digest: str | None = Field(
        description="sha256: of the input approved (of an action: the input it ran with)."
    )
    input_asked: Any = None
    input_approved: Any = None
    inputs: Literal["kept", "session", "digest"] = Field(
        description="Where the inputs shown come from: the record ('kept'), their session, which still exists "
        "('session'), or nowhere: digests only ('digest')."
    )
    late: bool = False
    grant: dict[str, Any] | None = Field(
        default=None,
        description="The standing grant the approval gave (a decision), that approved the call without a question "
        "(an action), or that was revoked: id, scope, by (who granted), at, rule, expiresAt, inputs.",
    )


class AuditPage(View):
    records: list[AuditRecordView]
    since: str
    until: str
    cursor: str | None = Field(description="Send it back (with the same query) for the next page; null at the end.")


@dataclass
class _Page:
    """Where a page reads: the range asked (``start``, ``end``), the day and sort key it goes on after."""

    start: float
    end: float
    day: str = ""
    last: str | None = None


_CURSOR_FIELDS = frozenset({"pk", "sk", "since", "until"})


def audit(
    deps: Dependencies,
    caller: Caller | None,
    *,
    since: str | None = None,
    until: str | None = None,
    by: str | None = None,
    tool: str | None = None,
    outcome: str | None = None,
    limit: int = DEFAULT_PAGE,
    after: str | None = None,
) -> AuditPage:
    """One page of the audit trail made in [``since``, ``until``) (ISO 8601; default: the last
    ``DEFAULT_DAYS`` days), oldest first: records answered by (or with a vote of) ``by``, of tools
    matching ``tool`` (``*`` wildcards), with ``outcome``. Approvers only."""
    if caller is not None and not is_approver(deps.settings, caller):
        raise ForbiddenError(
            "the audit trail is for approvers only (APPROVER_PRINCIPALS, APPROVER_GROUPS); nothing was listed"
        )
    if not 1 <= limit <= MAX_PAGE:
        raise ValidationFailedError(
            f"query parameter 'limit' is {limit}: it must be 1 to {MAX_PAGE}; nothing was listed"
        )
    if outcome is not None and outcome not in OUTCOMES:
        raise ValidationFailedError(
            f"query parameter 'outcome' is {outcome!r}: it must be one of {', '.join(OUTCOMES)}; nothing was listed"
        )
    now = deps.clock.now()
    query = "AUDIT\n" + json.dumps([by, tool, outcome])  # (what a cursor is issued for)
    page = _where(deps, since, until, after, query, now)
    read, resume = _read(deps, page, now, limit, lambda record: _matches(record, by, tool, outcome))
    shown = _shown(deps, [record for _, record in read], now)
    size = 0
    for kept, view in enumerate(shown):  # (records keep whole inputs: a page of them can be large)
        size += len(view.model_dump_json(by_alias=True))
        if size > MAX_PAGE_BYTES and kept > 0:
            sk, record = read[kept - 1]
            shown, resume = shown[:kept], (audit_day(record.at), sk)
            break
    token = None
    if resume is not None:
        held_at = {"pk": {"S": audit_pk(resume[0])}, "sk": {"S": resume[1] or ""}}
        held_at |= {"since": {"S": repr(page.start)}, "until": {"S": repr(page.end)}}
        token = cursor.issue(held_at, query, deps.keys.cursor())
    return AuditPage(records=shown, since=iso(page.start) or "", until=iso(page.end) or "", cursor=token)


def _where(
    deps: Dependencies, since: str | None, until: str | None, after: str | None, query: str, now: float
) -> _Page:
    """The range asked, and where in it this page starts (the cursor's place, or the range's start)."""
    end = moment("until", until) if until is not None else now + NOW
    start = moment("since", since) if since is not None else end - DEFAULT_DAYS * 86400
    page = _Page(start, end)
    if after is not None:
        held = cursor.read(after, query, deps.keys.cursor(), shapes=[_CURSOR_FIELDS], listing="this listing")
        page = _Page(float(held["since"]["S"]), float(held["until"]["S"]))
        if (since is not None and start != page.start) or (until is not None and end != page.end):
            raise ValidationFailedError(
                "query parameters 'since' and 'until' are not those the cursor was issued with: send the cursor "
                "with the same query (or leave them out: the cursor holds them); nothing was listed"
            )
        page.day, page.last = held["pk"]["S"].removeprefix("AUDIT#"), held["sk"]["S"] or None
    if page.start >= page.end:
        raise ValidationFailedError(
            f"query parameter 'since' ({iso(page.start)}) is not before 'until' ({iso(page.end)}): nothing was listed"
        )
    return page


def _read(
    deps: Dependencies, page: _Page, now: float, limit: int, wanted: Callable[[AuditRecord], bool]
) -> tuple[list[tuple[str, AuditRecord]], tuple[str, str | None] | None]:
    """Up to ``limit`` wanted records (each with its sort key) from where ``page`` starts, and where the
    next page starts (None: the range holds no more). No record is older than the trail's retention,
    nor made after now (give or take the functions' clocks): only that much of the range is read."""
    first_read = max(page.start, now - deps.settings.audit_retention_seconds - 86400)
    last_read = min(page.end, now + SKEW)
    day, last = page.day or audit_day(min(first_read, last_read)), page.last
    final_day = audit_day(last_read)
    records: list[tuple[str, AuditRecord]] = []
    resume: tuple[str, str | None] | None = None
    reads = empty = 0
    empty_days = min(MAX_EMPTY_READS_PER_PAGE, max(1, MAX_EMPTY_QUERIES_PER_PAGE // deps.settings.index_shards))
    while first_read < last_read and reads < MAX_READS_PER_PAGE and empty < empty_days:
        found, more = deps.store.list_audit(day, last, first_read, last_read, READ_SIZE)
        reads, empty = (reads + 1, empty) if found else (reads, empty + 1)
        for position, (sk, record) in enumerate(found):
            last = sk
            if not expired(record.purge_at, now) and wanted(record):
                records.append((sk, record))
                if len(records) == limit:
                    more = more or position < len(found) - 1
                    break
        if more:  # this day goes on, after ``last``
            resume = (day, last)
        elif day < final_day:
            resume = (_next(day), None)
        else:
            resume = None
        if resume is None or len(records) == limit:
            break
        day, last = resume
    return records, resume


def moment(name: str, text: str, undone: str = "nothing was listed") -> float:
    """An ISO 8601 date (``2026-01-01``: its start, UTC) or time (``2026-01-01T09:30:00Z``; UTC unless
    it says otherwise) as seconds since the epoch (refused, saying ``undone``, if it is neither)."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        raise ValidationFailedError(
            f"query parameter {name!r} is {text[:64]!r}: send an ISO 8601 date or time, like 2026-01-01 or "
            f"2026-01-01T09:30:00Z; {undone}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return min(max(moment.timestamp(), EARLIEST), LATEST)
    except (OverflowError, ValueError):  # (an offset that takes it past year 1 or 9999)
        return EARLIEST if moment.year < 5000 else LATEST


def _next(day: str) -> str:
    return (date.fromisoformat(day) + timedelta(days=1)).isoformat()


def _matches(record: AuditRecord, by: str | None, tool: str | None, outcome: str | None) -> bool:
    return (
        (by is None or record.by == by or any(v.by == by for v in record.votes))
        and (tool is None or (record.tool is not None and fnmatch.fnmatchcase(record.tool, tool)))
        and (outcome is None or record.outcome == outcome)
    )


def _shown(deps: Dependencies, records: list[AuditRecord], now: float) -> list[AuditRecordView]:
    """The records as an auditor reads them, with the inputs this deployment shows (see the module)."""
    mode = deps.settings.audit_inputs
    questions: dict[str, InteractionRecord] = {}
    wanted = [(e.session_id, e.root_turn_id, e.request_id) for e in records if mode != "digest" and not e.inputs_kept]
    if wanted:
        for interaction in deps.store.get_interactions(wanted):
            if interaction.deleted_generation is None and not expired(interaction.purge_at, now):
                questions[interaction.request_id] = interaction
    return [_view(record, mode, questions.get(record.request_id)) for record in records]


def _view(record: AuditRecord, mode: str, question: InteractionRecord | None) -> AuditRecordView:
    asked = approved = None
    inputs: Literal["kept", "session", "digest"] = "digest"
    if mode != "digest" and record.inputs_kept:
        asked, approved, inputs = record.input_asked, record.input_approved, "kept"
    elif mode != "digest" and question is not None:
        asked = asked_input(question)
        vote = question.votes.get(record.by or "") if record.kind == "vote" else None
        answered = question.response if isinstance(question.response, dict) else {}
        edited = vote.input if vote is not None else answered.get("input")
        approved = edited if edited is not None else approved_as_asked(question)
        # shown only as recorded: an input whose digest is not the record's is not the one decided on
        if digest(asked) != record.input_asked_digest:
            asked = None  # (an action's record is of the input it ran with alone)
        if digest(approved) != record.input_approved_digest:
            approved = None
        if asked is not None or approved is not None:
            inputs = "session"
    return AuditRecordView(
        **record.model_dump(exclude={"at", "votes", "input_asked", "input_approved", "inputs_kept", "purge_at"}),
        at=iso(record.at) or "",
        votes=[
            AuditVoteView(by=v.by, at=iso(v.at) or "", authentication=v.authentication, message=v.message)
            for v in record.votes
        ],
        input_asked=asked,
        input_approved=approved,
        inputs=inputs,
    )

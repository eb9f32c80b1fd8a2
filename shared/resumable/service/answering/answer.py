"""submit-approval: settle an interaction exactly once and, when it was the last one, resume the turn."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from resumable.clock import iso
from resumable.exceptions import (
    ConflictError,
    ForbiddenError,
    GoneError,
    GrantRefusedError,
    NotFoundError,
    ServiceError,
    TurnBusyError,
    ValidationFailedError,
)
from resumable.metrics import count_answer
from resumable.runtime.tools import APPROVAL_INTERRUPT, ApprovalAnswer
from resumable.service.access import check_may_answer, is_approver, load, rule_of, visible
from resumable.service.advancing.advance import advance
from resumable.service.advancing.settlement import EXPIRY
from resumable.service.answering.edits import check_edit
from resumable.service.answering.refusals import record_refusal
from resumable.service.answering.votes import answer_under_rule
from resumable.service.audit.entries import authentication_of, decision_entry
from resumable.service.caller import VIAS, Caller, channel_of, identity_of
from resumable.service.grants.giving import GrantRequest, given, grant_id, grant_request, lasting
from resumable.service.ids import root_of, valid_request_id, valid_session_id, valid_turn_id
from resumable.service.limits import json_utf8
from resumable.service.views import TurnView, decision_of
from resumable.store.answers import AnswerCondition, AnswerOutcome
from resumable.store.records import InteractionRecord, TurnRecord

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def submit_approval(
    deps: Dependencies,
    session_id: str,
    turn_id: str,
    request_id: str,
    response: Any,
    caller: Caller | None,
    grant: Any = None,
) -> TurnView:
    """Record ``response`` for the interaction (one read of it, then one conditional write), then resume
    if nothing else is awaited. The same answer again is idempotent (and drives a resume that a crash
    interrupted). ``grant``: the standing grant an approval also gives (``GrantRequest``'s shape), written
    in the approval's own transaction."""
    missing = NotFoundError(
        f"there is no interaction {request_id!r} in turn {turn_id!r} of session {session_id!r}; nothing was answered"
    )
    if not (valid_session_id(session_id) and valid_turn_id(turn_id) and valid_request_id(request_id)):
        raise missing
    approval_shaped = _checked(deps, response)
    wanted = grant_request(grant) if grant is not None else None
    if wanted is not None and (not approval_shaped or response["decision"] != "approve"):
        raise GrantRefusedError("a grant goes with an approval ({'decision': 'approve'}); nothing was answered")
    root_id = root_of(turn_id)
    # Read first: an edit is checked against the question's tool, and the audit trail records the
    # question's tool and input asked with the answer (its display detail never changes); the write
    # below checks everything else.
    asked = deps.store.get_interaction(session_id, root_id, request_id)
    if asked is None:
        raise missing
    if approval_shaped and response.get("input") is not None:
        check_edit(deps, asked, turn_id, response["decision"], response["input"], caller, missing)
    asker = turn_id if turn_id != root_id else None
    now = deps.clock.now()
    try:
        answer = _answer(deps, asked, response, caller, approval_shaped, turn_id, asker, now, missing, wanted)
    except (ForbiddenError, ConflictError, GoneError) as refused:
        # (the trail is of approvals: a refused one is on it, once a day per reason; a grant refused is not one)
        if approval_shaped and not isinstance(refused, GrantRefusedError):
            record_refusal(deps, asked, response, caller, refused)
        raise
    tree = load(deps, session_id, root_id)
    if answer.outcome == "answered":
        logger.info(
            "session_id=<%s>, turn_id=<%s>, request_id=<%s> | interaction answered by %s",
            session_id,
            root_id,
            request_id,
            caller,
        )
        recorded = next((i for i in tree.interactions if i.request_id == request_id), None)
        if recorded is not None:
            count_answer(recorded)
    return TurnView.of(advance(deps, tree))  # the root turn, whichever turn id was sent


def _answer(
    deps: Dependencies, asked: InteractionRecord, response: Any, caller: Caller | None, approval_shaped: bool,
    turn_id: str, asker: str | None, now: float, missing: NotFoundError, wanted: GrantRequest | None = None,
) -> AnswerOutcome:  # fmt: skip
    """The answer recorded (or voted, or found replayed); the service error that says why it was not."""
    session_id, root_id, request_id = asked.session_id, asked.root_turn_id, asked.request_id
    if asked.status != "requested" or asked.expires_at <= now:
        answer = AnswerOutcome("refused", interaction=asked)  # (as the write would be: no need to try it)
    elif _ruled(asked, approval_shaped, now):
        if not visible(deps, asked, turn_id, caller):
            raise missing
        answer = answer_under_rule(deps, asked, response, caller, child_turn_id=asker, grant=wanted)
    else:
        who = identity_of(caller)
        if wanted is not None and asked.status == "requested" and visible(deps, asked, turn_id, caller):
            given(deps, asked, rule_of(asked), response, wanted, who, now)  # (a 403: no rule, so no grant)
        answer = deps.store.answer_interaction(
            session_id,
            root_id,
            request_id,
            response,
            who,
            now,
            AnswerCondition.unruled(
                approval_shaped=approval_shaped,
                asker=asker,
                principal=None if caller is None or is_approver(deps.settings, caller) else caller.identity,
            ),
            via=channel_of(caller),
            audit=decision_entry(deps, asked, response, who, authentication_of(caller), now)
            if approval_shaped
            else None,
        )
    if answer.outcome == "missing":
        raise missing
    if answer.outcome == "turn_busy":
        raise _busy(answer.turn, root_id, request_id)
    if answer.outcome == "refused":
        interaction = answer.interaction
        assert interaction is not None
        if not visible(deps, interaction, turn_id, caller):
            raise missing
        if approval_shaped:
            check_may_answer(interaction, response, caller)  # (a replay too: the rule says who may answer)
        if _expired_unanswered(interaction, approval_shaped):
            # The answer came too late: settle the turn expired (a write), then say so.
            moved = advance(deps, load(deps, session_id, root_id))
            if any(i.request_id == request_id and i.answered_by == EXPIRY for i in moved.interactions):
                raise _denied_at_expiry(request_id)
            settled = "is settled as expired" if deps.runs_agents else "is being settled (as its approval rule says)"
            raise GoneError(
                f"interaction {request_id} expired before it was answered; its turn {settled} and nothing was answered"
            )
        _unless_replayed(interaction, response, approval_shaped, caller)
        if wanted is not None:
            _grant_replayed(deps, interaction, wanted)
    return answer


def _grant_replayed(deps: Dependencies, interaction: InteractionRecord, wanted: GrantRequest) -> None:
    """An approval sent again with its grant: the grant must be the one it gave (else 409)."""
    gave = next((g for g in deps.store.all_grants() if g.grant_id == grant_id(interaction.request_id)), None)
    lasts = None if gave is None else round(gave.expires_at - gave.granted_at, 3)
    if gave is None or (gave.scope, gave.inputs, lasts) != (wanted.scope, wanted.inputs, round(wanted.seconds, 3)):
        what = (
            f"with the grant {gave.grant_id} ({gave.scope}, {lasting(lasts or 0)}"
            + (f", inputs {json.dumps(gave.inputs)}" if gave.inputs else "")
            + ")"
            if gave is not None
            else "without a grant"
        )
        raise ConflictError(
            f"interaction {interaction.request_id} was approved before {what}; that approval and its grant stand, "
            "unchanged, and this grant was not given: revoke it and grant the tool with its next question",
            winning=interaction.response,
        )


def _ruled(interaction: InteractionRecord | None, approval_shaped: bool, now: float) -> bool:
    """Whether the answer was refused because the interaction is asked under an approval rule (and is
    still open to its answers)."""
    return (
        interaction is not None
        and interaction.rule is not None
        and approval_shaped
        and interaction.status == "requested"
        and interaction.expires_at > now
    )


def _checked(deps: Dependencies, response: Any) -> bool:
    """Refuse a response that cannot be an answer (null, too large, not storable); return whether it
    has an approval answer's shape. These checks do not depend on the session, so they answer the
    same whatever session id is sent."""
    if response is None:
        raise ValidationFailedError(
            "the response is missing or null: send the answer as 'response'; nothing was answered"
        )
    size = len(json_utf8(response, "the response", "nothing was answered"))
    if size > deps.settings.max_response_bytes:
        raise ValidationFailedError(
            f"the response is {size} bytes of JSON, the limit is {deps.settings.max_response_bytes}; "
            "nothing was answered"
        )
    try:
        ApprovalAnswer.model_validate(response)
    except ValidationError:
        return False
    # A null message or input would be recorded as the answer; an approval leaves them out instead.
    return not any(response.get(k, "") is None for k in ("message", "input"))


def _busy(turn: TurnRecord | None, root_id: str, request_id: str) -> ServiceError:
    """Why a turn took no answer: it is canceled or settled (410), or being advanced (409)."""
    if turn is not None and (turn.cancel_requested or turn.settled):
        return GoneError(
            f"turn {root_id} is {'being canceled' if not turn.settled else turn.status}, so interaction "
            f"{request_id} can no longer be answered; nothing was answered"
        )
    return TurnBusyError(
        f"turn {root_id} is not waiting for answers right now (it is being advanced): retry shortly; "
        "nothing was answered"
    )


def _expired_unanswered(interaction: InteractionRecord, approval_shaped: bool) -> bool:
    """Whether the answer was refused only because the interaction's expiry had passed."""
    return interaction.status == "requested" and (interaction.name != APPROVAL_INTERRUPT or approval_shaped)


def _denied_at_expiry(request_id: str) -> GoneError:
    return GoneError(
        f"interaction {request_id} expired before it was answered, and its approval rule denies a question at "
        "its expiry: it was denied and the turn went on; nothing was answered"
    )


def _unless_replayed(
    interaction: InteractionRecord, response: Any, approval_shaped: bool, caller: Caller | None
) -> None:
    """Explain why the conditional write refused the answer; return only for an identical replay."""
    if interaction.status == "answered":
        if _canonical(interaction.response) == _canonical(response):
            return
        if interaction.answered_by == EXPIRY:
            raise _denied_at_expiry(interaction.request_id)
        yours = interaction.answered_by == identity_of(caller)
        via = VIAS.get(interaction.answered_via or "", "")
        at = f"{via} at {iso(interaction.answered_at)}".strip()
        who = "you" if yours else interaction.answered_by
        raise ConflictError(
            f"{who} already answered interaction {interaction.request_id} ({at}) with "
            f"{_canonical(interaction.response)}; that answer stands and this one was not recorded",
            winning=interaction.response,
            answered={
                "by": interaction.answered_by,
                "at": iso(interaction.answered_at),
                "via": interaction.answered_via,
                "decision": decision_of(interaction),
                "yours": yours,
            },
        )
    if interaction.status == "requested" and interaction.name == APPROVAL_INTERRUPT and not approval_shaped:
        raise ValidationFailedError(
            f"interaction {interaction.request_id} is an approval: answer {{'decision': 'approve'}} (with "
            "'input': {...} where it is editable) or {'decision': 'deny', 'message': '...'}; 'message' and "
            "'input' may be left out, not null; nothing was answered"
        )
    raise GoneError(
        f"interaction {interaction.request_id} is {interaction.status} (its turn was canceled, settled or moved "
        "on) and can no longer be answered; nothing was answered"
    )

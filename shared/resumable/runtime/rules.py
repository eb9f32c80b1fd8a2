"""Approval rules: who may answer the approval of which tools' calls, and how many must agree.

A rule belongs to an ``ApprovalPolicy`` (resumable.runtime.approval), of an agent or of the
deployment (``APPROVAL_RULES``, read by ``parse_rules``). The runtime only carries a call's rule into
the question it asks; the service enforces it on the answers (resumable.service.answering.votes).
"""

from __future__ import annotations

import fnmatch
import json
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator


def matches_any(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


GROUP_PREFIX = "group:"
"""An ``approvers`` entry naming a group of a sign-in token (``group:dba``), not a principal pattern."""

MAX_REQUIRED = 10
"""The most approvals a rule may require (each is kept on the question until it settles)."""
MAX_PATTERNS = 50
"""The most patterns a rule's list may hold (a rule is stored with every question asked under it)."""
Pattern = Annotated[str, Field(min_length=1, max_length=256)]

Risk = Literal["low", "medium", "high", "destructive"]
"""How much a call can harm, as a tool or a rule declares it: an approver is shown it, the inbox puts
riskier questions first among those due in the same hour, and ``destructive`` asks for a confirmation
that names what will happen."""
RISKS: tuple[Risk, ...] = ("low", "medium", "high", "destructive")
MAX_IMPACT_CHARS = 200
"""The longest ``impact``: one line an approver reads on the question's card."""


GrantScope = Literal["session", "principal"]
"""What a standing grant covers: the session its approval was in, or every session of that session's
principal (who started it)."""
MAX_GRANT_SECONDS = 30 * 86400
"""The longest a rule may let a grant last (30 days): a grant is a standing approval, renewed by a person."""


def seconds_of(value: Any) -> Any:
    """A duration as seconds: a number as it is, or ``'90s'``, ``'30m'``, ``'4h'``, ``'2d'``; anything else
    as given (the field's own check refuses it). A boolean is none (Python would read ``true`` as 1 s)."""
    if isinstance(value, bool):
        raise ValueError("give a number of seconds, or a duration such as '90s', '30m', '4h' or '2d', not a boolean")
    if isinstance(value, str):
        found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smhd])\s*", value)
        if found is None:
            raise ValueError("give a number of seconds, or a duration such as '90s', '30m', '4h' or '2d'")
        return float(found[1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[found[2]]
    return value


class GrantAllowance(BaseModel):
    """What a rule lets an approver grant with an approval (``ApprovalRule.grants``): the same tool's
    later calls run without a question, for at most ``max`` (seconds, or ``'8h'``, ``'2d'``), in the
    ``scopes`` listed (``session``: the session the approval was in; ``principal``: every session of
    its principal), and for a ``destructive`` call only where ``destructive`` says so."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)

    max: float = Field(gt=0, le=MAX_GRANT_SECONDS)
    scopes: tuple[GrantScope, ...] = Field(default=("session",), min_length=1, max_length=2)
    destructive: StrictBool = False

    @field_validator("max", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return seconds_of(value)

    @field_validator("scopes")
    @classmethod
    def _distinct(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("list each scope once")
        return value


def riskier(*levels: str | None) -> Risk | None:
    """The highest of ``levels`` (None when none is given)."""
    known = [level for level in levels if level in RISKS]
    return max(known, key=RISKS.index) if known else None


def check_impact(impact: str | None, where: str) -> str | None:
    """``impact`` if it is one line of at most ``MAX_IMPACT_CHARS``, else a ValueError naming ``where``."""
    if impact is not None and (
        not isinstance(impact, str) or not impact.strip() or "\n" in impact or len(impact) > MAX_IMPACT_CHARS
    ):
        raise ValueError(
            f"{where}: impact is one line of at most {MAX_IMPACT_CHARS} characters saying what the call touches "
            f"(e.g. 'Deletes the record and its backups'), got {impact!r}"
        )
    return impact


class ApprovalRule(BaseModel):
    """Who may answer the approval of a call of the ``tools`` it matches (``fnmatch`` patterns), and
    how many of them must agree.

    ``approvers``: principal patterns (``arn:aws:sts::*:assumed-role/dba-*/*``, a token subject) and
    groups of a sign-in token (``group:dba``, the exact name); None: whoever may answer the session's
    questions (its principal and every approver), as without a rule. A rule only narrows: nobody who
    may not see the session answers. Distinct approvers are distinct principals as the API knows them.
    ``required``: how many distinct approvers must approve before the call runs (any deny settles it
    denied at once). ``self_approval``: whether the principal who started the turn may approve its own
    call (default: not when two or more must agree, else yes). ``edits``: whether an approver may edit
    the input (every approving vote then approves the same input). ``name`` is what messages call it
    (default: its patterns).

    ``risk`` (``low``, ``medium``, ``high``, ``destructive``) and ``impact`` (one line: what the call
    touches) are shown to the approver, over what the tool itself declares (the higher risk wins);
    ``confirm``: approving needs a confirmation that names what will happen, as a ``destructive``
    risk does.

    ``escalate_after`` (seconds, or ``"90s"``, ``"30m"``, ``"4h"``, ``"2d"``) with ``escalate_to``
    (principal patterns and groups, as ``approvers``): when nobody settled the question that long after
    it was asked, the sweeper lets ``escalate_to`` answer it too, and says so (``Interaction
    Escalated``). ``on_expiry``: what a question nobody settled becomes at its expiry: ``expire`` (its
    turn settles ``expired``, as without a rule) or ``deny`` (it is denied, the agent is told it timed
    out, and the turn goes on).

    ``slack_channel``: where the Slack function posts the questions asked under the rule (a channel id
    or ``#name``), instead of the deployment's ``SlackChannel``.

    ``grants`` (``GrantAllowance``; off when unset): an approver who approves a call under the rule may
    also grant the same tool for a while (docs/approval-rules.md#standing-grants). Only under a rule
    that one approval settles: with ``required`` of 2 or more a grant would let one person stand for
    every later call that the rule says takes two, so such a rule refuses ``grants``."""

    # (a number JSON cannot hold, such as 1e400 read as infinity, is refused: every reply and event carries it)
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)

    tools: tuple[Pattern, ...] = Field(min_length=1, max_length=MAX_PATTERNS)
    name: str | None = Field(default=None, min_length=1, max_length=100)
    approvers: tuple[Pattern, ...] | None = Field(default=None, min_length=1, max_length=MAX_PATTERNS)
    required: StrictInt = Field(default=1, ge=1, le=MAX_REQUIRED)
    self_approval: StrictBool | None = None
    edits: StrictBool = False
    escalate_after: float | None = Field(default=None, gt=0)
    escalate_to: tuple[Pattern, ...] | None = Field(default=None, min_length=1, max_length=MAX_PATTERNS)
    on_expiry: Literal["expire", "deny"] = "expire"
    risk: Risk | None = None
    impact: str | None = None
    confirm: StrictBool = False
    slack_channel: str | None = Field(default=None, pattern=r"^#?[A-Za-z0-9._-]{1,80}$")
    grants: GrantAllowance | None = None

    @field_validator("impact")
    @classmethod
    def _impact(cls, value: str | None) -> str | None:
        return check_impact(value, "the rule")

    @field_validator("escalate_after", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return seconds_of(value)

    @model_validator(mode="after")
    def _answerable(self) -> ApprovalRule:
        if (self.escalate_after is None) != (self.escalate_to is None):
            raise ValueError("escalate_after and escalate_to go together: when, and to whom")
        named = {*(self.approvers or ()), *(self.escalate_to or ())}
        patterned = any(p.startswith(GROUP_PREFIX) or any(c in p for c in "*?[") for p in named)
        if self.approvers is not None and not patterned and len(named) < self.required:
            raise ValueError(
                f"it requires {self.required} distinct approvers but names only {len(named)} "
                f"({', '.join(sorted(named))}): its questions could never be approved"
            )
        if self.grants is not None and self.required >= 2:
            raise ValueError(
                f"grants: a rule that requires {self.required} approvals cannot allow standing grants: one "
                "approver's grant would stand for later calls the rule says take several; leave grants out, or "
                "require 1"
            )
        if self.grants is not None and self.risk == "destructive" and not self.grants.destructive:
            raise ValueError(
                "grants: the rule's calls are destructive, and its grants leave destructive calls out, so none "
                "could be granted; say grants.destructive: true, or leave grants out"
            )
        return self

    @field_validator("tools", "approvers", "escalate_to")
    @classmethod
    def _patterns(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and not all(p.strip() and p == p.strip() for p in value):
            raise ValueError("patterns must be non-empty strings without surrounding spaces")
        if value is not None and any(p == GROUP_PREFIX for p in value):
            raise ValueError(f"{GROUP_PREFIX!r} must be followed by a group's name")
        return value

    def stored(self) -> dict[str, Any]:
        """The rule as a question carries it: its JSON, without what is unset (and without ``confirm``
        when it is not asked for, so a rule that does not use it reads as it did before there was one)."""
        return self.model_dump(mode="json", exclude_none=True, exclude=set() if self.confirm else {"confirm"})

    @property
    def title(self) -> str:
        """What messages call the rule."""
        return self.name or ",".join(self.tools)

    @property
    def allows_self_approval(self) -> bool:
        return self.required < 2 if self.self_approval is None else self.self_approval

    def matches(self, tool_name: str) -> bool:
        return matches_any(tool_name, self.tools)

    def admits(self, principal: str, groups: frozenset[str], *, escalated: bool = False) -> bool:
        """Whether ``approvers`` (and, once ``escalated``, ``escalate_to``) names ``principal`` or one of
        its ``groups``; no ``approvers`` names everyone."""
        if self.approvers is None:
            return True
        named = (*self.approvers, *(self.escalate_to or () if escalated else ()))
        return any(
            p[len(GROUP_PREFIX) :] in groups if p.startswith(GROUP_PREFIX) else fnmatch.fnmatchcase(principal, p)
            for p in named
        )


def parse_rules(rules: Any, where: str = "APPROVAL_RULES") -> tuple[ApprovalRule, ...]:
    """``rules`` (a JSON list of rule objects, as text or already parsed) as ApprovalRules; a
    ValueError naming the first bad rule (by position and patterns) and what is wrong with it."""
    from pydantic import ValidationError

    if isinstance(rules, str):
        try:
            rules = json.loads(rules) if rules.strip() else []
        except ValueError as error:
            raise ValueError(f"{where} is not JSON ({error}): give a list of rules, e.g. "
                             '[{"tools": ["delete_*"], "required": 2}]') from None  # fmt: skip
    if not isinstance(rules, (list, tuple)):
        raise ValueError(f"{where} must be a list of rules, got {type(rules).__name__}")
    parsed = []
    for number, rule in enumerate(rules, 1):
        if isinstance(rule, ApprovalRule):
            parsed.append(rule)
            continue
        named = (rule.get("name") or rule.get("tools")) if isinstance(rule, dict) else None
        try:
            parsed.append(ApprovalRule.model_validate(rule))
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'the rule'}: {str(e['msg']).removeprefix('Value error, ')}"
                for e in error.errors()
            )
            which = f"rule {number}" + (f" ({json.dumps(named)})" if named else "")
            raise ValueError(f"{where}: {which} is not a rule: {problems}") from None
    return tuple(parsed)

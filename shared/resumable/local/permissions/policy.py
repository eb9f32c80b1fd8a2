"""An IAM policy evaluator for the part of the language the template uses: identity policies in one
account, and a resource's policy for a service principal; ``Allow`` and ``Deny``,
``Action``/``NotAction``, ``Resource``/``NotResource``, the ``*`` and ``?`` wildcards, and the
``StringEquals``/``StringLike``/``ArnEquals``/``ArnLike`` conditions. Anything else (another
condition operator, ``NotPrincipal``, a policy variable) is refused, not guessed at: an evaluator
that ignored it would allow what AWS denies.

AWS's order is followed (the policy evaluation logic of the IAM User Guide): an explicit deny in any
statement wins; otherwise an allow in any statement allows; otherwise the request is denied
implicitly. Actions match case-insensitively, resources case-sensitively; in an ARN a wildcard stays
within its segment (between colons; slashes are no boundary), except a ``*`` that ends a segment,
which may match beyond it (the IAM User Guide's Resource element).

(moto's ``IAMPolicy`` is not used: it matches actions case-sensitively, reads a pattern's dots as any
character, has no ``?`` and denies outright where a statement's condition does not hold.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


class UnsupportedPolicyError(ValueError):
    """A statement uses what this evaluator does not evaluate."""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str  # "allowed by <sid>", "denied by <sid>", or "no statement allows it"


@lru_cache(maxsize=4096)
def _pattern(pattern: str, action: bool) -> re.Pattern[str]:
    if action:  # service:Action, matched whole and case-insensitively
        body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
        return re.compile(f"^{body}$", re.IGNORECASE | re.DOTALL)
    # In an ARN a wildcard stays within its segment, but a * that ends a segment may go beyond colons.
    parts = []
    for n, c in enumerate(pattern):
        ends_segment = n + 1 == len(pattern) or pattern[n + 1] == ":"
        parts.append((".*" if ends_segment else "[^:]*") if c == "*" else "[^:]" if c == "?" else re.escape(c))
    return re.compile("^" + "".join(parts) + "$", re.DOTALL)


def matches_action(pattern: str, action: str) -> bool:
    return bool(_pattern(pattern, True).match(action))


def matches_resource(pattern: str, resource: str) -> bool:
    if "${" in pattern:
        raise UnsupportedPolicyError(f"policy variables are not evaluated here: {pattern}")
    return pattern == "*" or bool(_pattern(pattern, False).match(resource))


def _listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _like(wanted: str, given: str) -> bool:
    """StringLike: case-sensitive, ``*`` any run of characters, ``?`` any one."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in wanted)
    return re.fullmatch(body, given, re.DOTALL) is not None


# The condition operators evaluated (the template's resource policies use ArnEquals); any other is
# refused. ArnEquals and ArnLike are the same test in IAM (each segment matched, wildcards allowed).
_CONDITIONS = {
    "StringEquals": lambda wanted, given: wanted == given,
    "StringLike": _like,
    "ArnEquals": matches_resource,
    "ArnLike": matches_resource,
}

# A principal's kind, as a statement's Principal names it: a service, or an account, role or user.
_SERVICE = re.compile(r"^[a-z0-9.-]+\.amazonaws\.com(\.cn)?$")


def _principal_matches(statement: dict[str, Any], principal: str | None) -> bool:
    if "NotPrincipal" in statement:
        raise UnsupportedPolicyError(f"a statement with a NotPrincipal is not evaluated here: {statement}")
    if principal is None:  # an identity policy: it has no Principal
        if "Principal" in statement:
            raise UnsupportedPolicyError(f"an identity policy's statement names no Principal: {statement}")
        return True
    if "Principal" not in statement:
        raise UnsupportedPolicyError(f"a resource policy's statement names its Principal: {statement}")
    named = statement["Principal"]
    if named == "*":
        return True
    if not isinstance(named, dict):
        raise UnsupportedPolicyError(f"a Principal is '*' or names its kind (Service, AWS, ...): {statement}")
    kind = "Service" if _SERVICE.match(principal) else "AWS"
    return any(principal in _listed(values) or "*" in _listed(values) for k, values in named.items() if k == kind)


def _conditions_hold(statement: dict[str, Any], context: dict[str, str]) -> bool:
    for operator, tests in statement.get("Condition", {}).items():
        if operator not in _CONDITIONS:
            raise UnsupportedPolicyError(f"the condition operator {operator} is not evaluated here: {statement}")
        for key, wanted in tests.items():
            if any("${" in w for w in _listed(wanted)):
                raise UnsupportedPolicyError(f"policy variables are not evaluated here: {statement}")
            given = next((v for k, v in context.items() if k.lower() == key.lower()), None)
            if given is None and statement.get("Effect") == "Deny":
                # A real request carries keys this one does not know (aws:RequestedRegion, tags...):
                # whether the deny applies cannot be told here, and guessing "no" would allow.
                raise UnsupportedPolicyError(f"a Deny's condition on {key}, which the request given lacks: {statement}")
            # A key the request does not carry fails the test; one of several values suffices.
            if given is None or not any(_CONDITIONS[operator](w, given) for w in _listed(wanted)):
                return False
    return True


def _applies(
    statement: dict[str, Any], action: str, resource: str, principal: str | None, context: dict[str, str]
) -> bool:
    if ("Action" in statement) == ("NotAction" in statement):
        raise UnsupportedPolicyError(f"a statement needs exactly one of Action and NotAction: {statement}")
    if ("Resource" in statement) == ("NotResource" in statement):
        raise UnsupportedPolicyError(f"a statement needs exactly one of Resource and NotResource: {statement}")
    if not _principal_matches(statement, principal):
        return False
    if "Action" in statement:
        action_matches = any(matches_action(p, action) for p in _listed(statement["Action"]))
    else:
        action_matches = not any(matches_action(p, action) for p in _listed(statement["NotAction"]))
    if "Resource" in statement:
        resource_matches = any(matches_resource(p, resource) for p in _listed(statement["Resource"]))
    else:
        resource_matches = not any(matches_resource(p, resource) for p in _listed(statement["NotResource"]))
    return action_matches and resource_matches and _conditions_hold(statement, context)


def statements(documents: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every statement of these policy documents."""
    found = []
    for document in documents:
        listed = document.get("Statement", [])
        found += [listed] if isinstance(listed, dict) else list(listed)
    return found


def evaluate(
    documents: Iterable[dict[str, Any]],
    action: str,
    resource: str,
    principal: str | None = None,
    context: dict[str, str] | None = None,
) -> Decision:
    """Whether policies ``documents`` allow ``action`` on ``resource`` (an ARN, or ``*``): identity
    policies, or, given the calling ``principal`` (a service, ``events.amazonaws.com``), a resource's
    policies; ``context`` holds the request's condition keys (``aws:SourceArn``)."""
    allowed_by = None
    for n, statement in enumerate(statements(documents)):
        effect = statement.get("Effect")
        if effect not in ("Allow", "Deny"):
            raise UnsupportedPolicyError(f"a statement's Effect is Allow or Deny, not {effect!r}")
        if not _applies(statement, action, resource, principal, context or {}):
            continue
        name = statement.get("Sid", f"statement {n + 1}")
        if effect == "Deny":
            return Decision(False, f"denied by {name}")
        allowed_by = allowed_by or name
    return Decision(True, f"allowed by {allowed_by}") if allowed_by else Decision(False, "no statement allows it")

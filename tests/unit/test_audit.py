"""The audit trail's pieces that need no AWS: the digest an auditor recomputes, the order of records
made in one instant, the times a query takes, and an input shown only as its record recorded it."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from resumable.exceptions import ValidationFailedError
from resumable.service.audit.entries import digest
from resumable.service.audit.trail import _view, moment
from resumable.store.audit import audit_day, audit_sk
from resumable.store.records import AuditRecord, InteractionRecord

T = 1_800_000_000.0


def record(**fields: Any) -> AuditRecord:
    base: dict[str, Any] = {
        "kind": "decision", "outcome": "approved", "at": T, "session_id": "s", "root_turn_id": "a" * 32,
        "turn_id": "a" * 32, "request_id": "r" + "0" * 24, "by": "alice", "purge_at": T + 400 * 86400,
    }  # fmt: skip
    return AuditRecord(**(base | fields))


def test_the_digest_is_sha256_of_canonical_json_whatever_the_key_order_or_script() -> None:
    value = {"b": [1, 2.5, None], "a": "prod-ünïcode ✓"}
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert digest(value) == "sha256:" + hashlib.sha256(canonical).hexdigest()
    assert digest({"a": "prod-ünïcode ✓", "b": [1, 2.5, None]}) == digest(value)
    assert digest({"name": "prod-db"}) != digest({"name": "prod-db "})
    assert digest(None) is None


def test_entries_of_one_instant_sort_vote_decision_action_and_days_are_utc() -> None:
    made = [record(kind="action", outcome="ran", by=None), record(), record(kind="vote", outcome="voted")]
    assert [e.kind for e in sorted(made, key=audit_sk)] == ["vote", "decision", "action"]
    later = record(at=T + 0.000001)
    assert audit_sk(later) > audit_sk(record(kind="action", outcome="ran", by=None))
    assert audit_day(1_767_225_599.5) == "2025-12-31" and audit_day(1_767_225_600.0) == "2026-01-01"
    # two voters in one instant: two records, never one overwriting the other
    assert audit_sk(record(kind="vote", outcome="voted", by="bob")) != audit_sk(record(kind="vote", outcome="voted"))


def test_a_query_takes_iso_dates_and_times_utc_unless_they_say() -> None:
    assert moment("since", "2026-01-01") == 1_767_225_600.0
    assert moment("since", "2026-01-01T01:00:00Z") == moment("since", "2026-01-01T02:00:00+01:00")
    for bad in ["yesterday", "2026-13-01", "", "1767225600"]:
        with pytest.raises(ValidationFailedError, match="ISO 8601"):
            moment("since", bad)


def test_an_input_is_shown_only_if_it_is_the_one_the_entry_recorded() -> None:
    question = InteractionRecord(
        session_id="s", root_turn_id="a" * 32, turn_id="a" * 32, request_id="r" + "0" * 24, interrupt_id="i",
        name="approval", reason={"tool": "delete_record", "input": {"name": "prod-db"}}, agent_path=["a"],
        status="answered", response={"decision": "approve"}, expires_at=T, created_at=T, updated_at=T,
    )  # fmt: skip
    recorded = digest({"name": "prod-db"})
    shown = _view(record(input_asked_digest=recorded, input_approved_digest=recorded), "session", question)
    assert (shown.inputs, shown.input_asked, shown.input_approved) == (
        "session",
        {"name": "prod-db"},
        {"name": "prod-db"},
    )
    other = digest({"name": "staging-db"})
    hidden = _view(record(input_asked_digest=other, input_approved_digest=other), "session", question)
    assert (hidden.inputs, hidden.input_asked, hidden.input_approved) == ("digest", None, None)
    kept = record(input_asked_digest=recorded, input_asked={"name": "prod-db"}, inputs_kept=True)
    assert _view(kept, "digest", question).inputs == "digest"  # a deployment that turned inputs off shows none
    assert _view(kept, "keep", None).input_asked == {"name": "prod-db"}


def test_a_query_parameter_sent_twice_is_said_so() -> None:
    from resumable.api.app import describe

    problem = {"loc": ("query", "since"), "type": "string_type", "msg": "Input should be a valid string"}
    assert describe(problem | {"input": ["2026-01-01", "2026-02-01"]}) == (
        "query parameter 'since' was sent more than once, or holds a comma: send one value"
    )
    assert describe(problem | {"input": 5}) == "query parameter 'since': Input should be a valid string"

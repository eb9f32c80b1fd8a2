"""``resumable admin audit --check-separation``, from the records alone (as an export of a deleted
session's trail holds them): an approved call one of whose approvers started its turn is listed (exit 1),
a refused attempt to approve one's own call is listed apart, a record without startedBy is counted as not
checked."""

from __future__ import annotations

from typing import Any

import pytest

from resumable.cli.admin import _separation
from resumable.cli.printed import table

OWNER, ANN, BEN = "arn:aws:iam::1:user/owner", "arn:aws:iam::1:user/ann", "arn:aws:iam::1:user/ben"


def _record(kind: str, outcome: str, request: str, **fields: Any) -> dict[str, Any]:
    return {
        "kind": kind, "outcome": outcome, "at": "2026-12-06T10:00:00.000Z", "sessionId": "s", "requestId": request,
        "tool": "delete_record", "rule": "two", "votes": [], **fields,
    }  # fmt: skip


def _vote(by: str) -> dict[str, Any]:
    return {"by": by, "at": "2026-12-06T09:59:00.000Z", "authentication": None}


def test_an_approved_call_its_starter_voted_for_is_listed_and_the_check_fails(
    capsys: pytest.CaptureFixture[str],
) -> None:
    records = [
        _record("decision", "approved", "r-fine", startedBy=OWNER, by=BEN, votes=[_vote(ANN), _vote(BEN)]),
        _record("decision", "approved", "r-voted", startedBy=OWNER, by=BEN, votes=[_vote(OWNER), _vote(BEN)]),
        _record("decision", "approved", "r-alone", startedBy=ANN, by=ANN),  # (no rule: approved their own)
        _record("decision", "denied", "r-denied", startedBy=OWNER, by=OWNER),  # (a withdrawal: no approval)
        _record("decision", "approved", "r-old", by=ANN),  # (written before startedBy was kept)
        _record("refused", "refused", "r-fine", startedBy=OWNER, by=OWNER, refusal="self_approval"),
        _record("refused", "refused", "r-fine", startedBy=OWNER, by=ANN, refusal="duplicate_vote"),
    ]
    assert _separation(records, "table", table, "from a to b") == 1
    out, err = capsys.readouterr()
    listed = [line.split()[-1] for line in out.splitlines() if line.startswith("2026")]
    assert listed == ["r-voted", "r-alone", "r-fine"], out  # (two approved by their starter; one refused attempt)
    assert f"{OWNER}  " in out.splitlines()[-1] and "r-fine" in out.splitlines()[-1]
    assert "4 approved calls checked from a to b: 2 approved by the one who started its turn" in err
    assert "1 refused attempt to approve one's own call; 1 without startedBy" in err


def test_a_trail_where_nobody_approved_their_own_call_passes() -> None:
    fine = [_record("decision", "approved", "r", startedBy=OWNER, by=BEN, votes=[_vote(ANN), _vote(BEN)])]
    assert _separation(fine, "jsonl", table, "") == 0

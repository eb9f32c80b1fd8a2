"""A short soak (``make soak`` runs it for two minutes): random scenarios with faults, every
guarantee checked after each; a violation fails the suite."""

from __future__ import annotations

import pytest

from bench.soak import soak


@pytest.mark.slow
def test_a_short_soak_finds_no_violation() -> None:
    totals = soak(seconds=20, seed="ci")
    assert totals["scenarios"] >= 10 and totals["checks"] > totals["scenarios"]
    assert totals["violations"] == [], "\n".join(totals["violations"])

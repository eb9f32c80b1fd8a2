"""A short soak (``make soak`` runs it for two minutes): a fixed number of random scenarios with faults,
of our agent trees and of Strands ones, every guarantee checked after each; a violation fails the suite."""

from __future__ import annotations

import pytest

from resumable.local.lag import LAG, lagging
from tests.soak import soak

SCENARIOS = 12
LAGGING_SCENARIOS = 8
# Only stops a soak that never ends (a hang): the same 12 scenarios take about 20 s on an idle 2-core
# machine, however long they take on a busy one.
CAP_SECONDS = 900


@pytest.mark.slow
def test_a_short_soak_finds_no_violation() -> None:
    totals = soak(seconds=CAP_SECONDS, seed="ci", scenarios=SCENARIOS)
    assert not totals["stopped"], f"the soak stopped after {totals['scenarios']} of {SCENARIOS} scenarios: a hang?"
    assert totals["scenarios"] == SCENARIOS and totals["checks"] > totals["scenarios"]
    assert 0 < totals["strands"] < SCENARIOS, f"{totals['strands']} of {SCENARIOS} scenarios ran Strands trees"
    assert totals["violations"] == [], "\n".join(totals["violations"])


@pytest.mark.slow
def test_a_short_soak_while_the_index_lags_finds_no_violation() -> None:
    """The same, with every index read (and every read without ConsistentRead) lagging 0 to 8
    requests (the embedded AWS's lag, resumable.local.lag): ``RESUMABLE_INDEX_LAG=8 make soak``."""
    stale = LAG.stale_reads
    with lagging(8, seed=54):
        totals = soak(seconds=CAP_SECONDS, seed="lagging", scenarios=LAGGING_SCENARIOS)
    assert not totals["stopped"] and totals["scenarios"] == LAGGING_SCENARIOS
    assert LAG.stale_reads > stale, "the inbox and the sweeper were read while a write was hidden from them"
    assert totals["violations"] == [], "\n".join(totals["violations"])

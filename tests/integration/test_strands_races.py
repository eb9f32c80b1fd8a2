"""What make bench's section 11 counts (bench/strands.py): two resumes of one paused Strands turn with
the same approval at the same moment. With Strands alone, two rebuilt trees loading the same stored
snapshot both run the approved action (nothing records who resumed); under the service, the action runs
once (the approval is settled in DynamoDB, the turn leased, the action journaled)."""

from __future__ import annotations

from bench import strands as section
from resumable.config import Settings


def test_two_resumes_at_once_run_the_action_twice_with_strands_alone_and_once_under_the_service(
    aws: Settings,
) -> None:
    assert section.races(aws, n=2) == {
        "races": 2,
        "strands_alone": {"ran_more_than_once": 2, "executions": 4},
        "under_the_service": {"ran_more_than_once": 0, "executions": 2},
    }

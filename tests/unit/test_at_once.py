"""Calls made at once (a sharded read's first Queries): all run together, every one ends before the
first failure is raised, and each runs under the X-Ray entity of the thread that asked for it."""

from __future__ import annotations

import threading
import time

import pytest

from resumable.aws.at_once import MOST_AT_ONCE, at_once


def test_the_calls_run_at_once() -> None:
    """Each call waits for all the others to have started: one after another, the first waits alone."""
    together = threading.Barrier(MOST_AT_ONCE, timeout=30)
    ran: list[int] = []

    def call(n: int) -> None:
        together.wait()
        ran.append(n)

    at_once([lambda n=n: call(n) for n in range(MOST_AT_ONCE)])  # type: ignore[misc]
    assert sorted(ran) == list(range(MOST_AT_ONCE))


def test_every_call_ends_before_the_first_failure_in_their_order_is_raised() -> None:
    ended: list[str] = []

    def slow() -> None:
        time.sleep(0.2)
        ended.append("slow")

    def failing(name: str) -> None:
        ended.append(name)
        raise ValueError(name)

    with pytest.raises(ValueError, match="first"):
        at_once([lambda: failing("first"), slow, lambda: failing("second")])
    assert sorted(ended) == ["first", "second", "slow"]


def test_each_call_is_traced_under_the_asking_threads_entity_and_leaves_its_thread_without_one() -> None:
    """Under the X-Ray SDK, with a segment begun in the asking thread (as Lambda's is, for its
    invocation). Every thread of the pool runs a call in each round: the second finds none holding
    the first's entity."""
    from aws_xray_sdk import global_sdk_config
    from aws_xray_sdk.core import xray_recorder

    was, missing = global_sdk_config.sdk_enabled(), xray_recorder.context.context_missing
    global_sdk_config.set_sdk_enabled(True)
    xray_recorder.configure(context_missing="IGNORE_ERROR")
    try:
        segment = xray_recorder.begin_segment("asking", sampling=0)
        under: list[object] = []
        together = threading.Barrier(MOST_AT_ONCE, timeout=30)
        at_once(
            [lambda: (together.wait(), under.append(xray_recorder.get_trace_entity())) for _ in range(MOST_AT_ONCE)]
        )
        assert under == [segment] * MOST_AT_ONCE
        xray_recorder.clear_trace_entities()  # (the asking thread's invocation is over)
        left: list[dict[str, object]] = []
        together.reset()
        at_once(
            [
                lambda: (together.wait(), left.append(dict(xray_recorder.context._local.__dict__)))
                for _ in range(MOST_AT_ONCE)
            ]
        )
        assert left == [{}] * MOST_AT_ONCE
    finally:
        xray_recorder.clear_trace_entities()
        xray_recorder.configure(context_missing=missing)
        global_sdk_config.set_sdk_enabled(was)

"""Calls made at once (a sharded read's first Queries): all run together, every one ends before the
first failure is raised, and each runs under the X-Ray entity of the thread that asked for it."""

from __future__ import annotations

import contextvars
import threading
import time

import pytest

from resumable.aws.at_once import MOST_AT_ONCE, at_once
from tests.patience import HANG_SECONDS


def test_the_calls_run_at_once() -> None:
    """Each call waits for all the others to have started: one after another, the first waits alone."""
    together = threading.Barrier(MOST_AT_ONCE, timeout=HANG_SECONDS)
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
        together = threading.Barrier(MOST_AT_ONCE, timeout=HANG_SECONDS)
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


def test_each_call_sees_the_asking_threads_context_variables() -> None:
    """(The permission check's recorder tells which function made a call by one.)"""
    asking: contextvars.ContextVar[str] = contextvars.ContextVar("asking", default="nobody")
    seen: list[str] = []
    token = asking.set("the handler")
    try:
        at_once([lambda: seen.append(asking.get()) for _ in range(4)])
    finally:
        asking.reset(token)
    assert seen == ["the handler"] * 4


def test_with_x_ray_on_and_no_segment_the_calls_run_untraced_and_nothing_is_said_missing() -> None:
    """Outside Lambda no segment is open: asking X-Ray for one would log an error on every read, or
    raise (``AWS_XRAY_CONTEXT_MISSING=RUNTIME_ERROR``)."""
    from aws_xray_sdk import global_sdk_config
    from aws_xray_sdk.core import xray_recorder

    was, missing = global_sdk_config.sdk_enabled(), xray_recorder.context.context_missing
    global_sdk_config.set_sdk_enabled(True)
    xray_recorder.configure(context_missing="RUNTIME_ERROR")
    ran: list[int] = []
    try:
        at_once([lambda n=n: ran.append(n) for n in range(4)])  # type: ignore[misc]
    finally:
        xray_recorder.configure(context_missing=missing)
        global_sdk_config.set_sdk_enabled(was)
    assert sorted(ran) == [0, 1, 2, 3]


def test_calls_asked_for_from_the_pool_run_on_the_asking_thread_not_waiting_for_the_pool() -> None:
    """Every thread of the pool asks for two calls at once: waiting for the pool, none would end."""
    together = threading.Barrier(MOST_AT_ONCE, timeout=HANG_SECONDS)
    inner: list[str] = []

    def outer() -> None:
        together.wait()  # (every thread of the pool is taken)
        at_once([lambda: inner.append(threading.current_thread().name) for _ in range(2)])

    asking = threading.Thread(target=at_once, args=([outer] * MOST_AT_ONCE,), daemon=True)
    asking.start()
    asking.join(timeout=HANG_SECONDS)
    assert not asking.is_alive(), "the calls asked for from the pool waited for it (a deadlock)"
    assert len(inner) == 2 * MOST_AT_ONCE

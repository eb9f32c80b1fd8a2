"""Several AWS calls at once: a sharded read's first Query of every shard. Each runs on a thread of a
pool the process keeps (the calls wait on the network, not on the CPU), in a copy of the asking
thread's context (its context variables), and traced under the asking thread's X-Ray entity, since
X-Ray keeps a thread's segment to that thread."""

from __future__ import annotations

import contextvars
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

MOST_AT_ONCE = 16
"""Threads in the pool, and connections a client keeps (``aws.clients``): a read of more shards than
this waits for a thread."""

_NAME = "at-once"
_pool: dict[int, ThreadPoolExecutor] = {}  # by process id: made on first use, kept (a fork's child makes its own)
_lock = threading.Lock()


def at_once(calls: Sequence[Callable[[], None]]) -> None:
    """Run ``calls`` at once and wait for every one to end; then raise the first failure, in the order
    of ``calls`` (a call that failed leaves the others to finish, never half-run). One call, or calls
    asked for from a thread of the pool (which could otherwise wait for threads all taken by their
    askers), run one after another on the asking thread."""
    if len(calls) <= 1 or threading.current_thread().name.startswith(_NAME):
        for call in calls:
            call()
        return
    from concurrent.futures import wait

    run = _traced()
    futures = [_threads().submit(contextvars.copy_context().run, run, call) for call in calls]
    wait(futures)
    for future in futures:
        future.result()


def _threads() -> ThreadPoolExecutor:
    with _lock:
        if os.getpid() not in _pool:
            from concurrent.futures import ThreadPoolExecutor

            _pool.clear()
            _pool[os.getpid()] = ThreadPoolExecutor(max_workers=MOST_AT_ONCE, thread_name_prefix=_NAME)
        return _pool[os.getpid()]


def _traced() -> Callable[[Callable[[], None]], None]:
    """How a pool thread runs a call: under the asking thread's X-Ray entity where the X-Ray SDK is in
    use and on and the asking thread has one (Lambda's, for its invocation), so each call's
    subsegment nests where it would have; as it is otherwise (nothing of X-Ray is imported for it, and
    no entity is asked for where there is none: X-Ray would log, or raise, that it is missing)."""
    sdk: Any = sys.modules.get("aws_xray_sdk")
    core: Any = sys.modules.get("aws_xray_sdk.core")
    if sdk is None or core is None or not sdk.global_sdk_config.sdk_enabled():
        return _plain
    recorder = core.xray_recorder
    in_lambda = type(recorder.context).__name__ == "LambdaContext"  # (always has one: the invocation's)
    if not in_lambda and not getattr(getattr(recorder.context, "_local", None), "entities", None):
        return _plain
    entity = recorder.get_trace_entity()

    def run(call: Callable[[], None]) -> None:
        recorder.set_trace_entity(entity)
        try:
            call()
        finally:
            recorder.clear_trace_entities()

    return run


def _plain(call: Callable[[], None]) -> None:
    call()

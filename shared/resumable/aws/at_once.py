"""Several AWS calls at once: a sharded read's first Query of every shard. Each runs on a thread of a
pool the process keeps (the calls wait on the network, not on the CPU), traced under the entity of
the call that asked for them, since X-Ray keeps a thread's segment to that thread."""

from __future__ import annotations

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

_pool: dict[int, ThreadPoolExecutor] = {}  # by process id: made on first use, kept (a fork's child makes its own)
_lock = threading.Lock()


def at_once(calls: Sequence[Callable[[], None]]) -> None:
    """Run ``calls`` at once and wait for every one to end; then raise the first failure, in the order
    of ``calls`` (a call that failed leaves the others to finish, never half-run)."""
    if len(calls) <= 1:
        for call in calls:
            call()
        return
    from concurrent.futures import wait  # (a request that reads no shards does not load it)

    run = _traced()
    futures = [_threads().submit(run, call) for call in calls]
    wait(futures)
    for future in futures:
        future.result()


def _threads() -> ThreadPoolExecutor:
    with _lock:
        if os.getpid() not in _pool:
            from concurrent.futures import ThreadPoolExecutor

            _pool.clear()
            _pool[os.getpid()] = ThreadPoolExecutor(max_workers=MOST_AT_ONCE, thread_name_prefix="at-once")
        return _pool[os.getpid()]


def _traced() -> Callable[[Callable[[], None]], None]:
    """How a pool thread runs a call: under the asking thread's X-Ray entity where the X-Ray SDK is in
    use and on (Powertools' tracer, in Lambda), so each call's subsegment nests where it would have;
    as it is otherwise (nothing of X-Ray is imported for it)."""
    sdk: Any = sys.modules.get("aws_xray_sdk")
    if sdk is None or "aws_xray_sdk.core" not in sys.modules or not sdk.global_sdk_config.sdk_enabled():
        return _plain
    recorder = sys.modules["aws_xray_sdk.core"].xray_recorder
    entity = recorder.get_trace_entity()
    if entity is None:
        return _plain

    def run(call: Callable[[], None]) -> None:
        recorder.set_trace_entity(entity)
        try:
            call()
        finally:
            recorder.clear_trace_entities()

    return run


def _plain(call: Callable[[], None]) -> None:
    call()

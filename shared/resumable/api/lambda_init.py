"""A Lambda function's init (its handler module's import), without the garbage collector's pauses.

The init imports boto3, pydantic, Powertools and resumable: hundreds of thousands of objects that
live as long as the process, and few that die. CPython's collector, counting allocations, runs its
full collection in the middle of it all the same, and then again in the first request (which loads
botocore's service models): each one walks every object made so far, some 50 ms of a cold start
(``make bench`` section 4, bench/README.md). So a handler module calls ``begin()`` before its imports
and ``end()`` after them: the collector is off while the init runs, then what the init made is moved
to the permanent generation (``gc.freeze()``, which no collection walks) and collection resumes for
what the requests make.

Only in a Lambda function's own process (``LAMBDA_TASK_ROOT`` set, as Lambda and ``make bench`` set
it); a process that imports handlers beside other work (the local API, the tests) is left as it is.
"""

from __future__ import annotations

import gc
import os


def _in_lambda() -> bool:
    return bool(os.environ.get("LAMBDA_TASK_ROOT"))


def begin() -> None:
    """Before the handler's imports: no collection until ``end()``."""
    if _in_lambda():
        gc.disable()


def end() -> None:
    """After the handler's imports: what they made is kept out of every later collection, and
    collection resumes."""
    if _in_lambda():
        gc.freeze()
        gc.enable()

"""A Lambda function's init (its handler module's import), without the garbage collector's pauses.

The init imports botocore, pydantic, Powertools and resumable: some 140,000 objects, most of
which live as long as the process. CPython's collector, counting allocations, runs a full collection
in the middle of it all the same, walking every object made so far (in ``make bench`` section 4, a
cold start about 80 ms shorter without it: bench/README.md). So a handler module imports inside
``with lambda_init.quiet():``: the collector is off while the init runs; then what the init made is
moved to the permanent generation (``gc.freeze()``, which no collection walks) and collection resumes
for what the requests make. The price: what the init leaves unreachable (about 27,000 objects, several
MB of the 66 MB a handler's process holds) is never collected, where a collection would have cost
that cold start some 70 ms.

Only in a Lambda function's own process (``LAMBDA_TASK_ROOT`` set, as Lambda and ``make bench`` set
it); a process that imports handlers beside other work (the local API, the tests) is left as it is.
An init that fails turns the collector back on and freezes nothing.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def quiet() -> Iterator[None]:
    """Around a handler module's imports: no collection until they are done."""
    if not os.environ.get("LAMBDA_TASK_ROOT"):
        yield
        return
    gc.disable()
    try:
        yield
        gc.freeze()
    finally:
        gc.enable()

"""``make bench`` and ``make soak``: what resumable costs, and whether it keeps its guarantees under faults."""

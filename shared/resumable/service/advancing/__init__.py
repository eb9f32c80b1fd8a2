"""Advancing a turn: starting it, running it under a lease (``advance``), its child turns, its action
journal, its commit, settling it, canceling it, continuing it later."""

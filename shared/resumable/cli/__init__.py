"""The ``resumable`` command: the approver's desk in a terminal (resumable.cli.main)."""

"""The audit trail: the entries answers and actions write (``entries``), and reading them (``trail``)."""

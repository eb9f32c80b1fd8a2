"""Answering a question: an answer recorded once (``answer``), under its approval rule's votes, with an
edited input, dismissed from an inbox, decided by a one-click link, escalated in time."""

"""Text an agent or a stranger wrote, shown as it is and never obeyed: a control or format character (a
bell, an escape, a right-to-left override that would reorder what follows it, a zero-width one) is shown
as its ``\\u`` escape, as the inbox page shows it (``plain`` in web/inbox.js); a new line and a tab are
kept. Slack's messages and the decision page both use it, so it sits here, importing nothing of
either."""

from __future__ import annotations

import unicodedata

_KEPT = "\n\t"


def hidden(character: str) -> bool:
    """Whether ``character`` is obeyed or unseen rather than read: a control or format character other
    than a new line or a tab, or a line or paragraph separator (U+2028, U+2029: a new line to some
    readers, none to others, so text could seem to end where it does not)."""
    return character not in _KEPT and unicodedata.category(character) in ("Cc", "Cf", "Zl", "Zp")


def plain(text: str) -> str:
    """``text`` with each hidden character shown as its escape (``\\u202e``)."""
    return "".join(f"\\u{ord(c):04x}" if hidden(c) else c for c in text)

"""SAM translations kept on disk (.resumable/translations), so that the processes that check the same
template (the test workers, make permissions, the next run) translate each configuration once.

A translation is SAM's work alone, offline and deterministic: it rests on the template's text, the
configuration's parameters, the partition (``AWS_DEFAULT_REGION``), the SAM translator's version and
this package's translating code (stack.py, and functions.py's YAML loader), all of which name the file
it is kept in. A file is written whole or not at all (renamed into place), so processes side by side
never read half of one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from resumable.local.functions import ROOT

KEPT = ROOT / ".resumable" / "translations"


def key(text: str, parameters: dict[str, Any]) -> str:
    """What a translation of ``text`` with ``parameters`` rests on, as a digest."""
    import samtranslator  # type: ignore[import-untyped]

    here = Path(__file__).parent
    code = (here / "stack.py").read_bytes() + (here.parent / "functions.py").read_bytes()  # (its YAML loader)
    partition = os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    rests_on = json.dumps([text, parameters, partition, samtranslator.__version__], sort_keys=True)
    return hashlib.sha256(rests_on.encode() + code).hexdigest()[:32]


def kept(text: str, parameters: dict[str, Any], translate: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The translation of ``text`` with ``parameters``: read from disk if kept, else ``translate()``'s,
    kept for the next."""
    path = KEPT / f"{key(text, parameters)}.json"
    try:
        found: dict[str, Any] = json.loads(path.read_text())
        return found
    except (OSError, ValueError):
        pass
    made = translate()
    try:
        KEPT.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=KEPT, suffix=".part", delete=False) as written:
            json.dump(made, written)
        os.replace(written.name, path)
    except OSError:  # (a folder it may not write: translated again next time, nothing worse)
        pass
    return made

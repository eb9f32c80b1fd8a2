"""Where each local run (``make run``) serves, noted for the ``resumable`` command: one file per run.

A run notes its URL, its event queue and when its process started in ``.resumable/runs/<pid>.json`` of
the project it runs from (``RESUMABLE_LOCAL_STATE`` names another file: a test's own), and takes its
note back when it stops: never another run's. The command, given no URL, reads the notes of the runs
still alive (a pid that went to another process is not one) and takes the newest. Beside
``resumable.local``, not in it: the command imports this alone, without the local extra and without the
embedded AWS that ``resumable.local`` loads; like it, it never ships in the layer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# The project's folder of local state (ignored by git): parents are resumable/, shared/.
RUNS = Path(__file__).resolve().parents[2] / ".resumable" / "runs"


@dataclass(frozen=True)
class LocalRun:
    """What a serving run noted: where its API is, its process, and the queue of its events."""

    url: str
    pid: int
    events_queue_url: str | None = None


def _named() -> Path | None:
    named = os.environ.get("RESUMABLE_LOCAL_STATE")
    return Path(named) if named else None


def note(url: str, events_queue_url: str | None = None) -> Callable[[], None]:
    """Note where this run serves, for as long as it does; return what takes the note back."""
    path = _named() or RUNS / f"{os.getpid()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if _named() is None:  # (notes that runs which died without stopping left behind)
        for left in RUNS.glob("*.json"):
            if _read(left) is None:
                left.unlink(missing_ok=True)
    said = {"url": url, "pid": os.getpid(), "started": _started_at(os.getpid()), "events_queue_url": events_queue_url}
    written = path.with_name(f".{path.name}.{os.getpid()}")
    written.write_text(json.dumps(said) + "\n")
    os.replace(written, path)  # (whole at once: a reader never sees half a note)

    def take_back() -> None:
        read = _read(path)
        if read is not None and read.pid == os.getpid():  # (not another run's, started since in its place)
            path.unlink(missing_ok=True)

    return take_back


def serving() -> list[LocalRun]:
    """The runs that serve now, the newest first (a run that died leaves its note behind: skipped)."""
    named = _named()
    paths = [named] if named is not None else sorted(RUNS.glob("*.json"), key=_noted_at, reverse=True)
    return [run for path in paths if (run := _read(path)) is not None]


def _noted_at(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _started_at(pid: int) -> str | None:
    """When process ``pid`` started, as Linux counts it (``/proc/PID/stat``'s starttime), or None where
    it cannot be read: with its pid, what tells a run from a later process given the same pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # (after the command's name, which may hold spaces)
    return fields[19] if len(fields) > 19 else None


def _read(path: Path) -> LocalRun | None:
    """The note at ``path``, if its run is alive (its pid, started when the note says, where that can
    be told) and it names a loopback URL."""
    try:
        said = json.loads(path.read_text())
        pid, url, queue = int(said["pid"]), said["url"], said.get("events_queue_url")
        os.kill(pid, 0)  # (still running? another user's process under a reused pid: PermissionError)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    started = said.get("started")
    if started is not None and _started_at(pid) not in (None, started):
        return None  # (the run died, and its pid went to another process)
    if not isinstance(url, str) or not url.startswith("http://127.0.0.1:"):
        return None
    return LocalRun(url, pid, queue if isinstance(queue, str) else None)

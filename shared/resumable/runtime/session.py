"""Sessions: where an agent keeps its own snapshot between invocations.

An agent given ``session=`` loads its snapshot when it is constructed and saves it after every
invocation. A session is a small protocol, so the store can offer one backed by S3.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from resumable.exceptions import SnapshotError


class Session(Protocol):
    """Loads and saves agents' snapshots by agent name."""

    def load(self, agent_name: str) -> dict[str, Any] | None:
        """The agent's last saved snapshot, or None if it has none."""
        ...

    def save(self, agent_name: str, snapshot: dict[str, Any]) -> None:
        """Replace the agent's saved snapshot."""
        ...


class FileSession:
    """Snapshots as JSON files in ``directory``, one per agent, each replaced atomically."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def _path(self, agent_name: str) -> Path:
        return self.directory / f"{quote(agent_name, safe='')}.json"

    def load(self, agent_name: str) -> dict[str, Any] | None:
        try:
            text = self._path(agent_name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            data = json.loads(text)
        except ValueError as error:
            raise SnapshotError(
                f"session file {self._path(agent_name)} is not JSON ({error}): agent '{agent_name}' was not loaded; "
                "repair or remove the file"
            ) from error
        if not isinstance(data, dict):
            raise SnapshotError(
                f"session file {self._path(agent_name)} does not hold a snapshot object: agent '{agent_name}' "
                "was not loaded; repair or remove the file"
            )
        return data

    def save(self, agent_name: str, snapshot: dict[str, Any]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._path(agent_name)
        import tempfile  # here, not at import: only FileSession writes need it

        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(snapshot, file)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

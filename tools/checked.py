"""A check run once for the files it reads: ``make validate`` and ``make scan`` (and so make predeploy and
make test) run theirs only when a file it reads, or a pinned version, changed since it last passed.

    python tools/checked.py validate -- .venv/bin/python tools/validate_template.py

A pass leaves a stamp in .venv/checked named by the check and a digest of what it read (the files below,
the command, the interpreter); a failure leaves none, so it runs again. Both checks are offline and
deterministic: the same files give the same verdict. ``make clean`` (or deleting .venv/checked) runs
them again whatever changed.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAMPS = ROOT / ".venv" / "checked"

# What each check reads: files, and folders whose every file counts (their bytecode caches aside).
READS = {
    # cfn-lint and the SAM translation (their versions: constraints.txt), the state machine's definition
    # as the package substitutes it, the permission model the translation's conditions come from
    "validate": [
        "template.yaml",
        "statemachines",
        "tools/validate_template.py",
        "shared/resumable",
        "constraints.txt",
        "pyproject.toml",
    ],
    # Checkov (its version: its requirements) over the template alone, offline
    "scan": ["template.yaml", "tools/checkov-requirements.txt"],
}


def digest(check: str, command: list[str]) -> str:
    """sha256 of ``command``, the interpreter, and every file ``check`` reads (by path and content)."""
    hashed = hashlib.sha256("\0".join([check, sys.version, *command]).encode())
    for read in READS[check]:
        place = ROOT / read
        files = sorted(p for p in place.rglob("*") if p.is_file()) if place.is_dir() else [place]
        for file in files:
            if "__pycache__" in file.parts:
                continue
            hashed.update(b"\0" + str(file.relative_to(ROOT)).encode() + b"\0")
            hashed.update(file.read_bytes() if file.exists() else b"(missing)")
    return hashed.hexdigest()[:32]


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in READS or argv[1] != "--":
        print(f"usage: python tools/checked.py {{{','.join(READS)}}} -- COMMAND...", file=sys.stderr)
        return 2
    check, command = argv[0], argv[2:]
    stamp = STAMPS / f"{check}-{digest(check, command)}"
    if stamp.exists():
        print(f"make {check}: passed already for these files ({', '.join(READS[check])}); nothing changed since")
        return 0
    ran = subprocess.run(command, cwd=ROOT, check=False)
    if ran.returncode == 0:
        STAMPS.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    return ran.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A check run once for what it reads: ``make validate`` and ``make scan`` (and so make predeploy and make
test) run theirs again only when a file it reads, a setting it takes from the environment (the Region
above all: cfn-lint lints for it), or a pinned version changed since it last passed.

    python tools/checked.py validate -- .venv/bin/python tools/validate_template.py

A pass leaves a stamp in .venv/checked named by the check and a digest of what it read (the files and
variables below, the command, the interpreter); a failure leaves none, so it runs again. A file changed
while the check ran is not stamped, nor is a check whose ``resumable`` package is another checkout's
(a .venv shared with it: the check read that checkout's files, not these). Both checks are offline:
the same inputs give the same verdict. ``make clean`` (or deleting .venv/checked) runs them again
whatever changed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAMPS = ROOT / ".venv" / "checked"

# What each check reads: files (``~/`` in the home folder), and folders whose every file counts (their
# bytecode caches aside); a file that is not there counts as missing.
READS = {
    # cfn-lint and the SAM translation (their versions: constraints.txt) with their settings, the state
    # machine's definition as the package substitutes it, the permission model the translation's
    # conditions come from
    "validate": [
        "template.yaml",
        "statemachines",
        "tools/validate_template.py",
        "tools/__init__.py",
        "shared/resumable",
        "constraints.txt",
        "pyproject.toml",
        ".cfnlintrc",
        ".cfnlintrc.yaml",
        ".cfnlintrc.yml",
        "~/.cfnlintrc",
        "~/.cfnlintrc.yaml",
        "~/.cfnlintrc.yml",
    ],
    # Checkov (its version: its requirements) over the template alone, offline, with its settings
    "scan": [
        "template.yaml",
        "tools/checkov-requirements.txt",
        ".checkov.yaml",
        ".checkov.yml",
        "~/.checkov.yaml",
        "~/.checkov.yml",
    ],
}
# The environment variables a check's verdict may rest on besides the Region (``regions``): cfn-lint's
# and Checkov's own settings.
VARIABLE_PREFIXES = ("CFNLINT", "CFN_LINT", "CKV_", "BC_", "CHECKOV_")


def regions() -> str:
    """The Regions the checks take from the environment, as they take them (unset is us-east-1): cfn-lint
    lints for ``AWS_REGION``, else ``AWS_DEFAULT_REGION``; the SAM translation's partition comes from
    ``AWS_DEFAULT_REGION``."""
    default = os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    return f"cfn-lint {os.environ.get('AWS_REGION') or default}, translation {default}"


def _place(read: str) -> Path:
    return Path.home() / read.removeprefix("~/") if read.startswith("~/") else ROOT / read


def digest(check: str, command: list[str]) -> str:
    """sha256 of ``command``, the interpreter, the Regions and the variables above, and every file
    ``check`` reads (by path and content)."""
    hashed = hashlib.sha256("\0".join([check, sys.version, regions(), *command]).encode())
    for name in sorted(os.environ):
        if name.startswith(VARIABLE_PREFIXES):
            hashed.update(f"\0${name}={os.environ[name]}".encode())
    for read in READS[check]:
        place = _place(read)
        files = sorted(p for p in place.rglob("*") if p.is_file()) if place.is_dir() else [place]
        for file in files:
            if "__pycache__" in file.parts:
                continue
            hashed.update(b"\0" + (read + str(file)[len(str(place)) :]).encode() + b"\0")
            hashed.update(file.read_bytes() if file.is_file() else b"(missing)")
    return hashed.hexdigest()[:32]


def _package_elsewhere() -> str | None:
    """Where the ``resumable`` this interpreter imports lives, if not in this checkout's shared/."""
    found = importlib.util.find_spec("resumable")
    origin = Path(found.origin).resolve() if found is not None and found.origin else None
    if origin is not None and origin.is_relative_to((ROOT / "shared").resolve()):
        return None
    return str(origin)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in READS or argv[1] != "--":
        print(f"usage: python tools/checked.py {{{','.join(READS)}}} -- COMMAND...", file=sys.stderr)
        return 2
    check, command = argv[0], argv[2:]
    before = digest(check, command)
    stamp = STAMPS / f"{check}-{before}"
    elsewhere = _package_elsewhere() if check == "validate" else None
    if stamp.exists() and elsewhere is None:
        print(f"make {check}: passed already for what it reads ({READS[check][0]}, ...); nothing changed since")
        return 0
    ran = subprocess.run(command, cwd=ROOT, check=False)
    if ran.returncode == 0 and elsewhere is None and digest(check, command) == before:
        STAMPS.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    return ran.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""``make predeploy`` (and ``make deploy``'s first step): every check a deploy must pass, offline, each
run whatever the others said, then one line naming the ones that failed. Exit 1 if any did, so make
deploy stops before it deploys anything."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

CHECKS = {
    "cfn-lint and the SAM translation (make validate)": ["make", "--no-print-directory", "validate"],
    "Checkov (make scan)": ["make", "--no-print-directory", "scan"],
    "the permission check": [str(BIN / "python"), "-m", "resumable.local.permissions"],
    "sam build": ["make", "--no-print-directory", "sam-build"],
    # After sam build: its layers are held to the same layers built here, whose imports this checks.
    "every function imports from its layers and the agent factory builds": [
        str(BIN / "python"),
        "-m",
        "resumable.local.imports",
    ],
}


def main() -> int:
    failed = []
    for name, command in CHECKS.items():
        print(f"predeploy: {name}...", flush=True)
        began = time.monotonic()
        done = subprocess.run(command, cwd=ROOT, check=False)
        print(f"predeploy: {name}: {'ok' if done.returncode == 0 else 'FAILED'} ({time.monotonic() - began:.0f} s)")
        if done.returncode != 0:
            failed.append(name)
    if failed:
        print(f"predeploy: {len(failed)} of {len(CHECKS)} checks failed ({'; '.join(failed)}): nothing was deployed")
        return 1
    print(f"predeploy: all {len(CHECKS)} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What a function's layers must hold to, checked on what was built: Lambda's limit on a function's
code and its layers, unzipped; no top-level name shipped by two layers (in /opt/python one copy would
hide the other); and the same packages in a layer built for Lambda as in the same layer built for this
machine (what imports here then imports there). ``make layer``, ``sam build``'s layer builds and make
predeploy run these."""

from __future__ import annotations

from pathlib import Path


def overlaps(layers: dict[str, Path]) -> dict[str, list[str]]:
    """The top-level names (packages, modules) that more than one of ``layers`` (each one's python/
    folder, by name) puts in /opt/python, and the layers that do: in Lambda the later layer's copy
    hides the other (an application's ``pydantic/`` would be imported in place of pydantic)."""
    found: dict[str, list[str]] = {}
    regular: set[str] = set()  # (a folder without __init__.py in every layer is a namespace: Lambda merges it)
    for name, python in layers.items():
        for entry in python.iterdir() if python.is_dir() else ():
            if entry.name not in ("__pycache__", "bin"):
                found.setdefault(entry.name.removesuffix(".py"), []).append(name)
                if not entry.is_dir() or (entry / "__init__.py").exists():
                    regular.add(entry.name.removesuffix(".py"))
    return {entry: names for entry, names in sorted(found.items()) if len(names) > 1 and entry in regular}


def check_overlaps(layers: dict[str, Path]) -> None:
    """SystemExit naming each name two layers ship, if any."""
    clashes = overlaps(layers)
    if clashes:
        said = "; ".join(f"{entry} (in {' and '.join(names)})" for entry, names in clashes.items())
        raise SystemExit(
            f"two layers ship the same top-level names, and in Lambda one copy would hide the other: {said}. "
            "Rename the application's package in app/, or take the requirement out of app/requirements.txt"
        )


def size(directory: Path) -> int:
    """The bytes of every file under ``directory``, unzipped."""
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


# Lambda's limit on a function's code and its layers, unzipped (its quotas page: "250 MB").
LIMIT_BYTES = 262_144_000
MIB = 1 << 20


def check_limit(shares: dict[str, int], carried_by: str = "a function") -> str:
    """One line of what ``carried_by`` carries (each layer's share, unzipped), or SystemExit naming the
    largest layer when it is over Lambda's limit."""
    total = sum(shares.values())
    each = ", ".join(f"{name} {bytes_ / MIB:.1f} MiB" for name, bytes_ in shares.items())
    said = f"{carried_by}: {total / MIB:.1f} MiB unzipped of Lambda's {LIMIT_BYTES / MIB:.0f} MiB ({each})"
    if total > LIMIT_BYTES:
        largest = max(shares, key=lambda name: shares[name])
        raise SystemExit(
            f"{said}: over Lambda's limit, so Lambda would refuse it; nothing was deployed. The largest is the "
            f"{largest} ({shares[largest] / MIB:.1f} MiB): take out of its requirements what the functions do not "
            "import"
        )
    return said


def distributions(python: Path) -> set[str]:
    """The distributions a layer ships, as ``name-version`` (its ``*.dist-info`` folders)."""
    return {p.name.removesuffix(".dist-info") for p in python.glob("*.dist-info")} if python.is_dir() else set()


def same_distributions(for_lambda: Path, for_here: Path) -> list[str]:
    """What tells a layer built for Lambda from the same layer built for this machine (each one's python/
    folder), distribution by distribution: nothing, when what imports here imports the same there."""
    there, here = distributions(for_lambda), distributions(for_here)
    return [f"only for Lambda: {name}" for name in sorted(there - here)] + [
        f"only for this machine: {name}" for name in sorted(here - there)
    ]

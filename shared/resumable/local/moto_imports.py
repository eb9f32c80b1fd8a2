"""moto packages the embedded AWS imports without their ``__init__``: moto 5.2.5's Step Functions
interpreter imports ``moto.batch.utils`` for one enum, and SSM's backend imports ``ec2_backends`` for
Run Command's targets, and each package's ``__init__`` imports its whole backend: ``moto.batch`` imports
``moto.ec2``, whose models read EC2's instance types, AMIs and zones (1.3 to 2 s of the CPU of every
process that makes a state machine or a parameter: each test worker, each make run, make validate).

Each package is made without running its ``__init__``: its modules import as before, and the names the
``__init__`` gives are imported from its models at their first use. Nothing here changes what moto
answers; moto's version is pinned by the constraints, and a test holds each ``__init__`` to the one
name it gives."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
from collections.abc import Iterator, Mapping
from typing import Any

PACKAGES = {"moto.batch": "batch_backends", "moto.ec2": "ec2_backends"}
"""Each package, and the one name its ``__init__`` imports from its ``models``."""


class _Later(Mapping[Any, Any]):
    """A mapping of a module not imported yet (a BackendDict), imported at its first use."""

    def __init__(self, module: str, name: str) -> None:
        self._module, self._name = module, name

    def _real(self) -> Any:
        return getattr(importlib.import_module(self._module), self._name)

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):  # (copy, pickle and the like ask for these of a half-made object)
            raise AttributeError(attribute)
        return getattr(self._real(), attribute)

    def __getitem__(self, key: Any) -> Any:
        return self._real()[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._real())

    def __len__(self) -> int:
        return len(self._real())


def apply() -> None:
    """Each package of ``PACKAGES`` not imported yet, made without its ``__init__`` (once per process)."""
    for package_name in PACKAGES:
        if package_name in sys.modules:
            continue
        package = importlib.util.module_from_spec(importlib.util.find_spec(package_name))  # type: ignore[arg-type]
        package.__getattr__ = functools.partial(_from_models, package_name)  # type: ignore[method-assign]
        sys.modules[package_name] = package
        parent, _, child = package_name.rpartition(".")
        setattr(importlib.import_module(parent), child, package)  # (as an import sets it on its parent)
    # SSM's backend takes ec2_backends as it is imported (for Run Command's targets alone): it is given
    # them to import at their first use; moto's own lookups of a backend read the package's.
    if not {"moto.ssm.models", "moto.ec2.models"} & set(sys.modules):
        ec2 = sys.modules["moto.ec2"]
        ec2.ec2_backends = _Later("moto.ec2.models", "ec2_backends")  # type: ignore[attr-defined]
        try:
            importlib.import_module("moto.ssm.models")
        finally:
            del ec2.ec2_backends


def _from_models(package: str, name: str) -> Any:
    """What a package's ``__init__`` would have imported from its models."""
    if name != PACKAGES[package]:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{package}.models"), name)

"""Every metric the code writes is in the catalog (``resumable.metrics.METRICS``) that the dashboard and
docs/operations.md are checked against, with the dimension it is written with."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

from resumable.metrics import METRICS
from resumable.service.advancing.stall import Stall
from resumable.store.records import SETTLED

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "resumable"


def _written() -> dict[str, set[str]]:
    """Each metric name the package passes to ``count`` or ``seconds``, with the dimensions it names."""
    found: dict[str, set[str]] = {}
    for source in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("count", "seconds")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.setdefault(str(node.args[0].value), set()).update(k.arg for k in node.keywords if k.arg)
    return found


def test_every_metric_written_is_in_the_catalog_with_its_dimension() -> None:
    written = _written()
    assert written, "the scan finds the package's metrics"
    for name, dimensions in written.items():
        assert name in METRICS, f"{name} is written but not in resumable.metrics.METRICS"
        declared = METRICS[name]
        assert dimensions == ({declared[0]} if declared else set()), name
    assert set(METRICS) == set(written), "the catalog names only metrics something writes"


def test_the_catalogs_dimension_values_are_the_domains_own() -> None:
    assert set(METRICS["TurnsSettled"][1]) == SETTLED  # type: ignore[index]
    assert set(METRICS["SweeperFinds"][1]) == set(get_args(Stall))  # type: ignore[index]


def test_docs_say_what_each_metric_counts() -> None:
    operations = (PACKAGE.parents[1] / "docs" / "operations.md").read_text()
    for name, dimension in METRICS.items():
        assert f"`{name}`" in operations, name
        for value in dimension[1] if dimension else ():
            assert f"`{value}`" in operations, f"{name} {value}"

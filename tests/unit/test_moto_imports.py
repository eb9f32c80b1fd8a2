"""What the embedded AWS imports of moto only when used (resumable.local.moto_imports) rests on what each
package's ``__init__`` gives: exactly the one name it imports from its models. A moto whose ``__init__``
gives more (or other) names fails here, not in a run."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from resumable.local.moto_imports import PACKAGES


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_each_package_made_without_its_init_gave_only_the_name_it_is_given(package: str) -> None:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    statements = [s for s in tree.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    assert len(statements) == 1 and isinstance(statements[0], ast.ImportFrom), ast.dump(tree)
    imported = statements[0]
    assert (imported.level, imported.module) == (1, "models")
    assert [alias.name for alias in imported.names] == [PACKAGES[package]]

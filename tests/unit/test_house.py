"""The house stays one a newcomer can read: no module over 400 lines outside tests, no import circle
outside runtime/ (whose agent and agent-as-tool need each other), and tests named after what they pin,
not after the issue that asked for them."""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Where the code that is not a test lives, as (folder, the module name its files import it by).
CODE = [
    (ROOT / "shared" / "resumable", "resumable"),
    (ROOT / "bench", "bench"),
    (ROOT / "tools", "tools"),
    (ROOT / "layers", "layers"),
    (ROOT / "functions", "functions"),
]
MAX_LINES = 400
# The one folder whose modules may import each other in a circle.
CIRCLES_ALLOWED_IN = "resumable.runtime"


def _ours(folder: Path) -> list[Path]:
    """The Python files of ``folder`` that are the project's: what git tracks or would (not what it
    ignores, such as a layer's build with its third-party packages)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.py"],
        cwd=folder,
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:  # not a git checkout (an unpacked archive): every file
        return sorted(folder.rglob("*.py"))
    return sorted(folder / name for name in listed.stdout.decode().split("\0") if name and (folder / name).exists())


def _modules() -> dict[str, Path]:
    """Every module of the code by its dotted name (a package by its own name)."""
    found = {}
    for folder, name in CODE:
        for path in _ours(folder):
            parts = [name, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imported(module: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The modules of the code that ``module`` imports, at its top or inside a function."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # ``from package import module`` imports that module; ``from module import name``, the module.
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for name in names:
            found = name
            while found and found not in known:
                found = found.rpartition(".")[0]
            if found and found != module:
                yield found
            # Importing ``a.b.c`` runs ``a`` and ``a.b`` first: those of them ``module`` is not inside.
            parent = found.rpartition(".")[0]
            while parent:
                if parent in known and not f"{module}.".startswith(f"{parent}."):
                    yield parent
                parent = parent.rpartition(".")[0]


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_outside_tests_is_over_400_lines() -> None:
    too_long = {
        str(path.relative_to(ROOT)): lines
        for path in _modules().values()
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert too_long == {}, f"split these by concept (one module per concept, at most {MAX_LINES} lines): {too_long}"


def test_no_import_circle_outside_runtime() -> None:
    known = _modules()
    graph = {module: set(_imported(module, path, known)) for module, path in known.items()}
    circles = [c for c in _circles(graph) if not all(m.startswith(CIRCLES_ALLOWED_IN + ".") for m in c)]
    assert circles == [], f"modules that import each other (move what they share into a module both import): {circles}"


def test_the_circle_finder_finds_a_circle_and_only_that() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [["a", "b", "c"]]


def test_a_circle_through_a_package_that_runs_first_is_found(tmp_path: Path) -> None:
    """``pkg_b.thing`` imports ``pkg_a.core``, which runs ``pkg_a`` (its ``__init__``) first, which
    imports ``pkg_b.thing``: a circle no line of the code spells out."""
    for name, text in {
        "top/__init__.py": "",
        "top/pkg_a/__init__.py": "from top.pkg_b.thing import B\n",
        "top/pkg_a/core.py": "A = 1\n",
        "top/pkg_b/__init__.py": "",
        "top/pkg_b/thing.py": "from top.pkg_a.core import A\nB = A\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    known = {
        ".".join(p.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__"): p
        for p in tmp_path.rglob("*.py")
    }
    graph = {module: set(_imported(module, path, known)) for module, path in known.items()}
    assert _circles(graph) == [["top.pkg_a", "top.pkg_b.thing"]]


def test_no_test_is_named_after_an_issue() -> None:
    numbered = re.compile(r"\bissue\s*#?\d+", re.IGNORECASE)
    named = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if any(numbered.search(doc or "") for doc in _docstrings(path))
    ]
    assert named == [], f"name the behaviour a test pins, not the issue that asked for it: {named}"


def _docstrings(path: Path) -> Iterator[str | None]:
    tree = ast.parse(path.read_text())
    yield ast.get_docstring(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield ast.get_docstring(node)

"""The rules that keep the code easy to change, checked on the import graph of core/ and dashboard/.

core never imports the UI; no two modules import each other (directly or round a longer loop); a view
never imports another view (shared page helpers live in dashboard/page.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

UI = ("streamlit", "plotly", "pandas", "dashboard")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Absolute module names ``path`` imports (``from a.b import c`` counts as a.b and a.b.c)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (packages' __init__ left out: they only re-export)."""
    files = {module_name(p): p for top in ("core", "dashboard") for p in (ROOT / top).rglob("*.py")}
    return {name: {m for m in imports(path) if m in files and m != name} for name, path in files.items()}


def test_core_imports_no_ui():
    for path in (ROOT / "core").rglob("*.py"):
        bad = {m for m in imports(path) if m.split(".")[0] in UI}
        assert not bad, f"{path}: {bad}"


def test_no_import_cycles():
    edges = graph()
    packages = {name for name in edges if (ROOT / name.replace(".", "/") / "__init__.py").exists()}

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in edges.get(todo.pop(), set()) - packages:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    cycles = [name for name in edges if name not in packages and name in reach(name)]
    assert not cycles, f"modules on an import cycle: {cycles}"


def test_views_do_not_import_views():
    for path in (ROOT / "dashboard" / "views").glob("*.py"):
        if path.name == "__init__.py":
            continue
        views = {m for m in imports(path) if m.startswith("dashboard.views.")}
        assert not views, f"{path.name} imports {views}: shared helpers belong in dashboard/page.py"

"""The rules that keep the code easy to change, checked on the import graph of core/, dashboard/ and bench/.

core never imports the UI; no two modules import each other (directly or round a longer loop); a view
never imports another view (shared page helpers live in dashboard/page.py); the app never imports the
benchmarks that measure it (bench/ reaches into core/ and dashboard/, never the other way); no module of the app
imports another's private (``_``) name: a piece two modules share is public, named for what it does.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

UI = ("streamlit", "plotly", "pandas", "dashboard")
TOPS = ("core", "dashboard", "bench")
"""The packages whose import graph is checked."""


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
    """Module -> the project modules it imports, imports inside functions included."""
    files = {module_name(p): p for top in TOPS for p in (ROOT / top).rglob("*.py")}
    return {name: {m for m in imports(path) if m in files and m != name} for name, path in files.items()}


def on_cycles(edges: dict[str, set[str]], packages: set[str]) -> list[str]:
    """The modules that reach themselves through ``edges`` (packages' __init__ left out: they only re-export)."""

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in edges.get(todo.pop(), set()) - packages:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    return sorted(name for name in edges if name not in packages and name in reach(name))


def test_core_imports_no_ui():
    for path in (ROOT / "core").rglob("*.py"):
        bad = {m for m in imports(path) if m.split(".")[0] in UI}
        assert not bad, f"{path}: {bad}"


def test_the_graph_covers_bench_and_its_imports_inside_functions():
    edges = graph()
    assert {"bench.load", "bench.classroom", "bench.memory", "core.pipeline", "dashboard.app"} <= edges.keys()
    assert "bench.classroom" in edges["bench.load"]  # bench.load --classroom runs it
    assert "core.pretrained" in edges["bench.expected"]  # imported inside a function: still an edge


def test_the_cycle_check_finds_a_cycle():
    """Guard: bench.load and bench.classroom once imported each other (inside functions); the check must see that."""
    edges = {"bench.load": {"bench.classroom", "core"}, "bench.classroom": {"bench.load"}, "core": set()}
    assert on_cycles(edges, packages={"core"}) == ["bench.classroom", "bench.load"]
    longer = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert on_cycles(longer, packages=set()) == ["a", "b", "c"]
    assert on_cycles({"a": {"b"}, "b": set()}, packages=set()) == []


def test_no_import_cycles():
    edges = graph()
    packages = {name for name in edges if (ROOT / name.replace(".", "/") / "__init__.py").exists()}
    cycles = on_cycles(edges, packages)
    assert not cycles, f"modules on an import cycle: {cycles}"


def test_the_app_never_imports_the_benchmarks():
    for top in ("core", "dashboard"):
        for path in (ROOT / top).rglob("*.py"):
            bench = {m for m in imports(path) if m.split(".")[0] == "bench"}
            assert not bench, f"{path}: {bench}"


def test_views_do_not_import_views():
    for path in (ROOT / "dashboard" / "views").glob("*.py"):
        if path.name == "__init__.py":
            continue
        views = {m for m in imports(path) if m.startswith("dashboard.views.")}
        assert not views, f"{path.name} imports {views}: shared helpers belong in dashboard/page.py"


def private_imports(path: Path) -> list[str]:
    """``module.name`` for each private name ``path`` imports from a project module (``from m import _x``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.split(".")[0] in TOPS:
            found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_") and a.name[:2] != "__"]
    return found


def test_the_private_import_check_finds_one(tmp_path):
    """Guard: quiz_mechanics once took ``_label`` and ``_order`` from quiz, welcome ``_start_room`` from room_page."""
    source = tmp_path / "m.py"
    source.write_text("from dashboard.classroom.quiz import Question, _label\nfrom numpy import _x\nfrom . import _y\n")
    assert private_imports(source) == ["dashboard.classroom.quiz._label"]


def test_the_app_imports_no_private_name_of_another_module():
    for top in ("core", "dashboard"):
        for path in (ROOT / top).rglob("*.py"):
            assert not private_imports(path), f"{path}: {private_imports(path)}"


def test_every_browser_test_file_is_marked_e2e():
    """CI's light pass leaves out ``-m e2e``: a browser file without the mark ran there too (three did, and one
    flaked there), outside the pass meant for browsers."""
    unmarked = [
        path.name
        for path in sorted((Path(__file__).parent / "e2e").glob("test_*.py"))
        if not re.search(r"^pytestmark = .*pytest\.mark\.e2e", path.read_text(), flags=re.MULTILINE)
    ]
    assert not unmarked, unmarked


MAX_FUNCTION_LINES = 60
"""The most lines a function of core/ or dashboard/ may take, from its ``def`` to its last line, docstring included."""


def function_lengths(root: Path) -> dict[str, int]:
    """``file:name`` -> lines from ``def`` to the last line (``ast`` lineno..end_lineno) of every function below
    ``root``'s core/ and dashboard/, methods and nested functions too (named ``Class.method``, ``outer.inner``)."""
    lengths = {}

    def visit(node: ast.AST, path: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = f"{prefix}{getattr(child, 'name', '')}"
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lengths[f"{path}:{name}"] = child.end_lineno - child.lineno + 1
            is_scope = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            visit(child, path, f"{name}." if is_scope else prefix)

    for top in ("core", "dashboard"):
        for file in sorted((root / top).rglob("*.py")):
            visit(ast.parse(file.read_text()), file.relative_to(root).as_posix(), "")
    return lengths


def test_the_length_check_counts_every_function_from_def_to_its_last_line(tmp_path):
    """Guard: methods, nested and async functions count; decorators do not; the docstring and a last blank-free
    line do."""
    (tmp_path / "core").mkdir()
    (tmp_path / "dashboard" / "views").mkdir(parents=True)
    (tmp_path / "core" / "a.py").write_text(
        'def one():\n    """Doc."""\n    return 1\n\n\nclass C:\n    @staticmethod\n    def m():\n        pass\n'
    )
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "dashboard" / "views" / "b.py").write_text(
        f"async def long():\n{body}\n\n    def inner():\n        return 2\n\n    return inner\n"
    )
    assert function_lengths(tmp_path) == {
        "core/a.py:one": 3,
        "core/a.py:C.m": 2,
        "dashboard/views/b.py:long": MAX_FUNCTION_LINES + 6,
        "dashboard/views/b.py:long.inner": 2,
    }


def test_no_function_is_longer_than_a_reader_can_hold():
    """Issue 33 part 5: no function of core/ or dashboard/ over ``MAX_FUNCTION_LINES``; split a long one into
    named steps."""
    long = {name: n for name, n in function_lengths(ROOT).items() if n > MAX_FUNCTION_LINES}
    offenders = [f"{name}:{n}" for name, n in sorted(long.items(), key=lambda item: -item[1])]
    assert not offenders, f"over {MAX_FUNCTION_LINES} lines: {offenders}"

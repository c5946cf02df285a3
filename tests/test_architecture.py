"""The rules that keep the code easy to change, checked on the import graph of core/, dashboard/ and bench/.

core never imports the UI; dashboard/'s folders import only the layers below them (``LAYERS``, issue 33 part 4); no
two modules import each other (directly or round a longer loop); a view never imports another view (shared page
helpers live in dashboard/page/common.py); the app never imports the
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
        assert not views, f"{path.name} imports {views}: shared helpers belong in dashboard/page/common.py"


# -- dashboard/'s folders, as layers (issue 33 part 4) ---------------------------------------------------------------
LAYERS = {
    "serve": set(),  # the server under the page: Streamlit's internals, compressed statics, clients, memory bounds
    "figures": set(),  # pure figure builders: core and plotly only
    "state": {"serve"},  # the address, the settings read from it, link notes, the page's role (followed)
    "compute": {"serve", "state"},  # the model source, cached runs, caches' bounds, training jobs, MiniLM's files
    "page": {"serve", "state", "compute", "figures"},  # what every view shares, and the page around the views
    "views": {"serve", "state", "compute", "figures", "page"},  # one module per view, never each other
    "classroom": {"serve", "state", "compute", "figures", "page", "views"},  # rooms, following, quiz, tours
    "app": {"serve", "state", "compute", "figures", "page", "views", "classroom"},  # the entry file: routes
}
"""Folder -> the folders of dashboard/ its modules may import, besides its own (and core/, which every one may).
Read bottom to top, each row only reaches the rows above it."""
LAYER_EXCEPTIONS = {
    ("state.url_state", "views"): "SPECS declares every URL key with the limits and default its owner declares: a "
    "view's own (MAX_STEP, DEFAULT_SHIFT, the view list), read from the view rather than copied into state/",
    ("state.url_state", "page"): "the same for the probes' keys: KNOCKOUT_CHOICES, TEMPERATURES (page/probes.py)",
    ("state.url_state", "classroom"): "the same for a tour's keys and steps, and the teacher key's claim parameter",
    ("state.address", "classroom"): "the teacher key's claim parameter, which the address writes in place",
    ("state.settings", "page"): "WEIGHT_PROMISES, the sidebar's help for each weights choice, kept beside the notes "
    "that check each promise on the drawn run (page/weight_notes.py)",
    ("figures.plain", "compute"): "the plain figures are kept in a bounded_cache, the one cache type (no Streamlit)",
    ("page.welcome", "classroom"): "the first screen offers a lesson's tour and a room's code box (room_page.code_box)",
    ("views.heads", "classroom"): "quiz_panel.ask: the room's question drawn beside the maps it is about",
    ("views.model", "classroom"): "quiz_panel.ask: the room's question drawn beside the maps it is about",
}
"""(module below dashboard/, folder) -> why that module imports a folder its layer may not: edges of the real
graph that break the layering, each kept for the reason given."""


def folder(module: str) -> str | None:
    """The layer of a dashboard module: its folder, ``app`` for the entry file; None outside dashboard/."""
    parts = module.split(".")
    if parts[0] != "dashboard" or len(parts) < 2:
        return None
    return parts[1]


def layer_breaks(edges: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """(module, folder) -> the imported modules of that folder, for each import a module's layer may not make."""
    found: dict[tuple[str, str], list[str]] = {}
    for name, imported in edges.items():
        mine = folder(name)
        if mine is None:
            continue
        for other in sorted(imported):
            theirs = folder(other)
            if theirs is not None and theirs != mine and theirs not in LAYERS.get(mine, set()):
                found.setdefault((name.removeprefix("dashboard."), theirs), []).append(other)
    return found


def test_the_layers_are_an_order():
    """Each layer reaches only layers listed before it: no two folders may import each other, round any loop."""
    order = list(LAYERS)
    for layer, below in LAYERS.items():
        assert all(order.index(b) < order.index(layer) for b in below), layer


def test_every_module_of_dashboard_is_in_a_layer():
    """A new folder (or a module put back at dashboard/'s root) needs its row in ``LAYERS``."""
    homeless = sorted({name for name in graph() if folder(name) not in (None, *LAYERS)})
    assert homeless == [], f"modules in no layer of LAYERS: {homeless}"


def test_the_layer_check_finds_an_import_upwards():
    """Guard: a state module importing a view, and a figure builder importing Streamlit's internals, break it."""
    edges = {
        "dashboard.state.settings": {"dashboard.views.heads", "dashboard.serve.streamlit_runtime", "core"},
        "dashboard.figures.grid": {"dashboard.serve.streamlit_runtime", "dashboard.figures.labels"},
        "dashboard.app": {"dashboard.classroom.room_page", "dashboard.views"},
        "bench.load": {"dashboard.app"},
    }
    assert layer_breaks(edges) == {
        ("state.settings", "views"): ["dashboard.views.heads"],
        ("figures.grid", "serve"): ["dashboard.serve.streamlit_runtime"],
    }


def test_dashboards_folders_import_only_the_layers_below():
    """Issue 33 part 4: the folders show the architecture, and the import graph keeps to it; an edge that breaks
    the layering is listed in ``LAYER_EXCEPTIONS`` with its reason, and an exception nothing uses any more goes."""
    found = layer_breaks(graph())
    unlisted = {edge: modules for edge, modules in found.items() if edge not in LAYER_EXCEPTIONS}
    assert not unlisted, f"imports that break the layering (LAYERS): {unlisted}"
    stale = sorted(set(LAYER_EXCEPTIONS) - set(found))
    assert not stale, f"exceptions no import needs any more: {stale}"


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


# -- Streamlit's private names live in serve/streamlit_runtime.py alone (issue 33 part 3) -----------------------
STREAMLIT_RUNTIME = ROOT / "dashboard" / "serve" / "streamlit_runtime.py"
PUBLIC_STREAMLIT = {
    "streamlit": None,
    "streamlit.components.v1": None,
    "streamlit.column_config": None,
    "streamlit.testing.v1": None,
    "streamlit.errors": None,  # the exceptions Streamlit's public calls raise: catching one needs its class
    "streamlit.delta_generator": {"DeltaGenerator"},  # the type of st.container() and every other container
}
"""Streamlit's modules the app may import from (None: any public name; else only these names). Every other module
of the ``streamlit`` package is its internals (``runtime``, ``proto``, ``elements``, ``web``, ``file_util``...)."""
NAMEDTUPLE_API = {"_asdict", "_replace", "_fields", "_make", "_field_defaults"}
"""Underscore names that are a namedtuple's public API, not a library's privates."""


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def project_private_names() -> set[str]:
    """Every private name the project's own code defines: functions, classes, variables and ``self``/``cls``
    attributes, in core/, dashboard/ and bench/. An ``x._name`` with any other name reaches into a library."""
    names = set()
    for top in TOPS:
        for path in (ROOT / top).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(node.name)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
                elif isinstance(node, ast.arg):
                    names.add(node.arg)
                elif (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in ("self", "cls")
                ):
                    names.add(node.attr)
    return {n for n in names if _private(n)}


def _streamlit_submodule(name: str) -> bool:
    """``streamlit.<name>`` is a module (``from streamlit import file_util``), not a name of ``st``'s API."""
    import importlib.util

    try:
        return importlib.util.find_spec(f"streamlit.{name}") is not None
    except (ImportError, ValueError):
        return False


def _streamlit_internal(module: str) -> bool:
    return module.startswith("streamlit.") and module not in PUBLIC_STREAMLIT


def _internal_names(node: ast.ImportFrom) -> list[ast.alias]:
    """The names ``from streamlit... import`` takes from Streamlit's internals."""
    module = node.module or ""
    if module != "streamlit" and not module.startswith("streamlit."):
        return []
    found = []
    for alias in node.names:
        submodule = module == "streamlit" and _streamlit_submodule(alias.name)
        full = f"{module}.{alias.name}" if submodule else module
        allowed = PUBLIC_STREAMLIT.get(full, set())
        if full not in PUBLIC_STREAMLIT or _private(alias.name) or (allowed and alias.name not in allowed):
            found.append(alias)
    return found


def _foreign_private(node: ast.Attribute, ours: set[str]) -> bool:
    """``x._name`` on anything but ``self``/``cls``, for a private name the project does not define."""
    on_self = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
    return _private(node.attr) and not on_self and node.attr not in ours and node.attr not in NAMEDTUPLE_API


def _private_by_name(node: ast.AST, constants: dict[str, str], ours: set[str]) -> str | None:
    """The private name ``getattr(x, "_name")`` (or setattr, hasattr, delattr; the name as text or a module
    constant) reads, when the project does not define it."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 2):
        return None
    if node.func.id not in ("getattr", "setattr", "hasattr", "delattr"):
        return None
    arg = node.args[1]
    name = arg.value if isinstance(arg, ast.Constant) else constants.get(getattr(arg, "id", None))
    return name if isinstance(name, str) and _private(name) and name not in ours else None


def private_streamlit_uses(path: Path, ours: set[str]) -> list[str]:
    """``line: what`` for each use of a private Streamlit name in ``path``: an import of Streamlit's internals (a
    module outside ``PUBLIC_STREAMLIT``, or an ``_`` name from any), an ``x._name`` (or ``getattr(x, "_name")``)
    whose name the project does not define (``ours``): a library's private, and the project's only library with
    private names in reach of the page is Streamlit."""
    tree = ast.parse(path.read_text())
    constants = {  # module-level NAME = "_text": getattr(x, NAME) reads "_text"
        t.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    found = []
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    for node in ast.walk(tree):
        where = f"{shown}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            found += [f"{where}: import {a.name}" for a in node.names if _streamlit_internal(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [f"{where}: from {node.module} import {a.name}" for a in _internal_names(node)]
        elif isinstance(node, ast.Attribute) and _foreign_private(node, ours):
            found.append(f"{where}: .{node.attr}")
        elif (name := _private_by_name(node, constants, ours)) is not None:
            found.append(f"{where}: {node.func.id}(..., {name!r})")
    return found


def test_the_private_streamlit_check_finds_each_kind(tmp_path):
    """Guard: what dashboard/ held before issue 33 part 3 (address.py, plotly_chart_proto.py, push.py, clients.py,
    follower_page.py, page.py, room_page.py, precompressed.py), one of each kind."""
    source = tmp_path / "m.py"
    source.write_text(
        "import streamlit as st\n"
        "from streamlit.runtime.scriptrunner import get_script_run_ctx\n"
        "from streamlit import file_util, config\n"
        "from streamlit.elements.plotly_chart import _plotly_data\n"
        "from streamlit.delta_generator import DeltaGenerator, get_dg_singleton_instance\n"
        "from streamlit.errors import StreamlitAPIException\n"
        "import streamlit.web.server\n"
        "NAME = '_session_mgr'\n"
        "def f(dg, session, rule, _mine):\n"
        "    self._lock, rule._asdict(), _mine._ours\n"
        "    dg._enqueue('x')\n"
        "    getattr(st, NAME, None), setattr(session, '_held', 1), st.session_state._state\n"
    )
    found = [line.split(": ", 1)[1] for line in private_streamlit_uses(source, {"_mine", "_ours"})]
    assert sorted(found) == sorted(
        [
            "from streamlit.runtime.scriptrunner import get_script_run_ctx",
            "from streamlit import file_util",
            "from streamlit import config",
            "from streamlit.elements.plotly_chart import _plotly_data",
            "from streamlit.delta_generator import get_dg_singleton_instance",
            "import streamlit.web.server",
            "._enqueue",
            "getattr(..., '_session_mgr')",
            "setattr(..., '_held')",
            "._state",
        ]
    )


def test_only_streamlit_runtime_touches_streamlits_private_names():
    """Every private Streamlit name the app relies on is behind one module, whose entry points are contract-tested
    (tests/dashboard/test_streamlit_runtime.py): an upgrade of Streamlit is reworked there, not across the page."""
    ours = project_private_names()
    found = [
        use
        for path in sorted((ROOT / "dashboard").rglob("*.py"))
        if path != STREAMLIT_RUNTIME
        for use in private_streamlit_uses(path, ours)
    ]
    assert not found, "Streamlit's internals outside dashboard/serve/streamlit_runtime.py:\n" + "\n".join(found)


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


RECEIVERS = ("dashboard/views", "dashboard/figures", "dashboard/compute", "dashboard/classroom/tours.py")
"""What draws for the page without deciding which controls exist (issue 33 part 2): the views, their figures and
computations, and the tour. Each receives the run's ``Controls``; none asks whose page it is."""
ASKING = {"following", "teacher", "role"}
"""Attributes that say whose page it is (``RoomState``'s)."""
ROLE_NAMES = {"Role", "RoomState"}


def role_questions(path: Path) -> list[str]:
    """Where ``path`` asks whose page it is: an attribute in ``ASKING``, the ``Role`` or ``RoomState`` names, or a
    ``Controls`` of its own making (a view takes the page's)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in ASKING:
            found.append(f"{path.name}:{node.lineno} .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in ROLE_NAMES:
            found.append(f"{path.name}:{node.lineno} {node.id}")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Controls":
            found.append(f"{path.name}:{node.lineno} Controls(")
    return found


def test_the_role_check_finds_each_way_of_asking(tmp_path):
    """Guard: ``role_questions`` catches each way a view could ask whose page it is."""
    view = tmp_path / "v.py"
    view.write_text(
        "def render(settings, controls, room):\n"
        "    if room.following or room.teacher or room.role is Role.FOLLOWER:\n"
        "        return Controls({})\n"
        "    return controls.choice('k', 1, lambda: 2)\n"
    )
    assert sorted(role_questions(view)) == [
        "v.py:2 .following",
        "v.py:2 .role",
        "v.py:2 .teacher",
        "v.py:2 Role",
        "v.py:3 Controls(",
    ]


def test_views_and_the_tour_receive_their_controls_and_never_ask_whose_page_it_is():
    """Issue 33 part 2: the page decides from its role which controls exist; a view, its figures and computations
    and the tour draw with the ``Controls`` they are handed."""
    files = [p for top in RECEIVERS for p in ([ROOT / top] if top.endswith(".py") else (ROOT / top).rglob("*.py"))]
    assert len(files) > 40, "the receivers' files were not found"
    questions = [q for p in files for q in role_questions(p)]
    assert not questions, questions


def test_the_role_is_read_once_by_the_page():
    """Issue 33 part 2: ``RoomState.role`` is read in one place, the top of the page's run (``dashboard/app.py``)."""
    reads = [
        f"{p.relative_to(ROOT)}:{node.lineno}"
        for p in (ROOT / "dashboard").rglob("*.py")
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.Attribute) and node.attr == "role" and isinstance(node.ctx, ast.Load)
    ]
    assert len(reads) == 1 and reads[0].startswith("dashboard/app.py:"), reads


def test_the_role_is_a_value_not_a_session_lookup():
    """``dashboard/state/followed.py`` holds the role and the controls as plain values: it reads no session state
    (it used to keep the room's values in ``st.session_state`` for any module to ask)."""
    assert "streamlit" not in {m.split(".")[0] for m in imports(ROOT / "dashboard" / "state" / "followed.py")}


SESSION_WRITERS = {"dashboard/state/session.py", "dashboard/state/url_state.py"}
"""Issue 33 part 2: the modules that write Streamlit's session state. ``session`` declares every key the page keeps
besides its address and writes them (``keep``, ``forget``, ``keep_first``), and a button's change to the page's
values (``set_values``); ``url_state`` keeps the address's own bookkeeping as it reads each run's address."""
WRITING_METHODS = {"pop", "setdefault", "update", "clear", "__setitem__", "__delitem__", "popitem"}


def _is_session_state(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "session_state") or (
        isinstance(node, ast.Name) and node.id == "session_state"
    )


def session_writes(path: Path) -> list[int]:
    """Lines of ``path`` that write session state: an item or attribute set or deleted, or a writing method."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for part in ast.walk(target):  # a tuple's items too
                if isinstance(part, (ast.Subscript, ast.Attribute)) and _is_session_state(part.value):
                    lines.append(node.lineno)
        writing = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        if writing and node.func.attr in WRITING_METHODS and _is_session_state(node.func.value):
            lines.append(node.lineno)
    return sorted(set(lines))


def test_the_session_write_check_finds_each_kind(tmp_path):
    """Guard: every way of writing session state is found; reading it is not."""
    page = tmp_path / "p.py"
    page.write_text(
        "import streamlit as st\n"
        "st.session_state['a'] = 1\n"
        "x, st.session_state['b'] = 1, 2\n"
        "st.session_state.c = 3\n"
        "del st.session_state['a']\n"
        "st.session_state.pop('b', None)\n"
        "st.session_state.setdefault('d', 4)\n"
        "st.session_state.update(e=5)\n"
        "st.session_state['n'] += 1\n"
        "y = st.session_state.get('a'), st.session_state['b'], 'c' in st.session_state\n"
    )
    assert session_writes(page) == [2, 3, 4, 5, 6, 7, 8, 9]


def test_session_state_is_written_in_at_most_three_modules():
    """Issue 33 part 2: the page's state has one home. Any other module keeps a value through ``session`` (whose keys
    are declared there) or changes the page's values with ``session.set_values``."""
    writers = {p.relative_to(ROOT).as_posix() for p in (ROOT / "dashboard").rglob("*.py") if session_writes(p)}
    assert writers == SESSION_WRITERS and len(writers) <= 3, sorted(writers)


def _calls(name: str) -> list[tuple[str, ast.Call]]:
    """Every call of ``session``'s function ``name`` in dashboard/ (imported by name), as (file:line, the call)."""
    found = []
    for path in (ROOT / "dashboard").rglob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {
            a.asname or a.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "dashboard.state.session"
            for a in node.names
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == name and name in imported:
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", node))
    return found


SPREAD_VALUES = {
    "dashboard/classroom/room_page.py": "the room's settings for FOLLOWED_KEYS (checked below)",
    "dashboard/state/settings.py": "a task's recommended settings (checked below)",
}
"""Modules whose ``set_values`` takes a mapping (``**values``) rather than named keys."""


def test_a_button_changes_only_values_the_address_carries():
    """Every ``set_values`` call names keys of ``url_state.SPEC``; the two that pass a mapping pass keys of it too."""
    from dashboard.classroom.room_page import FOLLOWED_KEYS
    from dashboard.state.settings import recommended_state
    from dashboard.state.url_state import SPEC

    calls = _calls("set_values")
    assert len(calls) > 10, "the set_values calls were not found"
    for where, call in calls:
        if where.startswith("dashboard/state/session.py"):
            continue
        named = {k.arg for k in call.keywords if k.arg is not None}
        assert named <= set(SPEC), (where, named - set(SPEC))
        if any(k.arg is None for k in call.keywords):
            assert where.split(":")[0] in SPREAD_VALUES, where
    assert set(FOLLOWED_KEYS) <= set(SPEC)
    from core.training import TASK_NAMES

    for task in TASK_NAMES:
        assert set(recommended_state(task)) <= set(SPEC), task


def test_every_key_kept_is_one_session_declares():
    """``keep``, ``forget`` and ``keep_first`` name a key by one of ``session``'s constants (a pick's key is made from
    ``QUIZ_PICK``: ``session`` checks it when it is written)."""
    from dashboard.state import session

    constants = {name for name in vars(session) if name.isupper() and isinstance(getattr(session, name), str)}
    for name in ("keep", "forget", "keep_first"):
        for where, call in _calls(name):
            if where.startswith("dashboard/state/session.py"):
                continue
            key = call.args[0]
            named = key.id if isinstance(key, ast.Name) else key.attr if isinstance(key, ast.Attribute) else None
            assert named in constants or where.startswith("dashboard/classroom/quiz_panel.py"), (
                where,
                ast.unparse(key),
            )

"""The README's "a shape comment on every line" holds for the files it names: in FILES every assignment and
return that makes or changes an array carries a comment (picoGPT's habit: the shape before -> after).

A statement is let off only when its value cannot be an array: a constant, a string, a name or attribute
passed on unchanged, a comparison, a dict (of arrays named where they are made), ``len``/``int``/``float``/
``max`` of something, a ``.shape``, ``a // b``, or a record built from arrays already made (a capitalised
constructor such as ``Run(...)``). Statements that change an array in place without assigning it
(``np.put_along_axis(...)``) are not checked."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = ("core/pipeline.py", "core/rope.py", "core/layers.py", "core/training/model.py", "core/training/backward.py")
SCALAR_CALLS = {"len", "int", "float", "max"}


def _not_an_array(node: ast.expr) -> bool:
    """True when ``node``'s value cannot be a new or changed array (see the module docstring)."""
    if isinstance(node, (ast.Constant, ast.JoinedStr, ast.Name, ast.Attribute, ast.Compare, ast.BoolOp, ast.Dict)):
        return True
    if isinstance(node, ast.DictComp):  # a dict of arrays, each named by its own line
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_not_an_array(e) for e in node.elts)
    if isinstance(node, ast.IfExp):
        return _not_an_array(node.body) and _not_an_array(node.orelse)
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
    if isinstance(node, ast.UnaryOp):
        return _scalar_call(node.operand)
    if isinstance(node, ast.BinOp):  # a // b, or arithmetic on a float(...): any other operator may make an array
        return isinstance(node.op, ast.FloorDiv) or _scalar_call(node.left)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in SCALAR_CALLS or node.func.id[:1].isupper()
    return False


def _scalar_call(node: ast.expr) -> bool:
    """``len(...)``, ``int(...)``, ``float(...)`` or ``max(...)``, or its negation."""
    if isinstance(node, ast.UnaryOp):
        return _scalar_call(node.operand)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SCALAR_CALLS


def uncommented_array_lines(source: str) -> list[str]:
    """The assignments and returns of ``source`` that make or change an array and carry no comment."""
    commented = {
        t.start[0] for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT
    }
    missing = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)) and node.value is not None:
            if _not_an_array(node.value) or commented & set(range(node.lineno, node.end_lineno + 1)):
                continue
            missing.append(f"{node.lineno}: {ast.get_source_segment(source, node).splitlines()[0]}")
    return missing


@pytest.mark.parametrize("path", FILES)
def test_every_line_that_makes_an_array_has_a_shape_comment(path):
    assert uncommented_array_lines((ROOT / path).read_text()) == []


def test_the_check_finds_a_line_without_its_comment():
    source = (
        "def f(x, w):\n    n = len(x)\n    y = x @ w\n    k = -float(n) / 2\n    z = -y\n"
        "    u = np.tanh(y) if k else None\n    return Out(y, z, u)\n"
    )
    assert uncommented_array_lines(source) == ["3: y = x @ w", "5: z = -y", "6: u = np.tanh(y) if k else None"]

""" "The code behind this": every snippet a view shows is the source of a core function that ran for it.

Each view is run headless with a profiler that records every function of ``core/``
that is called, after the caches are cleared so nothing is skipped. Then every
code block in a "The code behind this" expander must be the exact source of one of
those functions, or lines taken in order from one (the steps view shows the one
or two lines that perform each step). A copy of core's code pasted into the page,
or a snippet left behind after core changes, fails here.
"""

from __future__ import annotations

import ast
import inspect
import sys
import threading
from pathlib import Path
from types import CodeType

import pytest
import streamlit as st

from core import head_contributions, scaled_dot_product_attention
from core.attention import attention_mask
from core.neuron import score_terms
from dashboard.compute import bounded_cache
from dashboard.page.common import CODE_LABEL, source_lines
from tests.conftest import ROOT
from tests.dashboard.conftest import figures, make_app, no_exception, open_all

CORE = str(ROOT / "core")

VIEWS = {
    # view: query parameters that reach every branch worth showing
    "heads": {},
    "steps": {"causal": "true"},
    "steps-rope": {"positional": "rope"},
    "shapes-batch": {"batch": "2"},
    "scaling-unscaled": {"scaled": "false"},
    "permutation-causal": {"causal": "true"},
    "permutation": {},
    "scaling": {},
    "positions": {},
    "cross": {},
    "summary": {},
    "model": {},
    "model-minilm": {"weights": "minilm"},
    "steps-minilm": {"weights": "minilm", "layer": "2"},
    "permutation-minilm": {"weights": "minilm"},
    "class": {},
    "contrast": {},
    "contrast-minilm": {"weights": "minilm"},
}


def run_recording_core(**query: str):
    """Run the app once with ``query``; return it and the code objects of every core function called."""
    called: set[CodeType] = set()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(CORE):
            called.add(frame.f_code)

    st.cache_data.clear()
    st.cache_resource.clear()
    bounded_cache.clear_all()
    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        at = open_all(make_app(**query).run(), CODE_LABEL)  # each draws its code only while open
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    no_exception(at)
    return at, called


def source_of(code: CodeType) -> list[str]:
    """The source lines of the function whose code object this is, as inspect reads them."""
    lines, _ = inspect.getsourcelines(code)
    return lines


def is_in_order_within(snippet: list[str], source: list[str]) -> bool:
    """True when every snippet line is a line of ``source`` (stripped), in the same order."""
    stripped = iter(line.strip() for line in source)
    return all(any(want.strip() == have for have in stripped) for want in snippet)


@pytest.mark.parametrize("name", VIEWS, ids=VIEWS)
def test_every_snippet_is_the_code_of_a_core_function_that_ran(name):
    view = name.split("-")[0]
    at, called = run_recording_core(view=view, **VIEWS[name])
    assert called, "the view ran no core function at all"
    sources = {code: "".join(source_of(code)) for code in called}
    expanders = [e for e in at.expander if e.label == CODE_LABEL]
    assert len(expanders) >= len(figures(at)), "every figure has its code expander"  # a map grid is one
    for expander in expanders:
        blocks = [c.value for c in expander.code]
        assert blocks, "an empty code expander"
        *calls, shown = blocks
        exact = [code for code, text in sources.items() if text.rstrip() == shown.rstrip()]
        if not exact:  # a step's lines: all from one function that ran, in order
            lines = shown.splitlines()
            assert any(is_in_order_within(lines, source_of(code)) for code in called), shown
        for call in calls:
            ast.parse(call)  # the call line is Python a student could paste


def test_a_changed_source_would_be_caught():
    """The check above is not vacuous: a line core does not contain is not found in any function that ran."""
    _, called = run_recording_core(view="steps")
    assert not any(is_in_order_within(["weights = softmax(scores / d_k)"], source_of(code)) for code in called)
    real = source_lines(scaled_dot_product_attention, "output = weights @ v").splitlines()
    assert any(is_in_order_within(real, source_of(code)) for code in called)


def test_steps_show_one_snippet_per_step_with_the_formula_lines():
    at, _ = run_recording_core(view="steps", causal="true")
    snippets = [e.code[-1].value for e in at.expander if e.label == CODE_LABEL]
    assert len(snippets) == 11  # 8 steps, the mask in three conventions, the heads' sum, why a score is high
    text = "\n".join(snippets)
    for line in (
        "e = np.exp(x - x_max)",
        "return q @ k_t * float(scale)",
        "scores = np.where(mask, scores, -np.inf)",
        "output = weights @ v",
        "concat = merge_heads(context)",
    ):
        assert line in text, line
    for function in (attention_mask, head_contributions, score_terms):  # the three figures drawn after their steps
        assert inspect.getsource(function).rstrip() in [s.rstrip() for s in snippets], function.__name__


def test_core_reads_like_the_lesson():
    """The formulas a student was taught are each on a line of their own in core/attention.py and multihead.py."""
    attention = Path(CORE, "attention.py").read_text()
    multihead = Path(CORE, "multihead.py").read_text()
    for line in (
        "x_max = np.max(x, axis=axis, keepdims=True)",
        "e = np.exp(x - x_max)",
        "return q @ k_t * float(scale)",
        "scores = np.where(mask, scores, -np.inf)",
        "output = weights @ v",
    ):
        assert line in attention, line
    for line in ("split_heads(linear(x, proj.w_q", "= scaled_dot_product_attention(", "concat = merge_heads(context)"):
        assert line in multihead, line
    for formula in ("weights @ v", "masked_softmax(", "attention_scores("):  # the formula once: attention.py's
        assert formula not in multihead, formula

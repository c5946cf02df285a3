"""The page never says what isn't so: no sentence tied to one setting appears under another.

Each view is run under a set of cases that covers every pair of values of the settings a sentence can
depend on (scaled, causal, positional, the toy weights), plus the pretrained model with and without the
mask and a one-head model. Every string the page shows is collected (markdown, captions, alerts,
headings, LaTeX, metric labels, the formula columns of tables, and the figures' titles and labels; code
blocks show code, not claims, and are left out). ``CLAIMS`` maps a pattern to the settings under which it
is true; adding a claim is one line. Each claim must also appear somewhere, so a pattern that no longer
matches anything (a reworded sentence) fails instead of silently checking nothing.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.views import VIEWS
from tests.conftest import require_minilm
from tests.dashboard.conftest import make_app, no_exception


@dataclass(frozen=True)
class Case:
    """The settings a sentence can depend on, as URL values."""

    scaled: bool = True
    causal: bool = False
    positional: str = "none"
    weights: str = "random"
    n_heads: int = 4
    layer: int = 1

    def query(self) -> dict[str, str]:
        query = dict(scaled=str(self.scaled).lower(), causal=str(self.causal).lower(), weights=self.weights)
        if self.weights == "minilm":
            return query | dict(layer=str(self.layer))
        return query | dict(positional=self.positional, n_heads=str(self.n_heads))

    @property
    def id(self) -> str:
        return "-".join(f"{k}={v}" for k, v in self.query().items())


LAYERS = (1, 3)
"""The pretrained layers the cases open (below): a page naming one must have it chosen."""
Rule = Callable[[Case], bool]
scaled: Rule = lambda c: c.scaled  # noqa: E731
unscaled: Rule = lambda c: not c.scaled  # noqa: E731
causal: Rule = lambda c: c.causal  # noqa: E731
no_mask: Rule = lambda c: not c.causal  # noqa: E731
minilm: Rule = lambda c: c.weights == "minilm"  # noqa: E731
never: Rule = lambda c: False  # noqa: E731

CLAIMS: dict[str, Rule] = {
    # scaling
    r"[Ss]cores are scaled by 1/√d_k": scaled,
    r"Q Kᵀ / √d_k": scaled,
    r"\\frac\{S\}\{\\sqrt\{d_k\}\}": scaled,
    r"^scaled scores$": scaled,
    r"÷√d_k = ÷": scaled,
    r"[Ss]caling is off": unscaled,
    r"^scores, not scaled$": unscaled,
    # the causal mask
    r"True where key j ≤ query i": causal,
    r"future keys hidden": causal,
    r"\\text\{for \} j > i": causal,
    r"^masked scores$": causal,
    r"Causal mask: (row i|the first query)": causal,
    r"The same mask, written three ways": causal,
    r"^lesson 1: 1 = keep$": causal,
    r"query i may attend to source positions 0\.\.i only": causal,
    r"^No mask|\\text\{no mask": no_mask,
    r"Not equivariant here": lambda c: c.causal or c.positional != "none" or c.weights == "minilm",
    # positions
    r"order is invisible": lambda c: c.positional == "none" and c.weights != "minilm",
    r"identical rows\s+and identical columns": lambda c: c.positional == "none" and not c.causal,
    r"^X \+ P$|position vector P|positional encoding P": lambda c: c.positional in ("sinusoidal", "learned"),
    r"RoPE adds nothing here|before RoPE|RoPE-rotated": lambda c: c.positional == "rope",
    r"Same map, reordered|Permutation equivariance": lambda c: c.positional == "none" and not c.causal,
    r"clock": lambda c: c.weights == "previous",
    # weights
    r"random here|These weights are random|Random W_Q|any pattern here is chance": lambda c: c.weights == "random",
    r"random weights of the same shape": lambda c: c.weights in ("minilm", "trained"),
    r"identity matrix here": lambda c: c.weights == "identity",
    r"built by hand here": lambda c: c.weights in ("identity", "previous"),
    r"MiniLM|pretrained|\[CLS\]|hidden state entering|b_O|\+ biases": minilm,
    # counts and layers
    r"(?<!layer )\b1 heads\b|\ball 1 heads|\bh = 1 heads": never,
    **{rf"\blayer {n}\b(?! heads)": (lambda c, n=n: c.layer == n) for n in LAYERS},  # a toy model's one layer is 1
}
"""A pattern (``re.search``) -> True for the settings under which the page may say it."""

TOY = ("random", "identity", "previous")
POSITIONS = ("none", "sinusoidal", "learned", "rope")


def pairwise_cases() -> list[Case]:
    """12 cases, one per (positional, weights), with scaled and causal alternating so that every pair of
    values of any two of the four settings appears in some case (checked below)."""
    cases = []
    for i, (positional, weights) in enumerate(itertools.product(POSITIONS, TOY)):
        cases.append(Case(scaled=i % 2 == 0, causal=(i // 2) % 2 == 0, positional=positional, weights=weights))
    return cases


CASES = [
    *pairwise_cases(),
    Case(n_heads=1),
    Case(weights="minilm", positional="learned", n_heads=12),
    Case(weights="minilm", positional="learned", n_heads=12, causal=True, layer=LAYERS[1]),
]
SHOWN_VIEWS = [v for v in VIEWS if v != "train"]  # the train view shows a task, not these settings
TABLE_COLUMNS = ("formula", "in words")
"""Table columns that state claims; the others hold numbers, tokens or the settings compared side by side."""


def figure_strings(spec: str) -> list[str]:
    """Titles, annotations, trace names and axis titles of one Plotly figure."""
    fig = json.loads(spec)
    layout = fig.get("layout", {})
    out = [a.get("text", "") for a in layout.get("annotations", [])]
    out += [t.get("name", "") for t in fig.get("data", [])]
    for key, value in layout.items():
        if key.startswith(("xaxis", "yaxis")) or key == "title":
            title = value.get("title") if isinstance(value, dict) else None
            out.append(title.get("text", "") if isinstance(title, dict) else (title or ""))
    return [s for s in out if s]


def page_strings(at: AppTest) -> list[str]:
    """Every string the page shows as text (code blocks left out)."""
    out = []
    for kind in ("markdown", "caption", "info", "warning", "success", "error", "subheader", "header", "title"):
        out += [e.value for e in getattr(at, kind)]
    out += [e.value for e in at.get("latex")]
    out += [e.value for e in at.get("text")]
    out += [m.label for m in at.metric]
    for frame in at.dataframe:
        table = frame.value
        out += [str(v) for col in TABLE_COLUMNS if col in table for v in table[col]]
    out += [s for chart in at.get("plotly_chart") for s in figure_strings(chart.proto.spec)]
    return out


@functools.cache
def strings_of(case: Case, view: str) -> tuple[str, ...]:
    at = make_app(view=view, **case.query()).run()
    no_exception(at)
    return tuple(page_strings(at))


def false_claims(case: Case, strings: tuple[str, ...]) -> list[tuple[str, str]]:
    return [
        (pattern, text)
        for text in strings
        for pattern, holds in CLAIMS.items()
        if not holds(case) and re.search(pattern, text, flags=re.MULTILINE)
    ]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_no_view_says_what_these_settings_make_untrue(case):
    if case.weights == "minilm":
        require_minilm()
    wrong = {view: false_claims(case, strings_of(case, view)) for view in SHOWN_VIEWS}
    assert not {v: w for v, w in wrong.items() if w}, wrong


def test_every_claim_is_seen_somewhere():
    """A pattern that matches nothing checks nothing: each must appear under some case where it holds
    (a ``never`` pattern cannot; ``test_a_false_claim_would_be_caught`` feeds it the text it was written for)."""
    require_minilm()
    seen = set()
    for case in CASES:
        for view in SHOWN_VIEWS:
            for text in strings_of(case, view):
                seen |= {p for p in CLAIMS if re.search(p, text, flags=re.MULTILINE)}
    unseen = [p for p, holds in CLAIMS.items() if p not in seen and holds is not never]  # never: see the next test
    assert not unseen, unseen


def test_the_cases_cover_every_pair_of_setting_values():
    toy = CASES[:12]
    values = dict(scaled=(True, False), causal=(True, False), positional=POSITIONS, weights=TOY)
    for a, b in itertools.combinations(values, 2):
        have = {(getattr(c, a), getattr(c, b)) for c in toy}
        assert have == set(itertools.product(values[a], values[b])), (a, b)


def test_a_false_claim_would_be_caught():
    """The check is not vacuous: the sentence the shapes view printed with scaling off before the fix fails."""
    unscaled_case = Case(scaled=False)
    assert false_claims(unscaled_case, ("Scores are scaled by 1/√d_k = 1/√16 = 0.25.",))
    assert false_claims(Case(), ("Means over all 1 heads",))
    assert not false_claims(Case(), ("Scores are scaled by 1/√d_k = 1/√16 = 0.25.",))

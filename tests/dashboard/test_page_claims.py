"""The page never says what isn't so: every sentence about the computation matches what was computed.

Each view is run under a set of cases: for the hand-built and random weights, every (weights, scaled,
causal) triple and every pair with the positional encoding; for the pretrained MiniLM and the trained model,
every (scaled, causal) pair. For each case the test computes the run itself, through ``core.sources`` (the
scale its trace used, its mask, how it gave positions, what its layer read), and ``CLAIMS`` maps a pattern
to the ``Facts`` of that run under which it is true; adding a claim is one line. Every string the page shows
is collected (markdown, captions, alerts, headings, LaTeX, metric labels, the formula columns of tables, and
the figures' titles and labels; code blocks show code, not claims, and are left out). Each claim must also
appear somewhere, so a pattern that no longer matches anything (a reworded sentence) fails instead of
silently checking nothing; ``REQUIRED`` claims must appear in their view whenever they hold.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core import tokenize
from core.pipeline import EMBEDDED, layer_output
from core.sources import EXPERIMENTS, SOURCES, ConfigSource, MiniLMSource, TrainedSource
from core.training import load_trained
from dashboard.state.settings import DEFAULT_CONFIG, DEFAULTS
from dashboard.views import VIEWS
from tests.conftest import require_minilm
from tests.dashboard.conftest import array, heatmaps, keyed_figures, make_app, no_exception


@dataclass(frozen=True)
class Case:
    """The settings a sentence can depend on, as URL values."""

    scaled: bool = True
    causal: bool = False
    positional: str = "none"
    weights: str = "random"
    n_heads: int = 4
    layer: int = 1
    task: str = ""
    """For the trained model: the task whose recommended (pre-trained) settings the link opens."""
    kv_heads: int | None = None
    window: int = 0
    prefix: int = 0
    alibi: bool = False

    def query(self) -> dict[str, str]:
        query = dict(scaled=str(self.scaled).lower(), causal=str(self.causal).lower(), weights=self.weights)
        variants = dict(kv_heads=self.kv_heads, window=self.window or None, prefix=self.prefix or None)
        query |= {k: str(v) for k, v in variants.items() if v is not None} | ({"alibi": "true"} if self.alibi else {})
        if self.weights == "minilm":
            return query | dict(layer=str(self.layer))
        if self.weights == "trained":  # the task's recommendation fills in the rest of the model
            return query | dict(task=self.task, layer=str(self.layer))
        return query | dict(positional=self.positional, n_heads=str(self.n_heads))

    @property
    def id(self) -> str:
        return "-".join(f"{k}={v}" for k, v in self.query().items())


@dataclass(frozen=True)
class Facts:
    """What the case's run computed, read from it (never from the case's settings)."""

    weights: str
    scaled: bool
    """The trace's scale is 1/√d_k."""
    causal: bool
    """The trace has a mask."""
    positional: str
    """How the model gave positions (``Run.positional``)."""
    input_from: str
    """What the layer's attention read (``Run.input_from``)."""
    layer: int
    tokens_label: str
    plain_causal: bool = False
    """The mask hides exactly the future keys: nothing above the diagonal, nothing below it."""
    causal_window: bool = False
    """Nothing above the diagonal is seen, and some earlier keys are hidden: a causal sliding window."""
    both_ways_window: bool = False
    """Some earlier keys are hidden and some later keys are seen outside a leading block: a window both ways."""
    prefix: bool = False
    """The mask's leading all-True block (2 tokens or more, not the whole map) is causal beyond it."""
    first_sees_one: bool = False
    """Query 0 sees exactly one key."""
    alibi: str = ""
    """"" without a bias; "causal" when the bias is not symmetric, "symmetric" when it equals its transpose."""
    kv_heads: int = 0
    n_heads: int = 0
    mask_sees_order: bool = False
    """Some reordering of the words changes the mask: it is neither all True nor the diagonal alone."""
    reversal_keeps: bool = False
    """Nothing in the run reads where a word stands in a way a reversal changes: no position added or rotated, and
    the mask and the bias equal themselves read backwards (|i − j| is all they read). The cases open the
    permutation view's default reordering, the reversal."""
    last_row_hidden: int = 0
    """How many keys the mask hides from the last query: with the causal mask, what a sliding window hides when the
    KV cache's last step attends (the kv_cache view decodes with the run's window, causally)."""
    hides: bool = False
    """The mask hides some key from some query."""


def mask_facts(mask) -> dict:
    """What a mask does, read from its cells (independently of dashboard.page.mask_words)."""
    if mask is None:
        return {}
    t_q, t_k = mask.shape
    block = max(p for p in range(min(t_q, t_k) + 1) if mask[:p, :p].all())  # the leading all-True block
    outside = np.ones_like(mask)
    outside[:block, :block] = False
    future_seen = bool((np.triu(mask, 1) & outside).any())  # a later key seen outside the block
    past_hidden = bool((np.tril(~mask, -1) & outside).any())  # an earlier key hidden outside the block
    causal = not future_seen
    order_blind = mask.all() or (t_q == t_k and np.array_equal(mask, np.eye(t_q, dtype=bool)))
    return dict(
        mask_sees_order=not order_blind,
        hides=not mask.all(),
        last_row_hidden=int(t_k - mask[-1].sum()),
        plain_causal=causal and not past_hidden and block <= 1,
        causal_window=causal and past_hidden and block <= 1,
        both_ways_window=future_seen and past_hidden,
        prefix=causal and 2 <= block < min(t_q, t_k),
        first_sees_one=int(mask[0].sum()) == 1,
    )


def computed(case: Case) -> Facts:
    """The case's run, computed here through ``core.sources`` as the page's source would compute it."""
    if case.weights == "minilm":
        require_minilm()
        from core.pretrained import load_minilm

        source = MiniLMSource.of(load_minilm(), DEFAULTS.sentence, causal=case.causal)
    elif case.weights == "trained":
        source = TrainedSource.of(load_trained(case.task))
    else:
        config = replace(
            DEFAULT_CONFIG,
            n_heads=case.n_heads,
            positional=case.positional,
            weights=case.weights,
            scaled=case.scaled,
            causal=case.causal,
            kv_heads=case.kv_heads if case.weights == "random" else None,  # the hand-built weights refuse it
            window=case.window,
            prefix=case.prefix,
            alibi=case.alibi,
        )
        source = ConfigSource.of(tokenize(DEFAULTS.sentence), config)
    run = source.run(case.layer)
    tr = run.trace
    scaled = math.isclose(tr.scale, 1 / math.sqrt(tr.q.shape[-1]))
    facts = (scaled, tr.mask is not None, run.positional, run.input_from, run.layer, source.tokens().label)
    alibi = "" if tr.bias is None else ("symmetric" if np.array_equal(tr.bias, tr.bias.swapaxes(-1, -2)) else "causal")
    backwards = [a for a in (tr.mask, tr.bias) if a is not None]  # what reads positions, besides an encoding
    reversal_keeps = run.positional == "none" and all(np.array_equal(a, a[..., ::-1, ::-1]) for a in backwards)
    return Facts(
        case.weights,
        *facts,
        **mask_facts(tr.mask),
        alibi=alibi,
        kv_heads=tr.kv_heads,
        n_heads=tr.n_heads,
        reversal_keeps=reversal_keeps,
    )


LAYERS = (1, 2, 3)
"""The layers the cases open (below): a page naming one must have it chosen."""
Rule = Callable[[Facts], bool]
scaled: Rule = lambda f: f.scaled  # noqa: E731
unscaled: Rule = lambda f: not f.scaled  # noqa: E731
causal: Rule = lambda f: f.causal  # noqa: E731
no_mask: Rule = lambda f: not f.causal  # noqa: E731
minilm: Rule = lambda f: f.weights == "minilm"  # noqa: E731
first_layer_input: Rule = lambda f: f.input_from == EMBEDDED  # noqa: E731
never: Rule = lambda f: False  # noqa: E731
always: Rule = lambda f: True  # noqa: E731
blind: Rule = lambda f: f.positional == "none" and not f.mask_sees_order and not f.alibi  # noqa: E731
"""Nothing in the run sees where a word stands: no position, no bias, a mask no reordering changes."""
embedded: Rule = lambda f: f.positional == "none" and f.input_from == EMBEDDED  # noqa: E731
"""A first layer's input with no position added to it."""

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
    r"^masked scores$": causal,
    r"The mask lets the first query see only itself": lambda f: f.first_sees_one,
    r"^Causal: query i sees keys 0\.\.i": lambda f: f.plain_causal,
    r"Causal with a sliding window of \d+: query i sees keys i−\d+\.\.i": lambda f: f.causal_window,
    r"without the causal mask: query i sees the keys j with \|i − j\| <": lambda f: f.both_ways_window,
    r"A prefix of \d+: the first \d+ tokens see each other both ways": lambda f: f.prefix,
    # ALiBi and the K/V groups
    r"ALiBi adds −m·\(i − j\) to": never,  # the one-way distance raised a prefix's later keys: the bias is −m·|i − j|
    r"ALiBi adds −m·\|i − j\|": lambda f: f.alibi == "symmetric",
    r"\+ ALiBi's bias|ALiBi bias$": lambda f: bool(f.alibi),
    r"Grouped-query attention: \d+ query heads share \d+ K/V heads": lambda f: 1 < f.kv_heads < f.n_heads,
    r"Multi-query attention: all \d+ query heads read one K": lambda f: f.kv_heads == 1 < f.n_heads,
    r"· K/V \d|repeat_kv: each K/V head copied|\(d_model, kv_heads·d_k\)": lambda f: f.kv_heads < f.n_heads,
    r"The same mask, written three ways": causal,
    r"softmax over all \d+ keys": lambda f: not f.hides,  # the score probe's query 0 sees every key
    r"Masked cells are blank": never,  # they are hatched grey (the legend says so)
    r"^lesson 1: 1 = keep$": causal,
    r"query i may attend to source positions 0\.\.i only": lambda f: f.plain_causal,
    r"^No mask|\\text\{no mask": no_mask,
    r"Not equivariant here": lambda f: not f.reversal_keeps,
    # positions
    r"order is invisible": lambda f: blind(f) and first_layer_input(f),
    r"order enters only through the mask": lambda f: f.mask_sees_order and f.positional == "none",
    r"order enters only through (the mask and )?ALiBi's bias": lambda f: bool(f.alibi) and f.positional == "none",
    r"identical rows\s+and identical columns": lambda f: f.positional == "none" and not f.causal and not f.alibi,
    r"^X \+ P$|position vector P|positional encoding P": lambda f: f.positional in ("sinusoidal", "learned"),
    r"RoPE adds nothing here|before RoPE|RoPE-rotated": lambda f: f.positional == "rope",
    r"Same map, reordered": lambda f: f.reversal_keeps,
    r"Attention alone cannot see word order|Permutation equivariance": blind,
    r"(ALiBi|the mask|ALiBi and the mask) sees? relative order": lambda f: f.reversal_keeps and not blind(f),
    r"The same output rows, moved: attention\(P X\) = P attention\(X\) for this reordering": lambda f: (
        f.reversal_keeps and not blind(f)
    ),
    r"clock": lambda f: f.weights == "previous",
    # what the layer read
    r"the embedding of each token": first_layer_input,
    r"hidden state entering layer": lambda f: not first_layer_input(f),
    r"layer 1's output": lambda f: f.input_from == layer_output(1),
    r"segment embeddings": lambda f: f.weights == "minilm" and f.layer == 1,
    # the tokens
    r"the sentence's tokens": lambda f: f.tokens_label == "the sentence's tokens",
    r"task's fixed example": lambda f: f.weights == "trained",
    # weights
    r"random here|These weights are random|Random W_Q|any pattern here is chance": lambda f: f.weights == "random",
    r"random weights of the same shape": lambda f: f.weights in ("minilm", "trained"),
    r"identity matrix here": lambda f: f.weights == "identity",
    r"built by hand here": lambda f: f.weights in ("identity", "previous"),
    r"Measured on this sentence": lambda f: f.weights in ("identity", "previous"),
    r"MiniLM|pretrained|\[CLS\]|b_O|\+ biases": minilm,
    r"trained in (this page|the train view)": lambda f: f.weights == "trained",
    # the tiles and the cache
    r"keeps long contexts in fast on-chip memory": never,  # the view's (T, B_c) scores: 1.5 MiB at T = 131,072
    r"A sliding window of \d+ hides the other \d+": lambda f: f.last_row_hidden > 0,
    # counts and layers
    r"\\mid \\cdots \\mid": lambda f: f.n_heads >= 4,  # concat = [Z_1 | ⋯ | Z_h]: the dots stand for heads
    r"(?<!layer )\b1 heads\b|\ball 1 heads|\bh = 1 heads|\bheads 1\.\.1\b": never,
    **{rf"\blayer {n}\b(?! heads|'s output)": (lambda f, n=n: f.layer == n) for n in LAYERS},  # a toy's is 1
}
"""A pattern (``re.search``) -> True for the computed facts under which the page may say it."""
REQUIRED: list[tuple[str, str, Rule]] = [
    ("heads", r"^Scaling is off", unscaled),
    ("steps", r"^Scaling is off", unscaled),
    ("shapes", r"Scaling is off", unscaled),
    ("summary", r"^Scaling is off", unscaled),
    ("shapes", r"Scores are scaled by 1/√d_k", scaled),
    ("steps", r"hidden state entering layer", lambda f: not first_layer_input(f)),
    ("steps", r"the embedding of each token", first_layer_input),
    ("steps", r"layer 1's output", lambda f: f.input_from == layer_output(1)),
    ("tokens", r"The tokens as the model sees them: the sentence's tokens", lambda f: f.weights in TOY),
    ("tokens", r"task's fixed example", lambda f: f.weights == "trained"),
    ("steps", r"The mask: hidden keys$", causal),
    ("steps", r"^\d+\. \+ ALiBi's bias", lambda f: bool(f.alibi)),
    ("steps", r"A prefix of \d+: the first", lambda f: f.prefix),
    ("steps", r"Causal with a sliding window of", lambda f: f.causal_window),
    ("steps", r"without the causal mask: query i sees the keys j", lambda f: f.both_ways_window),
    ("heads", r"Grouped-query attention|Multi-query attention", lambda f: f.kv_heads < f.n_heads),
    ("shapes", r"repeat_kv: each K/V head copied", lambda f: f.kv_heads < f.n_heads),
    ("steps", r"^No mask", no_mask),
    ("steps", r"order enters only through (the mask and )?ALiBi's bias", lambda f: bool(f.alibi) and embedded(f)),
    ("steps", r"Keys the mask hides are marked as masked: their bias is never used", lambda f: f.alibi and f.hides),
    ("heads", r"ALiBi adds −m·", lambda f: bool(f.alibi)),
    ("permutation", r"Same map, reordered, yet .+ relative order", lambda f: f.reversal_keeps and not blind(f)),
    ("flash", r"This view tiles only the keys: all \d+ query rows are in every block", always),
    ("flash", r"FlashAttention tiles the queries too: .+ \d+ × \d+ in FlashAttention-2", always),
    ("kv_cache", r"A sliding window of \d+ hides the other \d+", lambda f: f.last_row_hidden > 0),
]
"""(view, pattern, rule): whenever the rule holds for the case's run, the view must say it (the unscaled
warning appears exactly when the trace's scale is not 1/√d_k, the input is described as what the layer read)."""

TOY = ("random", "identity", "previous")
POSITIONS = ("none", "sinusoidal", "learned", "rope")


SWITCHES = tuple(itertools.product((True, False), (True, False)))
"""(scaled, causal): every pair."""


def pairwise_cases() -> list[Case]:
    """12 cases, one per (positional, weights), with (scaled, causal) chosen so that every weights kind meets
    all four (scaled, causal) pairs and every pair of values of any two of the four settings appears in some
    case (checked below)."""
    cases = []
    for p, positional in enumerate(POSITIONS):
        for w, weights in enumerate(TOY):
            scaled, causal = SWITCHES[(p + w) % 4]
            cases.append(Case(scaled=scaled, causal=causal, positional=positional, weights=weights))
    return cases


def learned_cases() -> list[Case]:
    """MiniLM and the trained model under every (scaled, causal) pair, on layers 1 to 3 between them. The
    trained model opens a task whose recommendation has that mask (so it comes pre-trained): shift (1 layer)
    and induction (its layer 2) with the mask, reverse without."""
    minilm = [Case(scaled=s, causal=c, weights="minilm", layer=LAYERS[i % 3]) for i, (s, c) in enumerate(SWITCHES)]
    trained = [
        Case(scaled=True, causal=True, weights="trained", task="shift"),
        Case(scaled=False, causal=True, weights="trained", task="induction", layer=2),
        Case(scaled=True, causal=False, weights="trained", task="reverse"),
        Case(scaled=False, causal=False, weights="trained", task="reverse"),
    ]
    return minilm + trained


VARIANT_CASES = [
    Case(causal=True, kv_heads=2, window=3, prefix=2, alibi=True),  # every variant at once
    Case(kv_heads=1, window=2, alibi=True, positional="sinusoidal"),  # both ways, multi-query, ALiBi with a table
    Case(prefix=3),  # a prefix without the causal mask changes nothing
    Case(causal=True, weights="identity", kv_heads=2, window=4),  # grouping refused: hand-built weights
    Case(causal=True, weights="minilm", kv_heads=2, window=2, alibi=True),  # every variant refused
    Case(alibi=True),  # ALiBi alone: a reversal keeps every distance, so the maps match, yet order is seen
    Case(causal=True, alibi=True, n_heads=2),  # ALiBi under the causal mask: +m·(j − i) above the diagonal, masked
    Case(window=2),  # a window both ways: it reads |i − j| too
    Case(causal=True, window=3, kv_heads=2),  # the cache's window: its last step sees 3 of the 8 keys
    Case(causal=True, alibi=True, n_heads=1),  # one head: one slope, one Z
]
"""Today's variants: the facts come from the trace, so a refused variant must not be described."""
CASES = [*pairwise_cases(), Case(n_heads=1), *learned_cases(), *VARIANT_CASES]
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


EVERY_LAYER_VIEWS = {"model"}
"""Views whose chart draws every layer's maps: there "layer N, head M" names one of the maps drawn, not the layer
the run's settings chose, so that label form (and only in their charts) is no claim about the run."""
MAP_LABEL = re.compile(r"\blayer \d+, head \d+\b")
RANKING_VIEWS = {"contrast"}
"""Views that rank every head of every layer and name the heads they rank in their text ("The largest shift is layer
4, head 2's"): there "layer N, head M" anywhere names one of all the heads, not the layer the run's settings chose,
so that form is no claim about the run; tests/dashboard/test_contrast_view.py checks each such name against core."""


def page_strings(at: AppTest, every_layer: bool = False, ranking: bool = False) -> list[str]:
    """Every string the page shows as text (code blocks left out); ``every_layer``: its chart's map labels left out;
    ``ranking``: the label form left out everywhere."""
    out = []
    for kind in ("markdown", "caption", "info", "warning", "success", "error", "subheader", "header", "title"):
        out += [e.value for e in getattr(at, kind)]
    out += [e.value for e in at.get("latex")]
    out += [e.value for e in at.get("text")]
    out += [m.label for m in at.metric]
    for frame in at.dataframe:
        table = frame.value
        out += [str(v) for col in TABLE_COLUMNS if col in table for v in table[col]]
    chart_strings = [s for chart in at.get("plotly_chart") for s in figure_strings(chart.proto.spec)]
    out += [MAP_LABEL.sub("", s) for s in chart_strings] if every_layer else chart_strings
    return [MAP_LABEL.sub("", s) for s in out] if ranking else out


@functools.cache
def strings_of(case: Case, view: str) -> tuple[str, ...]:
    at = make_app(view=view, **case.query()).run()
    no_exception(at)
    return tuple(page_strings(at, every_layer=view in EVERY_LAYER_VIEWS, ranking=view in RANKING_VIEWS))


@functools.cache
def facts_of(case: Case) -> Facts:
    return computed(case)


SUGGESTIONS = sorted(
    {f"Try {s.instead}." for kind in set(SOURCES.values()) for e in EXPERIMENTS if (s := kind.supports(e)).instead},
    key=len,
    reverse=True,
)
""""Try <what to pick instead>.", as the page ends a refusal ("Try the pretrained MiniLM or a trained model."):
it names other weights by design, so it is no claim about this run and is left out of the check. Only this exact
form: "uses random weights of the same shape" elsewhere on a page is a claim, and checked."""


def false_claims(facts: Facts, strings: tuple[str, ...]) -> list[tuple[str, str]]:
    def claims(text: str) -> str:
        for suggestion in SUGGESTIONS:
            text = text.replace(suggestion, "")
        return text

    return [
        (pattern, text)
        for text in strings
        for pattern, holds in CLAIMS.items()
        if not holds(facts) and re.search(pattern, claims(text), flags=re.MULTILINE)
    ]


def missing_claims(facts: Facts, view: str, strings: tuple[str, ...]) -> list[str]:
    return [
        pattern
        for shown, pattern, holds in REQUIRED
        if shown == view and holds(facts) and not any(re.search(pattern, t, flags=re.MULTILINE) for t in strings)
    ]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_no_view_says_what_the_computed_run_makes_untrue(case):
    facts = facts_of(case)
    wrong = {view: false_claims(facts, strings_of(case, view)) for view in SHOWN_VIEWS}
    assert not {v: w for v, w in wrong.items() if w}, wrong
    missing = {view: missing_claims(facts, view, strings_of(case, view)) for view in SHOWN_VIEWS}
    assert not {v: m for v, m in missing.items() if m}, missing


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_view_renders_for_every_weights_kind_scaled_and_causal(case):
    """No exception box in any view, the train view included (the other views' runs are shared with the test
    above)."""
    if case.weights == "minilm":
        require_minilm()
    for view in VIEWS:
        strings_of(case, view)  # runs the page and checks it raised nothing


def test_the_cases_cover_every_weights_kind_with_every_scaled_and_causal_pair():
    have = {(c.weights, c.scaled, c.causal) for c in CASES}
    assert have == set(itertools.product((*TOY, "minilm", "trained"), (True, False), (True, False)))


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
    unscaled_run = facts_of(Case(scaled=False))
    assert false_claims(unscaled_run, ("Scores are scaled by 1/√d_k = 1/√16 = 0.25.",))
    assert false_claims(facts_of(Case()), ("Means over all 1 heads",))
    assert false_claims(facts_of(Case()), ("with slopes m = 1/256 for heads 1..1: the farther the key",))
    # sentences the variants' views printed before they were read from the run
    assert false_claims(facts_of(Case()), ("On a GPU this is what keeps long contexts in fast on-chip memory.",))
    assert false_claims(facts_of(Case(n_heads=1)), (r"\text{concat} = [\,Z_1 \mid \cdots \mid Z_{1}\,],",))
    alibi = facts_of(Case(alibi=True))
    assert false_claims(alibi, ("the embedding of each token; with no positional encoding, order is invisible",))
    causal_alibi = facts_of(Case(causal=True, alibi=True, prefix=3))  # the bias core added before: −m·(i − j)
    assert causal_alibi.alibi == "symmetric"
    assert false_claims(causal_alibi, ("ALiBi adds −m·(i − j) to each head's scaled scores",))
    assert false_claims(alibi, ("Same map, reordered. Attention alone cannot see word order: moving the words",))
    assert false_claims(facts_of(Case(causal=True)), ("Causal: query i sees keys 0..i. Masked cells are blank: ...",))
    assert not false_claims(facts_of(Case()), ("Scores are scaled by 1/√d_k = 1/√16 = 0.25.",))
    # the trained model asked for no scaling computed a scaled run: "Scaling is off" would be false there
    trained_unscaled = facts_of(Case(scaled=False, causal=True, weights="trained", task="shift"))
    assert trained_unscaled.scaled and false_claims(trained_unscaled, ("Scaling is off: the scores are QKᵀ",))
    # the trained induction model's layer 2 reads layer 1's output, not the embedding plus positions
    layer_2 = facts_of(Case(scaled=True, causal=True, weights="trained", task="induction", layer=2))
    assert false_claims(layer_2, ("the embedding of each token plus its learned position vector P",))
    assert missing_claims(layer_2, "steps", ("Shape (24, 32) = (T, d_model): the embedding of each token.",))


def test_only_an_every_layer_views_map_labels_may_name_another_layer():
    """The model view titles each of a tiny model's maps "layer 1, head 1", "layer 2, head 1": on layer 2 those
    labels are no claim. The same words anywhere else (a caption, the heads view's chart) still are."""
    layer_2 = facts_of(Case(scaled=True, causal=True, weights="trained", task="induction", layer=2))
    model = strings_of(Case(scaled=True, causal=True, weights="trained", task="induction", layer=2), "model")
    assert not false_claims(layer_2, model)
    assert false_claims(layer_2, ("layer 1, head 1",)), "outside an every-layer view's chart it is a claim"
    assert false_claims(layer_2, (MAP_LABEL.sub("", "maps of layer 1: layer 1, head 1"),)), "only the label form goes"


ALIBI_CASES = [
    Case(alibi=True),
    Case(causal=True, alibi=True, n_heads=2),
    Case(causal=True, alibi=True, window=3),
    Case(causal=True, alibi=True, prefix=3),
]


@pytest.mark.parametrize("case", ALIBI_CASES, ids=[c.id for c in ALIBI_CASES])
def test_the_bias_map_draws_the_runs_bias_where_the_mask_lets_it_count_and_a_penalty_there(case):
    """Under the causal mask −m·(i − j) was +m·(j − i) above the diagonal: drawn, +2.25 read as a reward next to "a
    penalty growing with distance", and inside a prefix the later keys really were raised. The bias is −m·|i − j|
    now; the map draws it only on the cells the mask lets through (the rest is marked masked), all at most 0, on a
    scale that stops at 0."""
    config = replace(DEFAULT_CONFIG, causal=case.causal, window=case.window, prefix=case.prefix, alibi=True)
    config = replace(config, n_heads=case.n_heads)
    trace = ConfigSource.of(tokenize(DEFAULTS.sentence), config).run(1).trace
    at = make_app(view="steps", **case.query()).run()
    no_exception(at)
    fig = keyed_figures(at)["step_bias_chart"]
    [z] = [array(t["z"]).astype(float) for t in heatmaps(fig) if t.get("name") != "masked"]
    seen = np.ones(z.shape, dtype=bool) if trace.mask is None else trace.mask  # (T, T)
    np.testing.assert_array_equal(np.isfinite(z), seen)  # a masked cell is not drawn, whatever its bias
    np.testing.assert_allclose(z[seen], trace.bias[0][seen], atol=1e-12)  # head 1's bias, as the run added it
    overlays = [~np.isnan(array(t["z"])) for t in heatmaps(fig) if t.get("name") == "masked"]
    assert (overlays[0] if overlays else np.zeros_like(seen)).tolist() == (~seen).tolist()
    [caption] = [c.value for c in at.caption if c.value.startswith(f"Shape {shape_of(z)}, added to the scaled")]
    assert (z[seen] <= 0).all() and "the farther the key, the lower its score" in caption
    assert fig["layout"]["coloraxis"]["cmax"] == 0  # the scale stops at 0: no colour a reward would take


def shape_of(z: np.ndarray) -> str:
    return "(" + ", ".join(map(str, z.shape)) + ")"


@pytest.mark.parametrize("query", [dict(window="3"), dict(window="3", kv_heads="2"), dict(), dict(window="5")])
def test_the_cache_memory_row_for_your_settings_is_the_runs_shapes_and_window(query):
    """At window 3 the row said "none" and 8 MiB at 32,768 tokens: a window-3 cache keeps 3 tokens."""
    at = make_app(view="kv_cache", **query).run()
    no_exception(at)
    config = replace(DEFAULT_CONFIG, causal=True, window=int(query.get("window", 0)))
    config = replace(config, kv_heads=int(query["kv_heads"]) if "kv_heads" in query else None)
    trace = ConfigSource.of(tokenize(DEFAULTS.sentence), config).run(1).trace
    h, kv, d_k = trace.n_heads, trace.kv_heads, trace.q.shape[-1]
    window = 0 if trace.mask[-1].all() else int(trace.mask[-1].sum())  # the keys the last query sees
    table = at.dataframe[0].value
    [row] = [r for r in table.to_dict("records") if r["model"] == "your settings"]
    per_token = 2 * 1 * kv * d_k * 2  # K and V, one layer, fp16
    kept = min(32768, window) if window else 32768
    assert row["heads (query / K,V)"] == f"{h} / {kv}" and row["d_k"] == d_k
    assert row["window"] == (str(window) if window else "none")
    assert row["at 32,768 tokens"] == written(per_token * kept)
    assert row["per token"] == written(per_token)


def written(n: int) -> str:
    """Bytes as the table writes them, worked out here: B under 1 KiB, else KiB, MiB or GiB with one decimal."""
    if n < 1024:
        return f"{n} B"
    for unit, power in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 2**power:
            return f"{n / 2**power:,.1f} {unit}"
    raise AssertionError(n)

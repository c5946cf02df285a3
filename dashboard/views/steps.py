"""Step by step: one head from X to its place in concat -> W_O, each step with its shape, equation and code.

Every number is read from the one cached trace (``computations.attention_run``), the
same arrays the heads view draws: this view slices them, it never recomputes
them another way. Each step is described by a ``Step`` (title, figure, shape,
equation, and the lines of core that perform it) and one loop draws them all.
Equations are the dashboard's own LaTeX with numbers only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from core import (
    Run,
    attention_scores,
    head_contributions,
    masked_softmax,
    multi_head_attention,
    scaled_dot_product_attention,
    softmax,
)
from core.attention import alibi_bias, attention_mask
from core.pipeline import EMBEDDED
from dashboard.compute import computations
from dashboard.figures.grid import ChartGrid
from dashboard.figures.layout import (
    CAPTION_ROW_PX,
    COLOUR_BAR_ROW_PX,
    HEADING_ROW_PX,
    PICKER_ROW_PX,
    QUIZ_SWITCH_PX,
)
from dashboard.figures.steps import (
    MAX_CONTRIBUTION_PANELS,
    bias_charts,
    concat_charts,
    contributions_charts,
    mask_conventions_charts,
    scores_charts,
    symmetric_limit,
    vector_panel,
    vectors_charts,
    weights_charts,
)
from dashboard.page import shared_figures
from dashboard.page.common import (
    EQUATION_GAP,
    choose_head,
    input_code,
    input_words,
    run_or_message,
    scaled,
    shape_text,
    show_code,
    show_equation,
    source_lines,
    unscaled_warning,
)
from dashboard.page.map_columns import show_figure, show_grid
from dashboard.page.mask_words import bias_slopes, bias_words, group_words, mask_rule, rule_words
from dashboard.page.probes import score_probe
from dashboard.state.followed import OWN, Controls
from dashboard.state.settings import Settings

NO_MASK = (
    "No mask: the causal mask is off, so every query may attend to every key and the scores go to the "
    "softmax unchanged."
)
NO_MASK_HINT = (
    " Turn on the causal mask or a window in the sidebar to hide keys (a prefix alone changes nothing: without the "
    "causal mask every key is visible already)."
)
CONVENTIONS = (
    "The same mask, written three ways. Lesson 1 builds np.tril(np.ones((T, T))) and hides where mask == 0: "
    "1 = keep. Lesson 3 builds np.triu(np.ones((T, T), bool), 1) and writes scores[mask] = -1e9: True = hidden. "
    "This app, like PyTorch's scaled_dot_product_attention and jax.nn.dot_product_attention, keeps where True: "
    "True = may attend (PyTorch's nn.MultiheadAttention attn_mask is the other way round). Passing one "
    "convention's mask to code written for another hides exactly the wrong keys."
)
CONVENTIONS_OFF = (
    "With the causal mask on, this step draws the mask as a 0/1 matrix in the three conventions the lessons "
    "and this app use: lesson 1 keeps where the mask is 1, lesson 3 hides where it is True, this app keeps "
    "where it is True (True = may attend)."
)
WHY_A_SUM = (
    "Why a sum: head h's Z_h fills only columns of concat, so it only ever meets those d_k rows of W_O, and "
    "concat · W_O splits into one (T, d_model) term per head. Lesson 3's multi_head_attention applies each "
    "head's W_O rows inside self_attention, so every head already returns a (T, d_model) block; its "
    "np.concatenate(heads, axis=1) then gives (T, h·d_model), h times too wide. Those blocks must be added. "
    "Concatenation is right one step earlier, for the (T, d_k) outputs Z_h before W_O."
)


@dataclass(frozen=True)
class Step:
    """One step of the view: what it is called, what it draws, its shape, its equation and its code."""

    title: str
    figure: go.Figure | ChartGrid | None
    key: str
    """The chart's widget key (tests read charts by it)."""
    caption: str
    equation: tuple[str, ...]
    """The equation in parts of LaTeX (the formula, then its shapes), drawn by ``page.show_equation``."""
    code: tuple[Callable, str]
    """The core function that performs the step and the lines of it that do (``page.source_lines``)."""
    note: Callable[[], None] | None = None
    """Anything the page says before the figure (a warning, or an info box standing in for it)."""
    after: Callable[[], None] | None = None
    """A second look at the same step, drawn after its code (the mask in three conventions, the heads' sum)."""
    equation_gap: str | None = EQUATION_GAP
    """None: the parts are one line of words cut where a phone may wrap it (``text_parts``)."""


@dataclass(frozen=True)
class Head:
    """The slice of the run every step reads: head ``k`` (0-based) of trace ``run.trace``."""

    run: Run
    k: int
    settings: Settings
    above_px: int = 0
    """What the page draws above this step's figure on a projector, when it is the first step shown: its map is
    planned to end above the first screen's fold (``layout.chart_fold_px``)."""
    share: bool = False
    """Each figure built once for the run and shared by every session that draws it (``figure``): the page's; the
    tour's download builds its own."""
    controls: Controls = OWN
    """The page's: its pickers, and the notes that point to one (a following page: the teacher's, none drawn)."""

    def figure(self, name: str, build: Callable[[], shared_figures.G]) -> shared_figures.G:
        """``build()``, the figure ``name`` of this head's steps; shared (``shared_figures.charts_of``) when ``share``.
        Its key is everything a step's figure reads besides the run: which figure, the head, the projector and what
        stands above it (the ranges of steps 3-5 are the run's and the head's)."""
        if not self.share:
            return build()
        return shared_figures.charts_of(
            self.run, ("steps", name, self.k, self.settings.presenter, self.above_px), build
        )

    @property
    def n(self) -> int:
        return self.k + 1

    @property
    def g(self) -> int:
        """The K/V head this head reads, from 1 (``n`` itself for multi-head attention)."""
        return self.run.trace.kv_head_of(self.k) + 1

    @property
    def d_k(self) -> int:
        return self.run.trace.q.shape[-1]

    @property
    def columns(self) -> tuple[int, int]:
        """First and last column of Q, K, V (and concat) that belong to this head."""
        return self.k * self.d_k, (self.k + 1) * self.d_k - 1


MAX_STEP = 9
"""The most steps a head has: eight, and ALiBi's bias before the mask."""
FIRST_ABOVE_PX = PICKER_ROW_PX + CAPTION_ROW_PX + HEADING_ROW_PX + COLOUR_BAR_ROW_PX - QUIZ_SWITCH_PX
"""On a projector, above the first step's figure: the row of pickers, the head's line, the step's heading and the
figure's colour bar (this view draws no quiz switch)."""


def render(settings: Settings, controls: Controls) -> None:
    run = run_or_message(settings, controls)
    if run is None:
        return
    pickers = st.container(horizontal=True)  # the head and the first step: one row, the figure starts higher
    k = choose_head(
        run.trace.n_heads,
        controls,
        key="step_head",
        bind="query-params",
        help="Every step below is this head's. The heads run side by side on their own d_k columns.",
        container=pickers,
    )
    render_steps(Head(run, k, settings, share=True, controls=controls), pickers)


def _first_step(names: list[str], container, controls: Controls) -> int:
    """The "Start at step" picker (key and query parameter ``first_step``; a following page: the teacher's, not
    drawn), 1 to ``len(names)``: the page leaves out the steps before it."""
    n = len(names)
    first = controls.choice(
        "first_step",
        1,
        lambda: container.segmented_control(
            "Start at step",
            list(range(1, n + 1)),  # numbers as they are: a bound control writes its options' text to the address
            default=1,
            required=True,
            key="first_step",
            bind="query-params",
            help="Leave out the steps before this one: the step you are talking about at the top of the page "
            f"(on a projector, on its first screen). The steps: {', '.join(f'{i} {m}' for i, m in enumerate(names, 1))}"
            ".",
        ),
    )
    return first_step(n, {"first_step": first})


def first_step(n: int, values: Mapping[str, object]) -> int:
    """The step the page starts at: ``values``' ``first_step`` (the picker's, a link's or a tour step's), 1 to ``n``."""
    return max(1, min(int(values["first_step"]), n))


def render_steps(head: Head, pickers) -> None:
    """The eight steps of one head (nine with ALiBi's bias), drawn by one loop from the one ``first_step`` picks."""
    tr = head.run.trace
    first, last = head.columns
    t_q = len(head.run.tokens)
    builders = step_builders(head)
    start = _first_step([name for name, _ in builders], pickers, head.controls)
    left_out = "step 1 is left out" if start == 2 else f"steps 1–{start - 1} are left out"
    st.caption(
        f"Head {head.n} of {tr.n_heads}: it works on columns {first}–{last} of Q, K and V "
        f"(d_k = {head.run.x.shape[-1]} / {tr.n_heads} = {head.d_k}). {t_q} query token{'s' * (t_q != 1)}; "
        + ("hover any cell for its token and value." if start == 1 else f"{left_out}.")
    )
    for number, step in enumerate(steps_of(head, start), start=start):
        st.subheader(f"{number}. {step.title}", anchor=False)
        if step.note is not None:
            step.note()
        if step.figure is not None:
            show_figure(step.figure, step.key)
        st.caption(step.caption)
        show_equation(*step.equation, gap=step.equation_gap)
        function, lines = step.code
        show_code(function, lines=lines)
        if step.after is not None:
            step.after()


def step_builders(head: Head) -> list[tuple[str, Callable[[Head], Step]]]:
    """The eight steps of one head (nine with ALiBi's bias) as (the picker's name for it, what builds it): the page
    builds those from the first it shows, the tour's download all of them (``steps_of``)."""
    tr = head.run.trace
    limit = symmetric_limit(computations.unscaled_scores(tr.scores[head.k], tr.scale))  # steps 3-5 share one range
    return [
        ("X", x_step),
        ("Q K V", qkv_step),
        ("QKᵀ", lambda h: scores_step(h, limit)),
        ("÷√d_k", lambda h: scale_step(h, limit)),
        *([("bias", bias_step)] if tr.bias is not None else []),
        ("mask", lambda h: mask_step(h, limit)),
        ("softmax", softmax_step),
        ("A·V", context_step),
        ("W_O", output_step),
    ]


def steps_of(head: Head, start: int = 1) -> list[Step]:
    """The steps of one head from step ``start`` (1-based), each with its figure, built as the page draws them: the
    first on a projector leaves room for what stands above it (``FIRST_ABOVE_PX``). The page draws them; the tour's
    download takes their figures."""
    builders = step_builders(head)[start - 1 :]
    return [build(replace(head, above_px=FIRST_ABOVE_PX) if i == 0 else head) for i, (_, build) in enumerate(builders)]


def x_step(head: Head) -> Step:
    run = head.run
    x, source_x = computations.attention_input(run)
    name = "X + P" if run.positions_added else "X"
    panels = [vector_panel(x, run.tokens, name)]
    if source_x is not None:
        panels.append(vector_panel(source_x, run.key_tokens, f"source {name}"))
    function, needles = input_code(head.settings)
    first = run.input_from == EMBEDDED  # embedding (+ positions), added in this run
    if first:
        equation = (r"X = E[\text{tokens}] + P" if run.positions_added else r"X = E[\text{tokens}]",)
    else:
        equation = text_parts("X = ", run.input_from)
    return Step(
        "X: one vector per token" if first else f"X: the hidden state entering layer {run.layer}",
        head.figure("x", lambda: vectors_charts(panels, at_most=1, presenter=head.settings.presenter)),
        "step_x_chart",
        f"Shape {shape_text(x.shape)} = (T, d_model): {input_words(run)}.",
        equation,
        (function, source_lines(function, *needles)),
        equation_gap=EQUATION_GAP if first else None,
    )


def text_parts(lead: str, words: str) -> tuple[str, ...]:
    """``lead`` and ``words`` (core's own text: "LayerNorm(word + position + segment embeddings)") as LaTeX parts
    cut before each " + ", each part but the first starting with its own space: one line where it fits."""
    first, *rest = words.split(" + ")
    return (rf"{lead}\text{{{first}}}", *(rf"\;+\;\text{{{w}}}" for w in rest))


def qkv_step(head: Head) -> Step:
    tr, n, k = head.run.trace, head.n, head.k
    g = head.g  # the K/V head this query head reads (n itself for multi-head attention)
    rows, cols = head.run.tokens, head.run.key_tokens
    t_q, d, d_k = len(rows), head.run.x.shape[-1], head.d_k
    first, last = head.columns
    rope = tr.q_unrotated is not None
    if rope:
        panels = [
            vector_panel(tr.q_unrotated[k], rows, f"Q{n} before RoPE"),
            vector_panel(tr.q[k], rows, f"Q{n} after RoPE"),
            vector_panel(tr.k_unrotated[g - 1], cols, f"K{g} before RoPE"),
            vector_panel(tr.k[g - 1], cols, f"K{g} after RoPE"),
            vector_panel(tr.v[g - 1], cols, f"V{g}"),
        ]
    else:
        panels = [
            vector_panel(tr.q[k], rows, f"Q{n}"),
            vector_panel(tr.k[g - 1], cols, f"K{g}"),  # (T_k, d_k): K/V head g's, shared by its group
            vector_panel(tr.v[g - 1], cols, f"V{g}"),
        ]
    b = _has_biases(head.run)
    equation = (
        rf"Q_{{{n}}} = X W_Q^{{({n})}}" + (rf" + b_Q^{{({n})}}" if b else "") + ",",
        rf"K_{{{g}}} = X W_K^{{({g})}}" + (rf" + b_K^{{({g})}}" if b else "") + ",",
        rf"V_{{{g}}} = X W_V^{{({g})}}" + (rf" + b_V^{{({g})}}" if b else ""),
        rf"({t_q} \times {d})\,({d} \times {d_k}) \to ({t_q} \times {d_k})",
    )
    if rope:
        equation += (r"\tilde q_i = R(i\,\theta)\, q_i,", r"\tilde k_j = R(j\,\theta)\, k_j")
    needles = ["q = split_heads(", "k = split_heads(", "v = split_heads("]
    needles += ["q = apply_rope(", "k = apply_rope("] if rope else []
    return Step(
        f"Q, K and V of head {n}",
        head.figure("qkv", lambda: vectors_charts(panels, at_most=2 if rope else 3, presenter=head.settings.presenter)),
        "step_qkv_chart",
        f"Each {shape_text((t_q, d_k))} = (T, d_k): W^({n}) is columns {first}–{last} of the (d_model, d_model) matrix."
        + _grouped_words(head)
        + (" RoPE turns each pair of coordinates of row i by i·θ: lengths stay, angles move." if rope else ""),
        equation,
        (multi_head_attention, source_lines(multi_head_attention, *needles)),
    )


def _grouped_words(head: Head) -> str:
    """How this head's K and V are shared, read from the trace's shapes (empty for multi-head attention)."""
    tr = head.run.trace
    if tr.group == 1:
        return ""
    kv, t_k, d_k = tr.k.shape[-3:]
    return (
        f" {group_words(tr)} K and V are computed as {shape_text((kv, t_k, d_k))} = (kv_heads, T, d_k), from "
        f"{kv * d_k} columns of W_K and W_V, and repeated to {shape_text(tr.keys_per_head.shape)} = (h, T, d_k): "
        f"head {head.n} reads K{tr.kv_head_of(head.k) + 1} and V{tr.kv_head_of(head.k) + 1}."
    )


def bias_step(head: Head) -> Step:
    """ALiBi's bias for this head, as a heatmap: what is added to the scaled scores before the mask. The cells the
    mask hides are marked as masked, as in the next step: their bias is never used."""
    tr, n = head.run.trace, head.n
    t_q, t_k = tr.scores.shape[-2:]
    bias = np.broadcast_to(tr.bias, tr.scores.shape)[head.k]  # (T_q, T_k): this head's bias
    slope = bias_slopes(tr.bias)[head.k] if t_k > 1 else 0.0
    hidden = tr.mask is not None and not tr.mask.all()
    return Step(
        f"+ ALiBi's bias (slope 1/{1 / slope:.4g})" if slope else "+ ALiBi's bias",
        head.figure(
            "bias",
            lambda: bias_charts(
                bias,
                head.run.tokens,
                head.run.key_tokens,
                f"head {n}: ALiBi bias",
                allowed=tr.mask,
                presenter=head.settings.presenter,
                above_px=head.above_px,
            ),
        ),
        "step_bias_chart",
        f"Shape {shape_text((t_q, t_k))}, added to the scaled scores. {bias_words(tr.bias)}"
        + (" Keys the mask hides are marked as masked: their bias is never used." if hidden else ""),
        (rf"S_{{ij}} \leftarrow S_{{ij}} - m_{{{n}}}\,|i - j|" if t_k > 1 else r"S_{ij} \leftarrow S_{ij} + 0",),
        (alibi_bias, source_lines(alibi_bias, "distance = ", "return -alibi_slopes(")),
    )


def scores_step(head: Head, limit: float) -> Step:
    tr, n = head.run.trace, head.n
    rope = tr.q_unrotated is not None
    t_q, t_k, d_k = tr.scores.shape[-2], tr.scores.shape[-1], head.d_k
    q_name, k_name = (r"\tilde Q", r"\tilde K") if rope else ("Q", "K")
    return Step(
        "QKᵀ: every query against every key",
        head.figure(
            "qk",
            lambda: scores_charts(
                computations.unscaled_scores(tr.scores[head.k], tr.scale),  # (T_q, T_k)
                head.run.tokens,
                head.run.key_tokens,
                f"Q{n}·K{head.g}ᵀ",
                limit=limit,
                presenter=head.settings.presenter,
                above_px=head.above_px,
            ),
        ),
        "step_qk_chart",
        f"Shape {shape_text((t_q, t_k))}: row i, column j is the dot product of query i with key j.",
        (
            rf"S = {q_name}_{{{n}}} {k_name}_{{{head.g}}}^{{\top}}",
            rf"({t_q} \times {d_k})\,({d_k} \times {t_k}) \to ({t_q} \times {t_k})",
        ),
        (attention_scores, source_lines(attention_scores, "k_t = np.swapaxes(", "return q @ k_t")),
    )


def scale_step(head: Head, limit: float) -> Step:
    tr, d_k = head.run.trace, head.d_k
    t_q, t_k = tr.scores.shape[-2:]
    if scaled(tr):
        title = f"÷√d_k = ÷{math.sqrt(d_k):.4g}"
        panel_title = "scaled scores"
        caption = (
            f"Shape {shape_text((t_q, t_k))}, on the same colour range as step 3: the factor shrinks every score, "
            "so the softmax does not saturate."
        )
        equation = (rf"\frac{{S}}{{\sqrt{{d_k}}}} = \frac{{S}}{{\sqrt{{{d_k}}}}} = \frac{{S}}{{{math.sqrt(d_k):.4g}}}",)
    else:
        title = "÷√d_k: off"
        panel_title = "scores, not scaled"
        caption = (
            f"Shape {shape_text((t_q, t_k))}, on the same colour range as step 3: with scaling off the scores go to "
            "the softmax as large as QKᵀ made them."
        )
        equation = (r"S \cdot 1", r"\text{(scaling off: the scores stay as large as } QK^{\top}\text{)}")
    return Step(
        title,
        head.figure(
            "scaled",
            lambda: scores_charts(
                tr.scores[head.k],
                head.run.tokens,
                head.run.key_tokens,
                panel_title,
                limit=limit,
                presenter=head.settings.presenter,
                above_px=head.above_px,
            ),
        ),
        "step_scaled_chart",
        caption,
        equation,
        (attention_scores, source_lines(attention_scores, "scale = 1 / math.sqrt(d_k)", "return q @ k_t")),
        note=lambda: unscaled_warning(head.run, head.controls),
        after=lambda: score_probe(head.settings, head.run, head.k),
    )


def mask_step(head: Head, limit: float) -> Step:
    tr = head.run.trace
    code = (masked_softmax, source_lines(masked_softmax, "scores = np.where(mask, scores, -np.inf)"))
    if tr.mask is None:
        return Step(
            "The mask",
            None,
            "step_mask_chart",
            "Shape unchanged: no query has a key hidden from it.",
            (r"\text{no mask: } S_{ij} \text{ unchanged for every } i, j",),
            code,
            note=lambda: st.info(NO_MASK + head.controls.hint(NO_MASK_HINT)),
            after=lambda: st.caption(CONVENTIONS_OFF),
        )
    return Step(
        "The mask: hidden keys",
        head.figure(
            "mask",
            lambda: scores_charts(
                (tr.scores if tr.bias is None else tr.scores + tr.bias)[head.k],  # what the mask is applied to
                head.run.tokens,
                head.run.key_tokens,
                "masked scores",
                limit=limit,
                allowed=tr.mask,
                presenter=head.settings.presenter,
                above_px=head.above_px,
            ),
        ),
        "step_mask_chart",
        f"Mask {shape_text(tr.mask.shape)}, True where query i may attend to key j. {rule_words(tr.mask)} "
        "A masked score becomes −∞, so its weight is exactly 0: it is marked grey, not shown as a small number.",
        (r"S_{ij} \leftarrow -\infty", r"\text{where the mask is False}"),
        code,
        after=lambda: _mask_conventions(head),
    )


def _mask_conventions(head: Head) -> None:
    """The applied mask as 0/1 matrices in lesson 1's, lesson 3's and this app's conventions."""
    tr = head.run.trace
    charts = head.figure(
        "mask_conventions",
        lambda: mask_conventions_charts(
            tr.mask, head.run.tokens, head.run.key_tokens, presenter=head.settings.presenter
        ),
    )
    show_grid(charts, key="step_mask_conventions_chart")
    st.caption(CONVENTIONS)
    rule = mask_rule(tr.mask)
    args = "" if rule is None else ", " + ", ".join(f"{k}={v!r}" for k, v in rule._asdict().items())
    t_q, t_k = tr.mask.shape
    show_code(attention_mask, f"mask = attention_mask({t_q}, {t_k}{args})  # (T_q, T_k) bool, True = may attend")


def softmax_step(head: Head) -> Step:
    tr, n = head.run.trace, head.n
    return Step(
        "softmax over each row: the weights",
        head.figure(
            "weights",
            lambda: weights_charts(
                tr.weights[head.k],
                head.run.tokens,
                head.run.key_tokens,
                f"head {n}: weights",
                tr.mask,
                presenter=head.settings.presenter,
                above_px=head.above_px,
            ),
        ),
        "step_weights_chart",
        f"Shape {shape_text(tr.weights.shape[-2:])}: every row sums to 1. This is head {n}'s map in the heads view.",
        # exp(...) and k, not e^{S_{ij} - max_{j'} ...}: a script inside a script is drawn at half size (14.5 px
        # on a projector, under its 20 px)
        (r"A_{ij} = \frac{\exp(S_{ij} - m_i)}{\sum_k \exp(S_{ik} - m_i)},", r"m_i = \max_k S_{ik}"),
        (softmax, source_lines(softmax, "x_max = np.max(", "e = np.exp(", "total = np.sum(", "return e /")),
    )


def context_step(head: Head) -> Step:
    tr, n = head.run.trace, head.n
    t_q, t_k, d_k = tr.weights.shape[-2], tr.weights.shape[-1], head.d_k
    return Step(
        "weights · V: each query's weighted mix of values",
        head.figure(
            "context",
            lambda: vectors_charts(
                [vector_panel(tr.context[head.k], head.run.tokens, f"Z{n} = A·V{head.g}")],
                columns=3,
                presenter=head.settings.presenter,
            ),
        ),
        "step_context_chart",
        f"Shape {shape_text((t_q, d_k))}: row i is the average of the value rows, weighted by row i of A.",
        (
            rf"Z_{{{n}}} = A\,V_{{{head.g}}}",
            rf"({t_q} \times {t_k})\,({t_k} \times {d_k}) \to ({t_q} \times {d_k})",
        ),
        (scaled_dot_product_attention, source_lines(scaled_dot_product_attention, "output = weights @ v")),
    )


def output_step(head: Head) -> Step:
    tr, n, h = head.run.trace, head.n, head.run.trace.n_heads
    t_q, d = tr.concat.shape[-2:]
    first, last = head.columns
    mixes = f"every output column mixes all {h} heads" if h > 1 else "with one head, concat is Z_1 itself"
    bias = r" + b_O" if _has_biases(head.run) else ""
    return Step(
        f"head {n}'s place in concat, then W_O",
        head.figure(
            "concat",
            lambda: concat_charts(
                tr.concat, tr.output, head.run.tokens, head.k, head.d_k, presenter=head.settings.presenter
            ),
        ),
        "step_concat_chart",
        f"concat and output are {shape_text((t_q, d))}. Head {n} fills columns {first}–{last} of concat, "
        f"so it meets rows {first}–{last} of W_O: {mixes}.",
        (
            rf"\text{{concat}} = {_concat_parts(h)},",
            rf"Y = \text{{concat}}\; W_O{bias}",
            rf"({t_q} \times {d})\,({d} \times {d}) \to ({t_q} \times {d})",
        ),
        (multi_head_attention, source_lines(multi_head_attention, "concat = merge_heads(", "output = linear(concat")),
        after=lambda: _heads_sum(head),
    )


def _concat_parts(h: int) -> str:
    """concat as the heads' outputs side by side, in LaTeX: ``Z_1`` alone for one head, every Z_h up to three,
    ``[Z_1 | ⋯ | Z_h]`` beyond (the dots stand for heads that exist)."""
    if h == 1:
        return "Z_1"
    parts = [f"Z_{{{n}}}" for n in range(1, h + 1)] if h <= 3 else ["Z_1", r"\cdots", f"Z_{{{h}}}"]
    return r"[\," + r" \mid ".join(parts) + r"\,]"


def _has_biases(run: Run) -> bool:
    return run.projections is not None and run.projections.b_o is not None


def _heads_sum(head: Head) -> None:
    """Each head's contribution Z_h · W_O[rows of h], and the output as their sum: lesson 3's per-head form."""
    tr, h, d_k = head.run.trace, head.run.trace.n_heads, head.d_k
    parts = computations.head_parts(head.run)  # (h, T, d_model)
    bias = head.run.projections.b_o if _has_biases(head.run) else 0.0
    gap = float(abs(parts.sum(axis=0) + bias - tr.output).max())
    st.subheader("The same output, head by head", anchor=False)
    charts = head.figure(
        "heads_sum",
        lambda: contributions_charts(parts, tr.output, head.run.tokens, head.k, presenter=head.settings.presenter),
    )
    show_grid(charts, key="step_heads_sum_chart")
    plus_bias = " plus the bias b_O" if _has_biases(head.run) else ""
    summed = (
        f"Each panel is one head's (T, d_model) contribution; the output is their sum{plus_bias}"
        if 1 < h <= MAX_CONTRIBUTION_PANELS
        else f"Head {head.n}'s (T, d_model) contribution and the other {h - 1} heads' added up; the output is "
        f"their sum{plus_bias}"
        if h > 1
        else f"With one head there is one contribution: the output is that contribution{plus_bias}"
    )
    st.caption(f"{summed} (largest difference {gap:.1e}, rounding). {WHY_A_SUM}")
    show_equation(
        rf"Y = \sum_{{h=1}}^{{{h}}} Z_h\, W_O[(h-1)\,d_k : h\,d_k,\ :]" + (r" + b_O" if _has_biases(head.run) else ""),
        rf"d_k = {d_k}",
    )
    show_code(head_contributions, "parts = head_contributions(result.trace.context, result.projections.w_o)")

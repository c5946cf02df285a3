"""Step by step: one head from X to its place in concat -> W_O, each step with its shape and equation.

Every number is read from the one cached trace (``compute.attention_run``), the
same arrays the heads view draws: this view slices them, it never recomputes
them another way. Equations are the dashboard's own LaTeX with numbers only.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
import streamlit as st

from core import Run
from dashboard import compute
from dashboard.figures.steps import (
    concat_figure,
    scores_figure,
    symmetric_limit,
    vector_panel,
    vectors_figure,
    weights_figure,
)
from dashboard.page import PLOTLY_CONFIG, choose_head, run_or_message, shape_text, unscaled_warning
from dashboard.settings import Settings

NO_MASK = (
    "No mask: the causal mask is off, so every query may attend to every key and the scores go to the "
    "softmax unchanged. Turn on the causal mask in the sidebar to hide each query's future keys."
)


def _step(number: int, title: str, figure: go.Figure | None, key: str, shape: str, equation: str) -> None:
    """One step: heading, figure, the shape in words and the equation (dashboard text and numbers only)."""
    st.subheader(f"{number}. {title}", anchor=False)
    if figure is not None:
        st.plotly_chart(figure, width="stretch", key=key, config=PLOTLY_CONFIG)
    st.caption(shape)
    st.latex(equation)


def render(settings: Settings) -> None:
    run = run_or_message(settings)
    if run is None:
        return
    k = choose_head(
        settings.config.n_heads,
        key="step_head",
        bind="query-params",
        help="Every step below is this head's. The heads run side by side on their own d_k columns.",
    )
    render_steps(run, k, settings)


def render_steps(run: Run, k: int, settings: Settings) -> None:
    """The eight steps of head ``k`` (0-based) for one run."""
    tr = run.trace
    rows, cols = run.tokens, run.key_tokens
    t_q, t_k, d, d_k, h = len(rows), len(cols), settings.config.d_model, tr.q.shape[-1], tr.n_heads
    n, p = k + 1, settings.presenter
    rope = tr.q_unrotated is not None
    first, last = k * d_k, (k + 1) * d_k - 1
    st.caption(
        f"Head {n} of {h}: it works on columns {first}–{last} of Q, K and V (d_k = {d} / {h} = {d_k}). "
        f"{t_q} query token{'s' * (t_q != 1)}; hover any cell for its token and value."
    )

    # 1. X
    x, source_x = compute.attention_input(run)
    added = settings.config.positional in ("sinusoidal", "learned")
    name = "X + P" if added else "X"
    panels = [vector_panel(x, rows, name)]
    if source_x is not None:
        panels.append(vector_panel(source_x, cols, f"source {name}"))
    how = {
        "sinusoidal": "the embedding of each token plus its sinusoidal position vector P",
        "learned": "the embedding of each token plus its learned position vector P",
        "rope": "the embedding of each token; RoPE adds nothing here, it rotates Q and K in step 2",
    }.get(settings.config.positional, "the embedding of each token; with no positional encoding, order is invisible")
    _step(
        1,
        "X: one vector per token",
        vectors_figure(panels, ncols=1, presenter=p),
        "step_x_chart",
        f"Shape {shape_text((t_q, d))} = (T, d_model): {how}.",
        r"X = E[\text{tokens}] + P" if added else r"X = E[\text{tokens}]",
    )

    # 2. Q, K, V
    if rope:
        qkv = [
            vector_panel(tr.q_unrotated[k], rows, f"Q{n} before RoPE"),
            vector_panel(tr.q[k], rows, f"Q{n} after RoPE"),
            vector_panel(tr.k_unrotated[k], cols, f"K{n} before RoPE"),
            vector_panel(tr.k[k], cols, f"K{n} after RoPE"),
            vector_panel(tr.v[k], cols, f"V{n}"),
        ]
        ncols = 2
    else:
        qkv = [
            vector_panel(tr.q[k], rows, f"Q{n}"),
            vector_panel(tr.k[k], cols, f"K{n}"),
            vector_panel(tr.v[k], cols, f"V{n}"),
        ]
        ncols = 3
    qkv_eq = (
        rf"Q_{{{n}}} = X W_Q^{{({n})}},\; K_{{{n}}} = X W_K^{{({n})}},\; V_{{{n}}} = X W_V^{{({n})}}"
        rf"\qquad ({t_q} \times {d})\,({d} \times {d_k}) \to ({t_q} \times {d_k})"
    )
    if rope:
        qkv_eq += r"\\ \tilde q_i = R(i\,\theta)\, q_i,\quad \tilde k_j = R(j\,\theta)\, k_j"
    _step(
        2,
        f"Q, K and V of head {n}",
        vectors_figure(qkv, ncols=ncols, presenter=p),
        "step_qkv_chart",
        f"Each {shape_text((t_q, d_k))} = (T, d_k): W^({n}) is columns {first}–{last} of the (d_model, d_model) matrix."
        + (" RoPE turns each pair of coordinates of row i by i·θ: lengths stay, angles move." if rope else ""),
        qkv_eq,
    )

    # 3. QK^T and 4. ÷√d_k, on one colour range so the factor is seen to shrink the scores
    raw = compute.unscaled_scores(tr.scores[k], tr.scale)  # (T_q, T_k)
    limit = symmetric_limit(raw)
    q_name = r"\tilde Q" if rope else "Q"
    k_name = r"\tilde K" if rope else "K"
    _step(
        3,
        "QKᵀ: every query against every key",
        scores_figure(raw, rows, cols, f"Q{n}·K{n}ᵀ", limit=limit, presenter=p),
        "step_qk_chart",
        f"Shape {shape_text((t_q, t_k))}: row i, column j is the dot product of query i with key j.",
        rf"S = {q_name}_{{{n}}} {k_name}_{{{n}}}^{{\top}}"
        rf"\qquad ({t_q} \times {d_k})\,({d_k} \times {t_k}) \to ({t_q} \times {t_k})",
    )
    if settings.config.scaled:
        scale_eq = rf"\frac{{S}}{{\sqrt{{d_k}}}} = \frac{{S}}{{\sqrt{{{d_k}}}}} = \frac{{S}}{{{math.sqrt(d_k):.4g}}}"
        scale_title = f"÷√d_k = ÷{math.sqrt(d_k):.4g}"
    else:
        scale_eq = r"S \cdot 1 \quad \text{(scaling off: the scores stay as large as } QK^{\top}\text{)}"
        scale_title = "÷√d_k: off"
    st.subheader(f"4. {scale_title}", anchor=False)
    unscaled_warning(settings)
    st.plotly_chart(
        scores_figure(tr.scores[k], rows, cols, "scaled scores", limit=limit, presenter=p),
        width="stretch",
        key="step_scaled_chart",
        config=PLOTLY_CONFIG,
    )
    st.caption(
        f"Shape {shape_text((t_q, t_k))}, on the same colour range as step 3: the factor shrinks every score, "
        "so the softmax does not saturate."
    )
    st.latex(scale_eq)

    # 5. mask
    if tr.mask is None:
        st.subheader("5. The mask", anchor=False)
        st.info(NO_MASK)
        st.latex(r"\text{no mask: } S_{ij} \text{ unchanged for every } i, j")
    else:
        _step(
            5,
            "The mask: future keys hidden",
            scores_figure(tr.scores[k], rows, cols, "masked scores", allowed=tr.mask, presenter=p),
            "step_mask_chart",
            f"Mask {shape_text(tr.mask.shape)}, True where key j ≤ query i. A masked score becomes −∞, "
            "so its weight is exactly 0: it is marked grey, not shown as a small number.",
            r"S_{ij} \leftarrow -\infty \quad \text{for } j > i",
        )

    # 6. softmax
    _step(
        6,
        "softmax over each row: the weights",
        weights_figure(tr.weights[k], rows, cols, f"head {n}: weights", tr.mask, presenter=p),
        "step_weights_chart",
        f"Shape {shape_text((t_q, t_k))}: every row sums to 1. This is head {n}'s map in the heads view.",
        r"A_{ij} = \frac{e^{S_{ij}}}{\sum_{j'} e^{S_{ij'}}}",
    )

    # 7. weights · V
    _step(
        7,
        "weights · V: each query's weighted mix of values",
        vectors_figure([vector_panel(tr.context[k], rows, f"Z{n} = A·V{n}")], ncols=3, presenter=p),
        "step_context_chart",
        f"Shape {shape_text((t_q, d_k))}: row i is the average of the value rows, weighted by row i of A.",
        rf"Z_{{{n}}} = A\,V_{{{n}}} \qquad ({t_q} \times {t_k})\,({t_k} \times {d_k}) \to ({t_q} \times {d_k})",
    )

    # 8. concat -> W_O
    _step(
        8,
        f"head {n}'s place in concat, then W_O",
        concat_figure(tr.concat, tr.output, rows, k, d_k, presenter=p),
        "step_concat_chart",
        f"concat and output are {shape_text((t_q, d))}. Head {n} fills columns {first}–{last} of concat, "
        f"so it meets rows {first}–{last} of W_O: every output column mixes all {h} heads.",
        rf"\text{{concat}} = [\,Z_1 \mid \cdots \mid Z_{{{h}}}\,], \quad Y = \text{{concat}}\; W_O"
        rf"\qquad ({t_q} \times {d})\,({d} \times {d}) \to ({t_q} \times {d})",
    )

"""Probe panels the views share: knock a head out, the model's predictions, repeated random tokens, one score.

Each panel asks the source (``supports("ablation")``, ``ablated_runs``, ``logits``) and draws what core computed;
every number on the page is read from that result. Results are cached per source key, bounded by their bytes
(``dashboard.compute.bounded_cache``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core import Run
from core.ablation import MODES
from core.neuron import score_terms
from core.pretrained.ablation import HeadEffects, effect, head_effects
from core.pretrained.bert import bert_forward
from core.sources import MiniLMSource, ModelSource, TrainedSource
from core.training.model import forward
from core.training.probes import (
    AblationTable,
    Predictions,
    ablation_table,
    after_earlier_twin,
    predictions,
    repeated_token_scores,
)
from core.training.train import TrainResult
from dashboard.compute import bounded_cache
from dashboard.compute.bounded_cache import MB
from dashboard.figures.probes import (
    head_bars_figure,
    head_grid_figure,
    head_label,
    predictions_figure,
    score_terms_figure,
)
from dashboard.page import shared_figures
from dashboard.page.common import PLOTLY_CONFIG, chart_config, show_code, show_equation, table_height
from dashboard.page.map_columns import chart
from dashboard.state.settings import Settings

NONE = "none"
"""The knockout control's "no head knocked out"."""
TEMPERATURES = (0.25, 0.5, 1.0, 2.0, 4.0)
"""Temperatures offered: below 1 sharpens the softmax towards the arg-max, above 1 flattens it."""
MODE_WORDS = {
    "mean": "replaced by its mean over the held-out set (what it says on average, whatever the input)",
    "zero": "replaced by zeros (the head says nothing)",
}
KNOCKOUT_CHOICES = (NONE, *(f"L{layer} H{head}" for layer in range(1, 7) for head in range(1, 17)))
"""Every value a link's ``ablate`` may carry (up to MiniLM's 6 layers and 16 heads); the panel offers the model's."""
_effects = bounded_cache.BoundedCache("dashboard.page.probes.effects", max_bytes=1 * MB, idle=None)
"""The server's all-heads MiniLM tables by source key (each 72 forwards and a few kB: kept until more push it out,
not dropped when idle, since a student pressed a button for it)."""


# --- knock a head out --------------------------------------------------------------------------------------------


def choose_knockout(n_layers: int, n_heads: int) -> tuple[int, int] | None:
    """The "Knock out" selector (URL key ``ablate``): ``(layer, head)`` 0-based, or None for the intact model."""
    options = [NONE] + [head_label(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    chosen = st.selectbox(
        "Knock out",
        options,
        key="ablate",
        bind="query-params",
        help="Pick a head to remove: its output (its context, before W_O) is replaced, every other head is kept, "
        "and the layers after it read the changed stream.",
    )
    if chosen == NONE or chosen not in options:
        return None
    i = options.index(chosen) - 1
    return divmod(i, n_heads)


def choose_mode() -> str:
    """The ablation mode (URL key ``ablate_mode``): zero or mean."""
    return st.segmented_control(
        "Replace its output by",
        MODES,
        default="mean",
        required=True,
        key="ablate_mode",
        bind="query-params",
        help="mean: the head's average output over the held-out set, at each position (it keeps saying what it "
        "says on average, so only what depends on the input is lost); zero: nothing at all.",
    )


@bounded_cache.cache(max_bytes=4 * MB, spinner="Knocking out every head on the held-out set…", idle=None)
def _ablation_table(key: tuple, mode: str, _result: TrainResult) -> AblationTable:
    return ablation_table(_result, mode)


def trained_ablation(settings: Settings, source: TrainedSource) -> None:
    """Every head's effect on the held-out accuracy and loss, in a table and a bar chart, and the chosen one's."""
    arch = source.architecture()
    st.subheader("Knock a head out", anchor=False)
    left, right = st.columns(2)
    with left:
        chosen = choose_knockout(arch.n_layers, arch.n_heads)
    with right:
        mode = choose_mode()
    table = _ablation_table(source.key, mode, source.result)
    drop = table.accuracy_drop  # (L, h)
    circuit = {(i, j) for i in range(drop.shape[0]) for j in range(drop.shape[1]) if drop[i, j] >= 0.5}
    intact = table.intact
    if chosen is not None:
        score = table.knocked[chosen[0]][chosen[1]]
        st.markdown(
            f"Without **{head_label(*chosen)}** (its output {MODE_WORDS[table.mode]}): held-out accuracy "
            f"**{score.accuracy:.1%}** (intact {intact.accuracy:.1%}), loss {score.loss:.3f} (intact "
            f"{intact.loss:.3f})."
        )
    bars = shared_figures.charts_of(  # one per model, mode and screen: a room's followers share it
        source.result,
        ("ablation bars", table.mode, settings.presenter),
        lambda: head_bars_figure(
            100 * drop,
            "held-out accuracy lost without each head (points)",
            "points lost",
            marked=circuit,
            presenter=settings.presenter,
        ),
    )
    chart(bars, width="stretch", key="ablation_chart", config=PLOTLY_CONFIG)
    rows = [
        {
            "head": head_label(i, j),
            "accuracy without it": table.knocked[i][j].accuracy,
            "points lost": 100 * drop[i, j],
            "loss without it": table.knocked[i][j].loss,
        }
        for i in range(drop.shape[0])
        for j in range(drop.shape[1])
    ]
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        height=table_height(len(rows)),
        column_config={
            "accuracy without it": st.column_config.NumberColumn(format="percent"),
            "points lost": st.column_config.NumberColumn(format="%.1f"),
            "loss without it": st.column_config.NumberColumn(format="%.3f"),
        },
    )
    n_heads = drop.size
    matter = ", ".join(head_label(*lh) for lh in sorted(circuit)) or "no head"
    st.caption(
        f"Each head knocked out in turn ({n_heads} forward passes over the held-out set), its output "
        f"{MODE_WORDS[table.mode]}. Losing 50 points or more (orange): {matter}; the largest loss among the others "
        f"is {max([100 * drop[lh] for lh in np.ndindex(drop.shape) if lh not in circuit], default=0.0):.1f} points."
    )
    show_code(ablation_table, f"table = ablation_table(trained, {table.mode!r})  # every head in turn")


def _stored_effects(key: tuple) -> HeadEffects | None:
    return _effects.peek(key)


@bounded_cache.cache(max_bytes=1 * MB, spinner="Running the model without that head…")
def _minilm_effect(key: tuple, layer: int, head: int, _source: MiniLMSource) -> tuple[np.ndarray, float]:
    """``effect`` of knocking out ``head`` of ``layer`` (0-based): each later layer's map change ``(L,)`` and the
    embedding's cosine. Kept, not the two forward passes it compares (7 MB each at 64 pieces)."""
    ids = np.array(_source.model.encode(_source.text).ids, dtype=np.int64)  # (T,)
    intact = bert_forward(_source.model.weights, ids, causal=_source.causal)
    return effect(intact, _source.ablated_output(layer + 1, head + 1), layer)


def _compute_effects(source: MiniLMSource) -> None:
    """Button callback work: 72 ablated forwards with a progress bar, then kept in the bounded store."""
    ids = np.array(source.model.encode(source.text).ids, dtype=np.int64)  # (T,)
    bar = st.progress(0.0, text="Knocking out every head…")
    effects = head_effects(
        source.model.weights,
        ids,
        causal=source.causal,
        on_progress=lambda done, total: bar.progress(done / total, text=f"Head {done} of {total} knocked out…"),
    )
    bar.empty()
    _effects.put(source.key, effects)


def minilm_ablation(settings: Settings, source: MiniLMSource) -> None:
    """Zero ablation: how much each later layer's maps move, and the embedding's cosine with its ablated self."""
    arch = source.architecture()
    st.subheader("Knock a head out", anchor=False)
    st.caption(source.supports("ablation").reason)
    chosen = choose_knockout(arch.n_layers, arch.n_heads)
    runs = source.runs()
    if chosen is not None:
        change, cos = _minilm_effect(source.key, chosen[0], chosen[1], source)
        later = [(m, change[m]) for m in range(len(runs)) if not np.isnan(change[m])]
        st.markdown(
            f"Without **{head_label(*chosen)}**: the sentence embedding's cosine with the intact one is "
            f"**{cos:.4f}** (1 = unchanged)."
        )
        if later:
            st.dataframe(
                pd.DataFrame({"layer": [m + 1 for m, _ in later], "share of weight that moves": [c for _, c in later]}),
                hide_index=True,
                height=table_height(len(later)),
                column_config={"share of weight that moves": st.column_config.NumberColumn(format="%.3f")},
            )
            st.caption(
                "Per later layer: how much of each query row's weight moves to other keys (half the sum of "
                "|w − w′| over the row: 0 = the same map, 1 = all of it), averaged over rows and heads. The "
                "knocked-out layer's own maps do not move: only what the head passes on is gone."
            )
        else:
            st.caption("The last layer: no later layer reads this head, so only the embedding can change.")
    effects = _stored_effects(source.key)
    if effects is None:
        total = arch.n_layers * arch.n_heads
        if st.button(
            f"Knock out every head ({total} forward passes)",
            key="ablate_all",
            icon=":material/table_chart:",
            help="Zero each head in turn on this sentence and tabulate both measures; it takes a few seconds and "
            "is kept for this sentence.",
        ):
            _compute_effects(source)
            effects = _stored_effects(source.key)
    if effects is not None:
        _effects_grids(settings, effects)


def _effects_grids(settings: Settings, effects: HeadEffects) -> None:
    with np.errstate(all="ignore"):
        later = np.nanmean(effects.change, axis=-1)  # (L, h): NaN for the last layer (nothing after it)
    moved = 1 - effects.cosine  # (L, h)
    for chart_key, values, title, bar, limits in (
        ("ablation_cosine_chart", moved, "embedding moved: 1 − cosine", "1 − cos", (0.0, float(moved.max()))),
        (
            "ablation_maps_chart",
            later,
            "later layers' maps moved (mean share)",
            "share",
            (0.0, float(np.nanmax(later))),
        ),
    ):
        st.plotly_chart(
            head_grid_figure(values, title, bar, limits=limits, presenter=settings.presenter),
            width="stretch",
            key=chart_key,
            config=chart_config(PLOTLY_CONFIG, chart_key),
        )
    worst = np.unravel_index(np.argmin(effects.cosine), effects.cosine.shape)
    st.caption(
        f"Each head zeroed in turn. The embedding moves most without {head_label(*worst)} (cosine "
        f"{effects.cosine[worst]:.4f}); the last layer has no later maps to move."
    )
    show_code(head_effects, "effects = head_effects(model.weights, ids)  # one ablated forward per head")


ABLATION_PANELS = {TrainedSource: trained_ablation, MiniLMSource: minilm_ablation}
"""How each kind of source shows its knockouts: the one place a source class meets its panel."""


def ablation_panel(settings: Settings, source: ModelSource) -> None:
    """The knockout panel for ``source``, or one line saying why it has none."""
    support = source.supports("ablation")
    panel = ABLATION_PANELS.get(type(source))
    if not support or panel is None:
        st.caption(f"Knock a head out: {support.reason} Try {support.instead}.")
        return
    panel(settings, source)


# --- predictions -------------------------------------------------------------------------------------------------


def choose_temperature() -> float:
    """The temperature control (URL key ``temperature``)."""
    return float(
        st.select_slider(
            "Temperature",
            TEMPERATURES,
            value=1.0,
            key="temperature",
            bind="query-params",
            help="The probabilities are softmax(logits / T): below 1 the top token takes more of the probability, "
            "above 1 the guesses spread out. The top token itself never changes.",
        )
    )


def predictions_table(tokens: tuple[str, ...], decode, prediction: Predictions, copies: np.ndarray) -> pd.DataFrame:
    """Position, input, predicted next token, its probability and, where the input repeats, the induction answer."""
    return pd.DataFrame(
        {
            "position": range(len(tokens)),
            "input": tokens,
            "predicted next": decode(prediction.token),
            "probability": prediction.probability,
            "after the earlier twin": [
                "" if c < 0 else s for c, s in zip(copies, decode(np.maximum(copies, 0)), strict=True)
            ],
        }
    )


def predictions_panel(settings: Settings, result: TrainResult, ids: np.ndarray, tokens: tuple[str, ...]) -> None:
    """The model's predicted next token and its probability at every position of ``ids (T,)``."""
    temperature = choose_temperature()
    logits = forward(result.params, result.settings.model, ids).logits  # (T, V)
    prediction = predictions(logits, temperature)
    decode = result.settings.task_info.decode
    copies = after_earlier_twin(ids)  # (T,) -1 where the token is new
    figure = shared_figures.charts_of(  # the same input on the same model: a room's followers share it
        result,
        ("predictions", tokens, tuple(ids.tolist()), prediction.temperature, settings.presenter),
        lambda: predictions_figure(
            tokens,
            tuple(decode(prediction.token)),
            prediction.probability,
            f"predicted next token and its probability at T = {prediction.temperature:g}",
            presenter=settings.presenter,
        ),
    )
    chart(figure, width="stretch", key="predictions_chart", config=PLOTLY_CONFIG)
    st.dataframe(
        predictions_table(tokens, decode, prediction, copies),
        hide_index=True,
        height=table_height(min(len(tokens), 12)),
        column_config={"probability": st.column_config.NumberColumn(format="%.3f")},
    )
    repeated = copies >= 0
    if repeated.any():
        hits = int((prediction.token[repeated] == copies[repeated]).sum())
        st.caption(
            f"At the {int(repeated.sum())} positions whose token appeared before, the model predicts the token that "
            f"followed its earlier twin at {hits}: what an induction head copies."
        )
    show_code(predictions, f"p = predictions(forward(params, config, ids).logits, temperature={temperature:g})")


# --- repeated random tokens --------------------------------------------------------------------------------------


def induction_panel(settings: Settings, source: TrainedSource) -> None:
    """Every head's induction score on a random sequence repeated twice."""
    tokens, scores = repeated_token_scores(source.result)  # (2n,), (L, h)
    n = len(tokens) // 2
    st.subheader("Repeated random tokens", anchor=False)
    symbols = " ".join(source.result.settings.task_info.decode(tokens[:n]))
    st.text(f"{n} random tokens, then the same {n} again:  {symbols} | {symbols}")
    best = np.unravel_index(np.argmax(scores), scores.shape)
    st.plotly_chart(
        head_bars_figure(
            scores,
            "induction score: mean weight on the token after the earlier occurrence",
            "mean weight",
            marked={tuple(int(i) for i in best)},
            y_range=(0.0, 1.1),  # a weight: the whole 0-1 scale, so a small score looks small
            presenter=settings.presenter,
        ),
        width="stretch",
        key="induction_chart",
        config=chart_config(PLOTLY_CONFIG, "induction_chart"),
    )
    st.caption(
        f"The standard diagnostic: on the second copy, an induction head looks at the token that followed the same "
        f"token in the first copy. Highest here: {head_label(*best)} at {scores[best]:.2f} (1 = all its weight); "
        f"chance, spread over every earlier key, would be about {np.mean(1 / np.arange(n + 1, 2 * n + 1)):.2f}."
    )
    show_code(repeated_token_scores, "tokens, scores = repeated_token_scores(trained)  # (2n,), (layers, heads)")


# --- why a score is high -----------------------------------------------------------------------------------------


def _position(picked: float, n: int) -> int:
    """A position box's value as a position 0..n-1: an address's larger one is read as the last."""
    return min(int(picked), n - 1)


def _after_softmax(mask: np.ndarray | None, query: int, key: int, t_k: int, weight: float) -> str:
    """What the softmax makes of the score: the key's weight among the keys this query sees, or that it is hidden."""
    if mask is not None and not mask[query, key]:
        return f"The mask hides this key from this query: its score becomes −∞ and its weight {weight:.3f}."
    seen = t_k if mask is None else int(mask[query].sum())  # the keys this query's softmax runs over
    keys = f"all {t_k} keys" if seen == t_k else f"the {seen} keys the mask lets this query see"
    keys = "the one key the mask lets this query see" if seen == 1 < t_k else keys
    keys = "the only key (one token)" if t_k == 1 else keys
    return f"After the softmax over {keys}, this key gets weight {weight:.3f} from this query."


def _probe_positions(t_q: int, t_k: int) -> tuple[int, int]:
    """The score probe's query and key positions, side by side (``probe_query``, ``probe_key``), 0-based."""
    left, right = st.columns(2)
    query = _position(
        left.number_input(
            "Query position",
            min_value=0,
            max_value=t_q - 1,
            value=0,
            step=1,
            key="probe_query",  # a literal key: tests/dashboard/test_links.py lists every bound control by its key
            bind="query-params",
            help="The row of the score matrix: the token that asks.",
        ),
        t_q,
    )
    key = _position(
        right.number_input(
            "Key position",
            min_value=0,
            max_value=t_k - 1,
            value=0,
            step=1,
            key="probe_key",
            bind="query-params",
            help="The column: the token being looked at.",
        ),
        t_k,
    )
    return query, key


def score_probe(settings: Settings, run: Run, head: int) -> None:
    """One query and one key of head ``head``: the products q_c · k_c, their sum, the scale and the score; the figure
    built once for the run, head, positions and projector, and shared (``shared_figures.charts_of``)."""
    tr = run.trace
    t_q, t_k = tr.scores.shape[-2:]
    st.subheader("Why a score is high", anchor=False)
    query, key = _probe_positions(t_q, t_k)
    terms = score_terms(tr, head, query, key)

    def build() -> go.Figure:
        return score_terms_figure(
            terms.products,
            f"head {head + 1}: q of {run.tokens[query]} ({query}) × k of {run.key_tokens[key]} ({key})",
            presenter=settings.presenter,
        )

    shown = ("score_probe", head, query, key, settings.presenter)  # all build reads besides the run
    figure = shared_figures.charts_of(run, shown, build)
    chart(figure, width="stretch", key="score_probe_chart", config=PLOTLY_CONFIG)
    d_k = terms.products.shape[0]
    positive = int((terms.products > 0).sum())
    bias = rf" + ({terms.bias + 0.0:.4g})_{{\text{{ALiBi}}}}" if tr.bias is not None else ""  # + 0.0: no "-0"
    show_equation(
        rf"q \cdot k = \sum_{{c=0}}^{{{d_k - 1}}} q_c k_c = {terms.dot:.4g}",
        rf"\text{{score}} = {terms.scale:.4g} \times {terms.dot:.4g}{bias} = {terms.score:.4g}",
    )
    if tr.kv_heads != tr.n_heads:
        st.caption(
            f"Shared keys: query head {head + 1} reads K head {terms.kv_head + 1} of {tr.kv_heads}, which "
            f"{tr.group} query heads share."
        )
    after = _after_softmax(tr.mask, query, key, t_k, terms.weight)
    st.caption(
        f"{positive} of the {d_k} dimensions add to the score (blue), {d_k - positive} take away (orange). {after}"
    )
    show_code(score_terms, f"terms = score_terms(result.trace, head={head}, query={query}, key={key})")

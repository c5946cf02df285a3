"""Permutation: reorder the words and compare the maps position by position.

Without positional encoding and without a mask, self-attention is permutation
equivariant: the reordered sentence's map is the original map with its rows and
columns reordered, so moving it back gives the original to rounding (~1e-16).
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from core import POSITIONAL_KINDS, AttentionConfig, PermutationResult, causal_mask, permutation_experiment
from core.pipeline import realign_rows
from core.pretrained.runs import permutation_layers
from dashboard import compute
from dashboard.figures import permutation_figure
from dashboard.figures.steps import vector_panel, vectors_figure
from dashboard.page import PLOTLY_CONFIG, choose_head, minilm_ready, show_code, tokens_or_message
from dashboard.settings import MAX_SEED, Settings, head_options

TOLERANCE = 1e-9
"""Float64 rounding leaves ~1e-16; any real dependence on order is many orders of magnitude larger."""
MODES = ("reverse", "shuffle", "retype")
"""Labels and URL values of ``perm_mode``: backwards, a seeded shuffle, or the same words typed in another order."""

SAME = "Same map, reordered. Attention alone cannot see word order: moving the words only moves rows and columns."
WHY_POSITIONS = (
    "A positional encoding adds a different vector at each position, so a word that moves gets a different "
    "vector, and its queries, keys and values change."
)
WHY_ROPE = (
    "RoPE rotates each query and key by its position, so a score depends on how far apart two words are, "
    "and reordering changes those distances."
)
WHY_MASK = (
    "The causal mask depends on positions: query i sees keys 0..i only, so after reordering a word sees a "
    "different set of words."
)


def _choose_permutation(tokens: tuple[str, ...], pieces: bool = False) -> tuple[int, ...] | None:
    """The reordering widgets; returns a permutation of 0..T-1, or None after a message.

    ``pieces``: the tokens are MiniLM's WordPiece pieces, so retyped text is split the same way.
    """
    mode = st.segmented_control(
        "Reordering",
        MODES,
        default="reverse",
        required=True,
        key="perm_mode",
        bind="query-params",
        help="reverse: read the sentence backwards; shuffle: a random order with its own seed; "
        "retype: type the same words in another order yourself.",
    )
    if mode == "shuffle":
        seed = st.number_input(
            "Shuffle seed",
            min_value=0,
            max_value=MAX_SEED,
            value=0,
            key="perm_seed",
            bind="query-params",
            help="Its own seed: it changes the shuffle, not the model.",
        )
        return compute.random_permutation(len(tokens), int(seed))
    if mode == "retype":
        typed_text = st.text_input(
            "The same words in another order",
            key="perm_text",
            bind="query-params",
            help='e.g. "dog bites man" for "man bites dog". It must use exactly the same words.',
        )
        if not typed_text.strip():
            st.info("Type the sentence's words in another order (for example backwards) to compare.")
            return None
        typed = tokens_or_message(typed_text)
        if typed is None:
            return None
        if pieces:
            typed = compute.minilm_encoding(typed_text).tokens[1:-1]  # without [CLS] and [SEP]
        perm = compute.typed_permutation(tokens, typed)
        if perm is None:
            st.warning(
                f"That is not a rearrangement of the sentence: it has {len(typed)} tokens against "
                f"{len(tokens)}, or different words. Use each word of the sentence exactly once."
            )
        return perm
    return compute.reverse_permutation(len(tokens))


def _pickers(settings: Settings, tokens: tuple[str, ...], pieces: bool = False) -> tuple[int, tuple[int, ...] | None]:
    """The head (0-based) and the reordering, side by side, so the maps start on a projector's first screen."""
    left, right = st.columns([2, 1])
    k = choose_head(
        settings.config.n_heads,
        key="perm_head",
        bind="query-params",
        help="The difference below is over all heads; the maps show this one.",
        container=right,
    )
    with left:
        return k, _choose_permutation(tokens, pieces=pieces)


def _maps(result: PermutationResult, k: int, tokens: tuple[str, ...], settings: Settings) -> None:
    """Head ``k``'s three maps: the original order, the reordered sentence, and its map moved back."""
    st.plotly_chart(
        permutation_figure(
            result.weights[k],
            result.permuted_weights[k],
            result.realigned[k],
            tokens,
            tuple(int(p) for p in result.permutation),
            causal_mask(len(tokens)) if settings.config.causal else None,
            presenter=settings.presenter,
        ),
        width="stretch",
        key="permutation_chart",
        config=PLOTLY_CONFIG,
    )


def _verdict(diff: float, config: AttentionConfig) -> tuple[bool, str]:
    """(order visible?, one plain sentence saying why)."""
    if diff <= TOLERANCE:
        return False, SAME
    reasons = {"none": [], "rope": [WHY_ROPE]}.get(config.positional, [WHY_POSITIONS])
    reasons += [WHY_MASK] if config.causal else []
    return True, "Different maps: word order now matters. " + " ".join(reasons)


def _breakers(tokens: tuple[str, ...], perm: tuple[int, ...], config: AttentionConfig) -> pd.DataFrame:
    """The same reordering under the symmetric setting and under each thing that breaks it."""
    cases = [("no positional encoding, no mask", replace(config, positional="none", causal=False))]
    cases += [
        (f"{kind} positional encoding", replace(config, positional=kind, causal=False))
        for kind in POSITIONAL_KINDS
        if kind != "none" and config.n_heads in head_options(config.d_model, kind)  # RoPE needs an even d_k
    ]
    cases.append(("causal mask", replace(config, positional="none", causal=True)))
    rows = []
    for label, cfg in cases:
        diff = compute.permutation_run(tokens, perm, cfg).max_abs_diff
        rows.append((label, f"{diff:.2e}", "yes" if diff > TOLERANCE else "no"))
    return pd.DataFrame(rows, columns=["setting", "max |difference|", "order visible?"])


def render(settings: Settings) -> None:
    if settings.config.weights == "minilm":
        render_pretrained(settings)
        return
    tokens = tokens_or_message(settings.sentence)
    if tokens is None:
        return
    k, perm = _pickers(settings, tokens)
    if perm is None:
        return
    if perm == tuple(range(len(tokens))):
        st.info("This reordering leaves every word in place: pick another one to see anything move.")
    config = settings.config
    result = compute.permutation_run(tokens, perm, config)
    _maps(result, k, tokens, settings)
    visible, sentence = _verdict(result.max_abs_diff, config)
    every = "all heads" if config.n_heads > 1 else "the one head"
    st.metric(f"max |original − moved back|, {every}", f"{result.max_abs_diff:.2e}")
    (st.warning if visible else st.success)(sentence)
    show_code(
        permutation_experiment,
        f"result = permutation_experiment(tokenize({settings.sentence!r}), {list(perm)!r}, {config!r})",
    )
    _outputs(result, tokens, settings.presenter)
    st.subheader("What breaks the symmetry")
    st.caption("The same reordering, with the other settings as in the sidebar.")
    st.dataframe(_breakers(tokens, perm, config), hide_index=True, width="stretch")
    st.markdown(f"- {WHY_POSITIONS}\n- {WHY_ROPE}\n- {WHY_MASK}")


EQUIVARIANT = (
    "Permutation equivariance: the output of the reordered sentence is the original output with its rows "
    "reordered the same way, attention(P X) = P attention(X). Each word keeps its own output vector, wherever "
    "it stands; moved back, the rows match to rounding."
)
NOT_EQUIVARIANT = (
    "Not equivariant here: moved back, the reordered sentence's output rows differ from the original's, so "
    "attention(P X) ≠ P attention(X). Order reaches the output, not only the maps."
)


def _outputs(result: PermutationResult, tokens: tuple[str, ...], presenter: bool) -> None:
    """The output rows compared as the maps are: original, reordered and moved back, and their difference."""
    st.subheader("The output rows", anchor=False)
    same = result.output_diff <= TOLERANCE
    st.metric("max |original output − moved-back output|", f"{result.output_diff:.2e}")
    (st.success if same else st.warning)(EQUIVARIANT if same else NOT_EQUIVARIANT)
    difference = abs(result.output - result.realigned_output)  # (T, d_model)
    st.plotly_chart(
        vectors_figure(
            [
                vector_panel(result.output, tokens, "output of the sentence"),
                vector_panel(result.realigned_output, tokens, "output of the reordered sentence, rows moved back"),
                vector_panel(difference, tokens, "|difference|"),
            ],
            ncols=1,
            presenter=presenter,
        ),
        width="stretch",
        key="permutation_output_chart",
        config=PLOTLY_CONFIG,
    )
    show_code(realign_rows, "moved_back = realign_rows(permuted_run.trace.output, permutation)  # (T, d_model)")


LEARNED_POSITIONS = (
    "Different maps: MiniLM adds a learned position vector to every piece, so a piece that moves is a "
    "different input, and the model's heads (many of them attend by position) draw a different map."
)


def render_pretrained(settings: Settings) -> None:
    """The pretrained model: reorder the pieces between [CLS] and [SEP] and compare, layer by layer."""
    if tokens_or_message(settings.sentence) is None or not minilm_ready():
        return
    tokens = compute.minilm_encoding(settings.sentence).tokens  # (T,) with [CLS] and [SEP]
    if len(tokens) < 4:
        st.info("Reordering needs at least two pieces between [CLS] and [SEP]: type a longer sentence.")
        return
    k, inner = _pickers(settings, tokens[1:-1], pieces=True)
    if inner is None:
        return
    results = compute.minilm_permutation(settings.sentence, inner, settings.config.causal)
    result = results[settings.layer - 1]
    _maps(result, k, tokens, settings)
    st.metric(f"max |original − moved back|, layer {settings.layer}, all heads", f"{result.max_abs_diff:.2e}")
    changed = LEARNED_POSITIONS + (" " + WHY_MASK if settings.config.causal else "")
    (st.warning if result.max_abs_diff > TOLERANCE else st.success)(
        changed if result.max_abs_diff > TOLERANCE else SAME
    )
    show_code(
        permutation_layers,
        f"results = permutation_layers(load_minilm(), {settings.sentence!r}, {list(inner)!r})  # one per layer",
    )
    st.caption("[CLS] and [SEP] stay first and last, where the model always has them; the pieces between move.")
    _outputs(result, tokens, settings.presenter)
    rows = [(f"layer {i + 1}", f"{r.max_abs_diff:.2e}") for i, r in enumerate(results)]
    st.dataframe(pd.DataFrame(rows, columns=["layer", "max |difference|"]), hide_index=True, width="stretch")

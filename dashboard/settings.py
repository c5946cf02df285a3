"""The sidebar: widgets in, one frozen ``Settings`` out.

Every widget's ``key`` is also its URL query parameter (``bind="query-params"``),
so a teacher's link reproduces the exact view. Streamlit drops a URL value its
widget cannot take (``d_model=7``, ``seed=abc``, ``n_heads=3`` with d_model 64)
and keeps the default; ``url_notes`` says so on the page instead of silently.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from core import MAX_CHARS, MAX_TOKENS, POSITIONAL_KINDS, WEIGHT_KINDS, AttentionConfig
from core import head_counts
from dashboard.toy_weights import WEIGHT_PROMISES

D_MODELS = (8, 16, 32, 64, 128, 256, 512)
"""Model widths offered: powers of two, so every width has head counts 1, 2, 4, 8."""
MAX_HEADS = 16
"""The heads grid stays readable up to 16 panels (4 × 4)."""
MAX_SEED = 99_999
"""Seeds are bounded so a URL cannot carry an unbounded integer."""


@dataclass(frozen=True)
class Settings:
    """What the teacher chose; hashable, so compute functions can cache on it."""

    sentence: str = "The bank of the river gave a loan"
    """The course's example: "bank" has a river sense and a money sense in one sentence."""
    d_model: int = 64
    """64 gives d_k = 16 at 4 heads: small enough to read the shapes table aloud."""
    n_heads: int = 4
    """Four 8×8 maps fit side by side on a projector and already differ visibly."""
    causal: bool = False
    """Off: the full square map is the first thing to explain; the mask comes next."""
    positional: str = "none"
    """Off: the two "the" get identical rows and columns, the bag-of-tokens point."""
    seed: int = 18
    """With these random weights, head 1 happens to link "bank" to "river" and head 2 "bank" to "loan"
    (the course's two senses); a trained model learns such heads, here it is chance, and the seed says so."""
    weights: str = "random"
    """Random first: patterns exist; then "identity" and "previous" show weights *making* a pattern."""
    presenter: bool = False
    """Off: laptop-sized figures. On, for a projector: larger type and cells in the figures and the view's line
    as a heading. Other page text keeps its size: only raw CSS (unsafe HTML, banned here) or the server-wide
    theme could change it, so the toggle's help points to the browser's zoom."""
    scaled: bool = True
    """On, as every transformer does; off shows the heads collapse toward one-hot (the "why ÷√d_k" lesson)."""

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    @property
    def config(self) -> AttentionConfig:
        return AttentionConfig(
            d_model=self.d_model,
            n_heads=self.n_heads,
            causal=self.causal,
            positional=self.positional,
            seed=self.seed,
            weights=self.weights,
            scaled=self.scaled,
        )


DEFAULTS = Settings()
KEYS = ("sentence", "d_model", "n_heads", "causal", "positional", "seed", "weights", "presenter", "scaled")
"""Widget keys, equal to the URL query parameters."""


def head_options(d_model: int, positional: str = "none", weights: str = "random") -> list[int]:
    """Head counts offered: divisors of ``d_model`` up to ``MAX_HEADS`` that core accepts
    (RoPE needs an even d_k, the previous-token head d_k >= 4)."""
    return [h for h in head_counts(d_model, positional, weights) if h <= MAX_HEADS]


def nearest_heads(n_heads: int, options: list[int]) -> int:
    """The valid head count closest to ``n_heads`` (the smaller one on a tie)."""
    return min(options, key=lambda h: (abs(h - n_heads), h))


def _keep_heads_valid(d_model: int, positional: str, weights: str) -> list[int]:
    """Before the heads widget exists: move a head count that is no longer valid to the nearest valid one."""
    options = head_options(d_model, positional, weights)
    current = st.session_state.get("n_heads")
    if current is not None and current not in options:
        st.session_state["n_heads"] = nearest_heads(current, options)
    return options


def sidebar() -> Settings:
    """Draw the controls in the sidebar and return the chosen settings."""
    with st.sidebar:
        st.header("Attention Lab")
        sentence = st.text_input(
            "Sentence",
            value=DEFAULTS.sentence,
            key="sentence",
            bind="query-params",
            help=f"Any text up to {MAX_TOKENS} tokens ({MAX_CHARS} characters). It is lower-cased and split "
            "into words, numbers, punctuation marks and emoji.",
        )
        positional = st.segmented_control(
            "Positional encoding",
            POSITIONAL_KINDS,
            default=DEFAULTS.positional,
            required=True,
            key="positional",
            bind="query-params",
            help="sinusoidal and learned add a vector per position to the embeddings; rope rotates each head's "
            "queries and keys by their position. With none, word order is invisible to attention.",
        )
        weights = st.segmented_control(
            "Weights",
            WEIGHT_KINDS,
            default=DEFAULTS.weights,
            required=True,
            key="weights",
            bind="query-params",
            help="random: seeded W_Q, W_K, W_V, W_O. identity and previous are built by hand to draw a "
            "known pattern: look-alikes, or the previous token.",
        )
        st.caption(WEIGHT_PROMISES.get(weights, ""))
        d_model = st.selectbox(
            "d_model (width of each token vector)",
            D_MODELS,
            index=D_MODELS.index(DEFAULTS.d_model),
            key="d_model",
            bind="query-params",
            help="Every token becomes a vector of d_model numbers; the heads share them out.",
        )
        options = _keep_heads_valid(d_model, positional, weights)
        n_heads = st.segmented_control(
            "Heads",
            options,
            default=nearest_heads(DEFAULTS.n_heads, options),
            required=True,
            key="n_heads",
            bind="query-params",
            help="Only head counts that divide d_model are offered (each head gets d_k = d_model / h columns); "
            "RoPE also needs an even d_k, and the previous-token head d_k >= 4.",
        )
        causal = st.toggle(
            "Causal mask",
            value=DEFAULTS.causal,
            key="causal",
            bind="query-params",
            help="As in a decoder (GPT): each token may attend only to itself and the tokens before it.",
        )
        scaled = st.toggle(
            "Scale scores by 1/√d_k",
            value=DEFAULTS.scaled,
            key="scaled",
            bind="query-params",
            help="Divide QKᵀ by √d_k before the softmax, as every transformer does. Turn it off to see the "
            "heads collapse toward one-hot: unscaled scores grow like √d_k.",
        )
        seed = st.number_input(
            "Seed",
            min_value=0,
            max_value=MAX_SEED,
            value=DEFAULTS.seed,
            step=1,
            key="seed",
            bind="query-params",
            help="Fixes the random embeddings and weight matrices: the same seed always gives the same maps.",
        )
        presenter = st.toggle(
            "Presenter mode",
            value=DEFAULTS.presenter,
            key="presenter",
            bind="query-params",
            help="For a projector: larger type and cells in every figure, fewer panels per row. "
            "For the rest of the page use the browser's zoom (Ctrl or Cmd and +).",
        )
    return Settings(
        sentence=sentence,
        d_model=int(d_model),
        n_heads=int(n_heads),
        causal=bool(causal),
        positional=str(positional),
        seed=int(seed),
        weights=str(weights),
        presenter=bool(presenter),
        scaled=bool(scaled),
    )

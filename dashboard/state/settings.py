"""The sidebar: widgets in, one frozen ``Settings`` out.

Every widget's ``key`` is also its URL query parameter (``bind="query-params"``),
so a teacher's link reproduces the exact view. A URL value a widget cannot take
(``d_model=7``, ``seed=abc``, ``n_heads=3`` with d_model 64, ``n_heads=``) is
replaced by ``url_state`` before the widgets exist, and said on the page.

The keys are declared once: ``SETTING_KEYS`` are the fields of ``AttentionConfig``
plus the page's own (``sentence``, ``presenter``), and ``VIEW_KEYS`` the controls
that one view draws. Adding a key is one line in one of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

import streamlit as st

from core import MAX_CHARS, MAX_TOKENS, POSITIONAL_KINDS, AttentionConfig, head_counts
from core.sources import SOURCES, WEIGHTS, Architecture, ModelSource, Support, source_class
from core.training import MAX_STEPS, SAFE_LRS, TASK_NAMES, ModelConfig, TrainSettings, recommended
from dashboard.page.weight_notes import WEIGHT_PROMISES
from dashboard.state.session import set_values

D_MODELS = (8, 16, 32, 64, 128, 256, 512)
"""Model widths offered: powers of two, so every width has head counts 1, 2, 4, 8."""
MAX_HEADS = 16
"""The heads grid stays readable up to 16 panels (4 × 4)."""
MAX_SEED = 99_999
"""Seeds are bounded so a URL cannot carry an unbounded integer."""

DEFAULT_CONFIG = AttentionConfig(
    d_model=64,  # d_k = 16 at 4 heads: small enough to read the shapes table aloud
    n_heads=4,  # four 8×8 maps fit side by side on a projector and already differ visibly
    causal=False,  # the full square map is the first thing to explain; the mask comes next
    positional="none",  # the two "the" get identical rows and columns: the bag-of-tokens point
    # With these random weights, head 1 happens to link "bank" to "river" and head 2 "bank" to "loan"
    # (the course's two senses); a trained model learns such heads, here it is chance, and the page says so.
    seed=18,
    scaled=True,  # as every transformer does; off shows the heads collapse toward one-hot
    weights="random",  # patterns exist first; then "identity" and "previous" show weights *making* one
)


@dataclass(frozen=True)
class Settings:
    """What the teacher chose: the model's settings plus the page's own; hashable, so it can key a cache."""

    sentence: str = "The bank of the river gave a loan"
    """The course's example: "bank" has a river sense and a money sense in one sentence."""
    config: AttentionConfig = field(default=DEFAULT_CONFIG)
    """Everything core needs to compute random or hand-built maps (for learned weights: random ones of their
    shape, for the views those weights cannot serve)."""
    weights: str = DEFAULT_CONFIG.weights
    """The weights control: which model source draws the maps (``core.sources.SOURCES``)."""
    layer: int = 1
    """Which layer's heads a learned model shows (MiniLM has 6); the first is where position heads live."""
    task: str = "shift"
    """What a trained model learns (weights=trained): shift is the fastest to learn and the easiest to read."""
    train_layers: int = 1
    """Layers of the trained model: 2 are needed for the induction head."""
    train_steps: int = 150
    """Adam steps; each task's recommendation reaches 99% held-out accuracy within its own."""
    lr: float = 0.003
    """Adam's learning rate: 3e-3 was stable at every recommended setting (1e-2 diverged)."""

    @property
    def training(self) -> TrainSettings:
        """What the train view trains and weights=trained shows: the sidebar's model and the task's controls."""
        c = self.config
        model = ModelConfig(
            d_model=c.d_model, n_heads=c.n_heads, n_layers=self.train_layers, positional=c.positional, causal=c.causal
        )
        return TrainSettings(task=self.task, model=model, steps=self.train_steps, lr=self.lr, seed=c.seed)

    @property
    def kind(self) -> type[ModelSource]:
        """The kind of model source the weights control chose: ask it what it supports."""
        return source_class(self.weights)

    presenter: bool = False
    """Off: laptop-sized figures. On, for a projector: larger type and cells in the figures and the view's line
    as a heading. Other page text keeps its size: only raw CSS (unsafe HTML, banned here) or the server-wide
    theme could change it, so the toggle's help points to the browser's zoom."""


DEFAULTS = Settings()
SETTING_KEYS = tuple(  # "weights" is a field of both: one key
    dict.fromkeys(
        (*(f.name for f in fields(AttentionConfig)), *(f.name for f in fields(Settings) if f.name != "config"))
    )
)
"""The sidebar's widget keys: every ``AttentionConfig`` field and the page's own fields, one key each."""
VIEW_KEYS = (
    "view",  # the view selector above the page
    "average",  # heads: the average-over-heads toggle
    "perm_mode",  # permutation: reverse, shuffle or typed
    "perm_seed",  # permutation: the shuffle's seed
    "perm_text",  # permutation: the reordering the student typed
    "perm_head",  # permutation: which head
    "step_head",  # steps: which head
    "first_step",  # steps: the step the page starts at (the ones before it left out)
    "batch",  # shapes: how many sequences in the batch (B)
    "head",  # model: the head opened large
    "one_layer",  # model: only the sidebar's layer, one large map per head
    "one_head",  # model: only the head chosen, large (no overview)
    "values",  # heads: write each weight in its cell
    "shift",  # positions: how far every position moves
    "shift_head",  # positions: which head
    "source",  # cross: the sentence keys and values come from
    "replay_step",  # train: the snapshot step the replay shows
    "cache_step",  # kv_cache: the generation step t shown
    "cache_head",  # kv_cache: the K/V head whose cache is drawn (more than CACHE_HEADS_DRAWN K/V heads)
    "block_size",  # flash: B_c, the keys per block
    "block",  # flash: the block shown
    "flash_head",  # flash: which head is tiled
    "ablate",  # train, model: the head knocked out ("L2 H1", or "none")
    "ablate_mode",  # train, model: a trained model's knocked-out head gives zeros or its held-out mean
    "temperature",  # train: softmax(logits / T) of the predictions
    "probe_query",  # steps: the query position of "Why a score is high"
    "probe_key",  # steps: its key position
    "room",  # classroom: the room code a student follows (never the teacher key)
    "quiz",  # heads, model: predict, then reveal (dashboard/classroom/quiz_panel.py)
    "quiz_question",  # heads, model: which of the run's questions (in the URL, so a room shares it)
    "class_text",  # class: the sentences, one per line
    "class_head",  # class: which head
    "second",  # contrast: the second sentence of the pair (the sidebar's is the first)
    "contrast_head",  # contrast: which head
    "tour",  # every view: the guided tour being given (dashboard/classroom/tours.py)
    "tour_step",  # every view: the tour's step, from 1
)
"""Controls a single view draws; each is bound to the query parameter of the same name."""
LINK_KEYS = frozenset((*SETTING_KEYS, *VIEW_KEYS))
"""Every URL key: the widgets bound to the URL and ``OWNED_KEYS``; tests/dashboard checks this list against the
source."""
OWNED_KEYS = ("view", "tour")
"""URL keys whose controls are not bound: the page writes them itself (``dashboard/state/address.py``), so that each
change is one entry in the browser's history (a bound control's change replaces the entry) and the tour picker
can show titles (a bound picker writes the text it shows)."""


def head_options(d_model: int, positional: str = "none", weights: str = "random") -> list[int]:
    """Head counts offered: the ones core allows for these settings, up to ``MAX_HEADS``."""
    return [h for h in head_counts(d_model, positional, weights) if h <= MAX_HEADS]


def nearest_heads(n_heads: int, options: list[int]) -> int:
    """The valid head count closest to ``n_heads`` (the smaller one on a tie)."""
    return min(options, key=lambda h: (abs(h - n_heads), h))


def settings_from(values: Mapping[str, object]) -> Settings:
    """The settings of a page whose keys hold ``values`` (``url_state.read``'s context: every key valid for the
    others). The one place the page's settings are made: the sidebar's page, a following student's (the room's
    address), a tour step's and a test's all read their address and call this. A variant the weights cannot run is
    off, and scaling stays on where the weights have no unscaled run (the page says why)."""
    weights = str(values["weights"])
    kind = source_class(weights)
    d_model, n_heads = int(values["d_model"]), int(values["n_heads"])  # a pretrained model's own, when it fixes them
    layered = kind.ARCHITECTURE is not None or (kind.TRAINS and int(values["train_layers"]) > 1)
    task = {k: values[k] for k in TRAIN_KEYS} if kind.TRAINS or values["view"] == "train" else {}
    grouped, windowed, prefixed, biased = (kind.supports(k) for k in ("kv_heads", "window", "prefix", "alibi"))
    kv_heads = int(values["kv_heads"]) if grouped else n_heads
    config = AttentionConfig(
        d_model=d_model,
        n_heads=n_heads,
        positional=str(values["positional"]),
        causal=bool(values["causal"]),
        seed=int(values["seed"]),
        scaled=bool(values["scaled"]) or not kind.supports("unscaled"),
        weights=kind.config_weights(weights),
        kv_heads=None if kv_heads == n_heads else kv_heads,
        window=int(values["window"]) if windowed else 0,
        prefix=int(values["prefix"]) if prefixed else 0,
        alibi=bool(values["alibi"]) and bool(biased),
    )
    return Settings(
        sentence=str(values["sentence"]),
        config=config,
        weights=weights,
        layer=int(values["layer"]) if layered else 1,
        presenter=bool(values["presenter"]),
        **task,
    )


def sidebar(values: Mapping[str, object], defaults: Mapping[str, object]) -> None:
    """Draw the controls in the sidebar (call it inside ``st.sidebar``). Each starts from ``values`` (the page's,
    already in its state: ``url_state.settle``) and has ``defaults`` as its default, so the browser writes a key to
    the address exactly when the page does: when it differs from the default the address implies."""
    kind = source_class(str(values["weights"]))
    _sentence_input()
    _weights()
    if kind.ARCHITECTURE is not None:
        _fixed_shape(kind.ARCHITECTURE)
    else:
        _positional(defaults)
        _width_and_heads(values, defaults)
    if kind.TRAINS or values["view"] == "train":
        _training_controls(defaults)
        if kind.TRAINS and int(values["train_layers"]) > 1:
            _layer(int(values["train_layers"]))
    _switches(kind, defaults)
    _variants(kind, values, defaults)


TRAIN_KEYS = ("task", "train_layers", "train_steps", "lr")
"""The training controls' keys (``_training_controls``), each a field of ``Settings``."""


def _sentence_input() -> None:
    st.text_input(
        "Sentence",
        value=DEFAULTS.sentence,
        key="sentence",
        bind="query-params",
        help=f"Any text up to {MAX_TOKENS} tokens ({MAX_CHARS} characters). It is lower-cased and split "
        "into words, numbers, punctuation marks and emoji.",
    )


def _weights() -> None:
    """The weights, with a caption of what they promise."""
    weights = st.segmented_control(
        "Weights",
        WEIGHTS,
        default=DEFAULT_CONFIG.weights,
        required=True,
        key="weights",
        bind="query-params",
        help="random: seeded W_Q, W_K, W_V, W_O. identity and previous are built by hand to draw a known "
        "pattern: look-alikes, or the previous token. minilm: a pretrained model's real heads.",
    )
    st.caption(WEIGHT_PROMISES.get(weights, ""))


def _positional(defaults: Mapping[str, object]) -> None:
    st.segmented_control(
        "Positional encoding",
        POSITIONAL_KINDS,
        default=defaults["positional"],
        required=True,
        key="positional",
        bind="query-params",
        help="sinusoidal and learned add a vector per position to the embeddings; rope rotates each head's "
        "queries and keys by their position. With none, attention sees word order only through a causal mask or "
        "ALiBi's bias.",
    )


def fixed_shape(fixed: Architecture) -> dict:
    """The ``AttentionConfig`` fields an architecture fixes: d_model, heads and positions."""
    return dict(d_model=fixed.d_model, n_heads=fixed.n_heads, positional=fixed.positional)


def _fixed_shape(fixed: Architecture) -> None:
    """A pretrained model's fixed d_model, heads and positions (said, not offered), and the layer to show."""
    st.caption(
        f"d_model = {fixed.d_model}, {fixed.n_heads} heads, {fixed.positional} positions: "
        "fixed by the pretrained model, whose weights were trained with exactly these shapes."
    )
    _layer(fixed.n_layers)


def _layer(n_layers: int) -> None:
    """Which layer of a learned model the views show."""
    st.segmented_control(
        "Layer",
        list(range(1, n_layers + 1)),
        default=1,
        required=True,
        key="layer",
        bind="query-params",
        help=f"The model stacks {n_layers} attention layers, each with its own heads; every view shows this one.",
    )


TRAIN_STEPS = (50, 100, 150, 200, 300, 400, 500, 750, 1000, 1500, MAX_STEPS)
"""Step caps offered: each task's recommendation is one of them, and none exceeds core's cap."""


def widget_state(training: TrainSettings) -> dict:
    """The sidebar's widget values that give ``training``, by widget key (the inverse of ``Settings.training``)."""
    m = training.model
    return dict(
        d_model=m.d_model,
        n_heads=m.n_heads,
        causal=m.causal,
        positional=m.positional,
        seed=training.seed,
        train_layers=m.n_layers,
        train_steps=training.steps,
        lr=training.lr,
    )


def recommended_state(task: str) -> dict:
    """The widget values of a task's recommended settings, by widget key."""
    return widget_state(recommended(task))


def trains(weights: str | None) -> bool:
    """True when ``weights`` (a link's or a tour's value, perhaps not a valid one) is the train view's model."""
    kind = SOURCES.get(weights or "")
    return kind is not None and kind.TRAINS


def _use_recommended() -> None:
    """Task callback: a new task starts from its recommended settings."""
    set_values(**recommended_state(st.session_state["task"]))


def _training_controls(defaults: Mapping[str, object]) -> None:
    """Task, layers, steps and learning rate of the model the train view trains."""
    st.segmented_control(
        "Task",
        TASK_NAMES,
        default=DEFAULTS.task,
        required=True,
        key="task",
        bind="query-params",
        on_change=_use_recommended,
        help="What the tiny transformer learns: shift (copy the previous token), reverse, sort, or induction "
        "(continue a repeated block). Choosing a task fills in its recommended settings.",
    )
    st.segmented_control(
        "Layers",
        (1, 2),
        default=defaults["train_layers"],
        required=True,
        key="train_layers",
        bind="query-params",
        help="Induction needs 2: one head finds the previous token, the next uses it to copy.",
    )
    st.selectbox(
        "Training steps",
        TRAIN_STEPS,
        index=TRAIN_STEPS.index(defaults["train_steps"]),
        key="train_steps",
        bind="query-params",
        help=f"Adam steps of 64 sequences each, at most {MAX_STEPS}.",
    )
    st.segmented_control(
        "Learning rate",
        SAFE_LRS,
        default=defaults["lr"],
        required=True,
        key="lr",
        bind="query-params",
        help="Only rates that trained stably here are offered: 1e-2 diverged in 5 of 12 runs without LayerNorm.",
    )


def _width_and_heads(values: Mapping[str, object], defaults: Mapping[str, object]) -> None:
    """d_model, then a head count among those core allows for it (``settle`` moves it to the nearest when d_model
    changes)."""
    st.selectbox(
        "d_model (width of each token vector)",
        D_MODELS,
        index=D_MODELS.index(defaults["d_model"]),
        key="d_model",
        bind="query-params",
        help="Every token becomes a vector of d_model numbers; the heads share them out.",
    )
    weights = source_class(str(values["weights"])).config_weights(str(values["weights"]))
    st.segmented_control(
        "Heads",
        head_options(int(values["d_model"]), str(values["positional"]), weights),
        default=defaults["n_heads"],
        required=True,
        key="n_heads",
        bind="query-params",
        help="Only head counts that divide d_model are offered (each head gets d_k = d_model / h columns); "
        "RoPE also needs an even d_k, and the previous-token head d_k >= 4.",
    )


def _switches(kind: type[ModelSource], defaults: Mapping[str, object]) -> None:
    """Causal mask, scaling, seed and presenter mode; a switch the source cannot serve is disabled, saying why."""
    masked, unscaled, reseeded = kind.supports("causal"), kind.supports("unscaled"), kind.supports("seed")
    st.toggle(
        "Causal mask (an experiment: this encoder reads both ways)" if masked.reason else "Causal mask",
        value=defaults["causal"],
        key="causal",
        bind="query-params",
        help=masked.reason or "As in a decoder (GPT): each token may attend only to itself and the tokens before it.",
    )
    st.toggle(
        "Scale scores by 1/√d_k",
        value=defaults["scaled"],
        key="scaled",
        bind="query-params",
        disabled=not unscaled,
        help=f"{unscaled.reason} It stays on."
        if not unscaled
        else "Divide QKᵀ by √d_k before the softmax, as every transformer does. Turn it off to see the "
        "heads collapse toward one-hot: unscaled scores grow like √d_k.",
    )
    st.number_input(
        "Seed",
        min_value=0,
        max_value=MAX_SEED,
        value=defaults["seed"],
        step=1,
        key="seed",
        bind="query-params",
        disabled=not reseeded,
        help=reseeded.reason
        or "Fixes the random embeddings and weight matrices (and a trained model's start): the same seed always "
        "gives the same maps.",
    )
    st.toggle(
        "Presenter mode",
        value=defaults["presenter"],
        key="presenter",
        bind="query-params",
        help="For a projector: larger type and cells in every figure, fewer panels per row. "
        "For the rest of the page use the browser's zoom (Ctrl or Cmd and +).",
    )


def kv_head_options(n_heads: int) -> list[int]:
    """K/V head counts offered for ``n_heads`` query heads: its divisors (1 is multi-query, n_heads multi-head)."""
    return [kv for kv in range(1, n_heads + 1) if n_heads % kv == 0]


def _token_count(label: str, *, key: str, bind: str, supported: Support, help: str) -> None:
    """A number of tokens, 0 (off) to ``MAX_TOKENS``; disabled, with the source's reason as its help, when the
    source cannot run it. ``key`` and ``bind`` go to the widget as they are (callers write both out, so the check
    of URL-bound keys against ``LINK_KEYS`` finds them at the call)."""
    st.number_input(
        label,
        min_value=0,
        max_value=MAX_TOKENS,
        value=0,
        step=1,
        key=key,
        bind=bind,
        disabled=not supported,
        help=supported.reason or help,
    )


def _variants(kind: type[ModelSource], values: Mapping[str, object], defaults: Mapping[str, object]) -> None:
    """Today's variants: K/V heads, a sliding window, a prefix, ALiBi; one the source cannot run is disabled, saying
    why (and runs off: ``settings_from``)."""
    st.subheader("Today's variants", divider="gray")
    grouped, windowed, prefixed, biased = (kind.supports(k) for k in ("kv_heads", "window", "prefix", "alibi"))
    n_heads, causal, positional = int(values["n_heads"]), bool(values["causal"]), str(values["positional"])
    st.segmented_control(
        "K/V heads",
        kv_head_options(n_heads),
        default=defaults["kv_heads"],
        required=True,
        key="kv_heads",
        bind="query-params",
        disabled=not grouped,
        help=grouped.reason
        or f"Grouped-query attention (Llama 3, Mistral): each group of {n_heads} / kv_heads query heads shares one "
        f"K and V. {n_heads} is multi-head attention, 1 multi-query; fewer K/V heads, a smaller KV cache.",
    )
    _token_count(
        "Sliding window (tokens, 0 = off)",
        key="window",
        bind="query-params",
        supported=windowed,
        help="Mistral's sliding window: with the causal mask query i sees keys i-w+1..i; without it, keys with "
        "|i - j| < w.",
    )
    _token_count(
        "Prefix (tokens, 0 = off)",
        key="prefix",
        bind="query-params",
        supported=prefixed,
        help="A prefix-LM: with the causal mask the first p tokens see each other both ways, the rest stay causal. "
        "Without the causal mask every key is visible already, so it changes nothing.",
    )
    if prefixed and values["prefix"] and not causal:
        st.caption("Without the causal mask every key is visible already: the prefix changes nothing.")
    st.toggle(
        "ALiBi bias",
        value=defaults["alibi"],
        key="alibi",
        bind="query-params",
        disabled=not biased,
        help=biased.reason
        or "BLOOM's and MPT's bias: -m_h times the distance |i - j| (i - j under the causal mask) is added to "
        "each head's scaled scores, slope m_h = 2^(-8h/H). It replaces position embeddings: use it with "
        "positional = none.",
    )
    if biased and values["alibi"] and positional != "none":
        st.caption(
            f"ALiBi replaces position embeddings, so it is meant with positional = none: with {positional} "
            "positions too, the model gets position twice."
        )

"""The page's model source: the settings' weights as a ``core.sources.ModelSource``, or a message saying why not.

``source_or_message(settings)`` is the one function that builds a source. Each kind's builder reads the
runs ``compute.computations`` caches (shared, read-only arrays, bounded by bytes: ``compute.bounded_cache``), so a
rerun computes nothing twice. ``BUILDS`` is the one table
from a source class to how the page builds and names it: adding a source is one line here and one class in
``core/sources.py``. Views ask the source (its tokens, runs, ``supports``), never a kind's name.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, replace

import streamlit as st

from core import AttentionConfig, Run, multi_head_attention, permutation_experiment, run
from core.pretrained import bert_forward
from core.pretrained.runs import permutation_layers
from core.sources import ConfigSource, MiniLMSource, ModelSource, ToySource, TrainedSource
from core.tokens import count_tokens
from core.training.model import forward
from dashboard.compute import computations, training_jobs
from dashboard.compute.minilm_files import minilm_ready
from dashboard.state.followed import Controls
from dashboard.state.settings import Settings

EMPTY_SENTENCE = "The sentence is empty: there are no tokens to attend over."
TYPE_ONE = " Type a sentence in the sidebar to see its attention maps."
"""Said after ``EMPTY_SENTENCE`` on a page with the sidebar's controls (``Controls.hint``)."""


def tokens_or_message(sentence: str, controls: Controls, empty: str | None = None) -> tuple[str, ...] | None:
    """The tokens of ``sentence``, or None after showing why there are none (``empty`` when it is blank; by default
    that the sentence is empty, and where to type one on a page with ``controls``)."""
    if not sentence.strip():
        st.info(EMPTY_SENTENCE + controls.hint(TYPE_ONE) if empty is None else empty)
        return None
    try:
        return computations.tokens_of(sentence)
    except ValueError as err:
        st.error(str(err))
        return None


_runs: weakref.WeakValueDictionary[tuple[str, AttentionConfig], Run] = weakref.WeakValueDictionary()
"""(sentence, config) -> the cached run of its tokens, while the cache (or a page) still holds it. Looking the run
up through the caches tokenizes the sentence and hashes the config and the tokens on every call; a room's followers
all ask for the teacher's run on every change, so a live run is found by its key instead, and a cleared cache still
computes afresh (the run is gone from here with it)."""
_runs_lock = threading.Lock()


def _config_run(sentence: str, config: AttentionConfig, controls: Controls) -> Run | None:
    """The run of ``sentence`` under ``config`` (``computations.attention_run``), or None after showing why not."""
    with _runs_lock:
        known = _runs.get((sentence, config))
    if known is not None:
        return known
    tokens = tokens_or_message(sentence, controls)
    if tokens is None:
        return None
    found = computations.attention_run(tokens, config)
    with _runs_lock:
        _runs[(sentence, config)] = found
    return found


def _config_source(settings: Settings, controls: Controls) -> ConfigSource | None:
    found = _config_run(settings.sentence, settings.config, controls)
    if found is None:
        return None
    return settings.kind(settings.config, found.tokens, (found,))  # Config or Toy


def _minilm_source(settings: Settings, controls: Controls) -> MiniLMSource | None:
    if tokens_or_message(settings.sentence, controls) is None or not minilm_ready():
        return None
    causal = settings.config.causal
    return MiniLMSource(
        computations.minilm(), settings.sentence, causal, computations.minilm_runs(settings.sentence, causal)
    )


def _trained_source(settings: Settings, controls: Controls) -> TrainedSource | None:
    return training_jobs.trained_source_or_message(
        settings.training, controls
    )  # the task's fixed example, not the sentence


def _config_weights(settings: Settings) -> ConfigSource:
    return settings.kind(settings.config, (), ())  # Config or Toy, bound to no sentence


def _minilm_weights(settings: Settings) -> MiniLMSource | None:
    return MiniLMSource(computations.minilm(), "", settings.config.causal, ()) if minilm_ready() else None


def _config_call(settings: Settings, source: tuple[str, ...] | None) -> str:
    source_arg = "" if source is None else f", source={source!r}"
    return f"result = run(tokenize({settings.sentence!r}), {settings.config!r}{source_arg})"


def _minilm_call(settings: Settings, source: tuple[str, ...] | None) -> str:
    return (
        f"runs = layer_runs(load_minilm(), {settings.sentence!r}, causal={settings.config.causal})  # one Run per "
        f"layer\nresult = runs[{settings.layer - 1}]  # layer {settings.layer}"
    )


def _trained_call(settings: Settings, source: tuple[str, ...] | None) -> str:
    return (
        f"trained = train({settings.training!r})  # pre-trained file for a task's recommendation\n"
        f"result = runs_of(trained, trained.fixed_example.inputs[0])[{settings.layer - 1}]"
    )


@dataclass(frozen=True)
class Build:
    """How the page builds one kind of source and shows the code that computed it."""

    build: Callable[[Settings, Controls], ModelSource | None]
    """The source on the settings' sentence (or task), or None after a message that points to a control only on a
    page with ``Controls``."""
    call: Callable[[Settings, tuple[str, ...] | None], str]
    """The lines that computed the page's trace, with its settings (the sentence as a Python literal)."""
    computed_by: Callable
    """The core function whose source "The code behind this" shows for the runs."""
    input_code: tuple[Callable, tuple[str, ...]]
    """The core function that makes each layer's input, and the lines of it that do (``page.source_lines``)."""
    permuted_by: Callable | None = None
    """The core function behind ``ModelSource.permutation`` (None: the source cannot reorder)."""
    permutation_call: Callable[[Settings, tuple[int, ...]], str] | None = None
    """Its call with the page's settings and the reordering."""
    count: Callable[[str], int] | None = count_tokens
    """How many tokens these weights make of a sentence, against ``MAX_TOKENS``; None for a trained model, which
    reads its task's example (a view it cannot serve reads the sentence with random weights, and refuses as usual)."""
    weights: Callable[[Settings], ModelSource | None] | None = None
    """The weights bound to no sentence of the sidebar's (``weights_source``); None: ``build`` (a trained model,
    whose input is its task's)."""


def _minilm_count(sentence: str) -> int:
    """MiniLM's pieces with [CLS] and [SEP] (or the words, while the model is missing): the page caps both."""
    model = computations.minilm()
    pieces = 0 if isinstance(model, str) else len(model.encode(sentence).ids)
    return max(count_tokens(sentence), pieces)


BUILDS: dict[type[ModelSource], Build] = {
    ConfigSource: Build(
        _config_source,
        _config_call,
        multi_head_attention,
        (run, ("x = embed(", "pe = model_positions(", "trace = multi_head_attention(", "x + pe,")),
        permutation_experiment,
        lambda s, perm: f"result = permutation_experiment(tokenize({s.sentence!r}), {list(perm)!r}, {s.config!r})",
        weights=_config_weights,
    ),
    MiniLMSource: Build(  # bert_forward runs multi_head_attention once per layer
        _minilm_source,
        _minilm_call,
        bert_forward,
        (bert_forward, ("x = embed(weights, ids)", "x, trace = encoder_block(")),
        permutation_layers,
        lambda s, perm: (
            f"results = permutation_layers(load_minilm(), {s.sentence!r}, {list(perm)!r}, "
            f"causal={s.config.causal})  # one per layer"
        ),
        _minilm_count,
        _minilm_weights,
    ),
    TrainedSource: Build(  # its forward runs multi_head_attention once per layer
        _trained_source,
        _trained_call,
        multi_head_attention,
        (forward, ('x = params["embed"][tokens]', "attn_in, ln1 = pre_norm(", "x = x + trace.output")),
        count=None,
    ),
}
BUILDS[ToySource] = BUILDS[ConfigSource]  # hand-built weights: the same build, code and reordering


def source_or_message(settings: Settings, controls: Controls) -> ModelSource | None:
    """The source the settings' weights choose, built on their sentence (or task); None after a message."""
    try:
        return BUILDS[settings.kind].build(settings, controls)
    except ValueError as err:  # over the piece cap, an impossible task setting: core's message names numbers only
        st.error(str(err))
        return None


def weights_source(settings: Settings, controls: Controls) -> ModelSource | None:
    """The settings' weights bound to no sentence of the sidebar's, for a view that reads its own sentences
    (``ModelSource.reads``, ``computations.sentence_maps``); a trained model as ``source_or_message`` builds it (its
    ``examples`` are its task's). None after a message (the pretrained model missing, a training refused)."""
    build = BUILDS[settings.kind]
    try:
        return build.weights(settings) if build.weights else build.build(settings, controls)
    except ValueError as err:  # an impossible task setting: core's message names numbers only
        st.error(str(err))
        return None


def run_call(settings: Settings, source: tuple[str, ...] | None = None) -> str:
    """The lines that computed this page's trace, with its settings (``source``: cross-attention's key sentence)."""
    return BUILDS[settings.kind].call(settings, source)


def computed_by(settings: Settings) -> Callable:
    """The core function that computed the runs of the settings' source."""
    return BUILDS[settings.kind].computed_by


def permutation_code(settings: Settings) -> tuple[Callable, Callable[[Settings, tuple[int, ...]], str]] | None:
    """The core function that reorders for the settings' source and its call, or None when it cannot."""
    build = BUILDS[settings.kind]
    return None if build.permuted_by is None else (build.permuted_by, build.permutation_call)


def input_code(settings: Settings) -> tuple[Callable, tuple[str, ...]]:
    """The core function that makes each layer's input for the settings' source, and the lines that do."""
    return BUILDS[settings.kind].input_code


def token_count(settings: Settings) -> Callable[[str], int] | None:
    """How the settings' weights count a sentence's tokens, against ``MAX_TOKENS`` (None: they read none). MiniLM's
    count while the model cannot load is the words' (``count_tokens``), and it is returned as such: what was
    counted with it (``long_text``'s cached beginning) is not taken for MiniLM's once "Try again" loads it."""
    count = BUILDS[settings.kind].count
    return count_tokens if count is _minilm_count and isinstance(computations.minilm(), str) else count


def served(settings: Settings, experiment: str, what: str) -> Settings:
    """Settings whose source can do ``experiment``: the chosen ones, or, after saying why not (``what`` the view
    does), random weights of the same shape (``Settings.config`` holds them for every kind)."""
    support = settings.kind.supports(experiment)
    if support:
        return settings
    c = settings.config
    st.info(
        f"This view {what}. {support.reason} It uses {support.instead} instead "
        f"(d_model = {c.d_model}, {c.n_heads} head{'s' * (c.n_heads != 1)}).",
        icon=":material/shuffle:",
    )
    return replace(settings, weights=c.weights)


def served_tokens(
    settings: Settings, controls: Controls, experiment: str, what: str
) -> tuple[Settings, tuple[str, ...]] | None:
    """``served``'s settings for ``experiment`` and the sidebar sentence's tokens, or None after a message: the
    setup of a view that runs its own computation on the sentence."""
    settings = served(settings, experiment, what)
    tokens = tokens_or_message(settings.sentence, controls)
    return None if tokens is None else (settings, tokens)

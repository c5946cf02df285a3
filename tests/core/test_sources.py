"""The model-source seam: each source's tokens, architecture, runs and answers, against the code it wraps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import AttentionConfig, run, tokenize
from core.pipeline import EMBEDDED, layer_output
from core.sources import (
    EXPERIMENTS,
    INSTEAD,
    SOURCES,
    WEIGHTS,
    ConfigSource,
    MiniLMSource,
    ToySource,
    TrainedSource,
    source_class,
)
from core.tokens import MAX_TOKENS
from core.training import load_trained
from core.training.model import forward
from core.training.runs import runs_of
from tests.conftest import require_minilm

SENTENCE = "the cat sat on the mat"
ASKED = ("permutation", "cross", "positions", "scaling", "unscaled", "causal", "seed", "decode", "tiles")
VARIANTS = ("kv_heads", "window", "prefix", "alibi")


def same_run(a, b) -> None:
    """Two runs hold the same tokens, inputs and every array of the trace."""
    assert a.tokens == b.tokens
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.positions, b.positions)
    for name in ("q", "k", "v", "scores", "weights", "context", "concat", "output"):
        np.testing.assert_array_equal(getattr(a.trace, name), getattr(b.trace, name))
    assert a.trace.scale == b.trace.scale


def test_every_weights_choice_has_a_source_and_an_unknown_one_is_refused():
    assert set(WEIGHTS) == set(SOURCES) == {"random", "identity", "previous", "minilm", "trained"}
    assert source_class("random") is ConfigSource
    assert source_class("identity") is source_class("previous") is ToySource and issubclass(ToySource, ConfigSource)
    with pytest.raises(ValueError, match="weights must be one of random, identity, previous, minilm, trained"):
        source_class("learned")
    with pytest.raises(ValueError, match="unknown experiment"):
        ConfigSource.supports("telepathy")


@pytest.mark.parametrize("weights", ["random", "identity", "previous"])
@pytest.mark.parametrize("positional", ["none", "sinusoidal", "learned", "rope"])
def test_config_source_is_core_run_on_the_sentence(weights, positional):
    config = AttentionConfig(d_model=16, n_heads=2, positional=positional, weights=weights, causal=True, seed=3)
    tokens = tokenize(SENTENCE)
    source = ConfigSource.of(tokens, config)
    seen = source.tokens()
    assert seen.tokens == tuple(tokens) and seen.movable == (0, len(tokens)) and seen.word_ids is None
    arch = source.architecture()
    assert (arch.d_model, arch.n_heads, arch.n_layers, arch.positional, arch.fixed) == (16, 2, 1, positional, False)
    [only] = source.runs()
    same_run(only, run(tokens, config))
    assert source.run(5) is only  # a layer past the model's clips to its last
    # provenance: the first layer reads the embedding plus whatever positions were added
    assert (only.layer, only.input_from, only.positional) == (1, EMBEDDED, positional)
    assert only.positions_added == (positional in ("sinusoidal", "learned"))
    assert np.any(only.positions != 0) == only.positions_added
    assert source.chance == (weights == "random")


def test_config_source_supports_every_experiment_it_is_asked_but_not_ablation_or_logits():
    for experiment in (*ASKED, *VARIANTS):
        assert ConfigSource.supports(experiment).ok, experiment
    assert not ConfigSource.supports("ablation") and "no later layer" in ConfigSource.supports("ablation").reason
    assert not ConfigSource.supports("logits") and "unembedding" in ConfigSource.supports("logits").reason
    source = ConfigSource.of(["a", "b"], AttentionConfig(d_model=8, n_heads=2))
    with pytest.raises(NotImplementedError, match="cannot knock a head out: Random and hand-built"):
        source.ablated_runs(1, 1)
    with pytest.raises(NotImplementedError, match="has no logits: Only a model trained"):
        source.logits()
    assert set(ASKED) | set(VARIANTS) | {"ablation", "logits", "sentences", "examples"} == set(EXPERIMENTS)


def test_hand_built_weights_refuse_grouped_heads_and_run_the_other_variants():
    grouped = ToySource.supports("kv_heads")
    assert not grouped and "no grouped form" in grouped.reason and "W_K = I" in grouped.reason
    assert all(ToySource.supports(v) for v in ("window", "prefix", "alibi"))
    with pytest.raises(ValueError, match="no grouped form"):
        AttentionConfig(d_model=16, n_heads=4, kv_heads=2, weights="identity")
    config = AttentionConfig(d_model=16, n_heads=4, weights="identity", causal=True, window=2, alibi=True)
    trace = ToySource.of(tokenize(SENTENCE), config).runs()[0].trace
    assert trace.mask is not None and trace.bias is not None and trace.kv_heads == 4


@pytest.mark.parametrize("kind", [MiniLMSource, TrainedSource])
def test_learned_weights_refuse_every_variant_with_a_reason(kind):
    for variant in VARIANTS:
        answer = kind.supports(variant)
        assert not answer and answer.reason and answer.instead == INSTEAD, (kind, variant)
    assert "ALiBi" in kind.supports("alibi").reason


def test_config_source_permutation_is_the_pipeline_experiment():
    config = AttentionConfig(d_model=16, n_heads=2, seed=1)
    tokens = tokenize(SENTENCE)
    [result] = ConfigSource.of(tokens, config).permutation((5, 4, 3, 2, 1, 0))
    assert result.max_abs_diff < 1e-12  # no positions, no mask: the same map reordered
    np.testing.assert_array_equal(result.weights, run(tokens, config).trace.weights)


def test_scale_recorded_in_the_trace_is_the_one_used():
    tokens = tokenize(SENTENCE)
    scaled = ConfigSource.of(tokens, AttentionConfig(d_model=16, n_heads=2)).run(1).trace
    unscaled = ConfigSource.of(tokens, AttentionConfig(d_model=16, n_heads=2, scaled=False)).run(1).trace
    assert scaled.scale == pytest.approx(1 / math.sqrt(8)) and unscaled.scale == 1.0


def test_trained_source_reads_the_task_example_and_each_layer_its_own_input():
    result = load_trained("induction")
    source = TrainedSource.of(result)
    example = result.fixed_example.inputs[0]
    seen = source.tokens()
    assert seen.tokens == tuple(result.settings.task_info.decode(example))
    assert "induction task's fixed example" in seen.label
    assert seen.tokens != tuple(tokenize("The bank of the river gave a loan"))
    for mine, theirs in zip(source.runs(), runs_of(result, example), strict=True):
        same_run(mine, theirs)
    first, second = source.runs()
    m = result.settings.model
    arch = source.architecture()
    assert (arch.d_model, arch.n_heads, arch.n_layers, arch.positional) == (m.d_model, m.n_heads, 2, m.positional)
    assert (first.input_from, second.input_from) == (EMBEDDED, layer_output(1))
    assert second.layer == 2 and not second.positions_added
    cache = forward(result.params, m, example)
    np.testing.assert_array_equal(second.x + second.positions, cache.layers[1].attn_in)  # layer 1's output...
    assert np.abs(second.x - (first.x + first.positions)).max() > 1  # ...which is not embedding + positions


def test_trained_source_says_what_it_cannot_do():
    for experiment in ("permutation", "cross", "positions", "scaling", "unscaled"):
        answer = TrainedSource.supports(experiment)
        assert not answer and answer.reason and answer.instead == INSTEAD, experiment
    assert TrainedSource.supports("causal") and TrainedSource.supports("seed")
    with pytest.raises(NotImplementedError, match="reads only its task's sequences"):
        TrainedSource.of(load_trained("shift")).permutation((1, 0))
    assert all(
        r.trace.scale == pytest.approx(1 / math.sqrt(r.trace.q.shape[-1]))
        for r in TrainedSource.of(load_trained("shift")).runs()
    )  # trained with the factor: the only run it has


def test_minilm_source_answers_without_loading_the_model():
    """What the sidebar asks before anything is computed: the fixed shape and what the weights allow."""
    arch = MiniLMSource.ARCHITECTURE
    assert (arch.d_model, arch.n_heads, arch.n_layers, arch.positional, arch.fixed) == (384, 12, 6, "learned", True)
    for experiment in ("cross", "positions", "scaling", "unscaled", "seed"):
        answer = MiniLMSource.supports(experiment)
        assert not answer and answer.reason and answer.instead == INSTEAD, experiment
    causal = MiniLMSource.supports("causal")
    assert causal and "encoder" in causal.reason  # allowed, with its caveat
    assert MiniLMSource.supports("permutation")


def test_minilm_source_is_layer_runs_on_the_pieces():
    require_minilm()
    from core.pretrained import load_minilm
    from core.pretrained.runs import EMBEDDINGS, layer_runs

    model = load_minilm()
    source = MiniLMSource.of(model, "The bank of the river.", causal=True)
    seen = source.tokens()
    assert seen.tokens == model.encode("The bank of the river.").tokens
    assert seen.tokens[0] == "[CLS]" and seen.movable == (1, len(seen.tokens) - 1) and seen.word_ids is not None
    runs = source.runs()
    for mine, theirs in zip(runs, layer_runs(model, "The bank of the river.", causal=True), strict=True):
        same_run(mine, theirs)
    assert [r.input_from for r in runs] == [EMBEDDINGS, *(layer_output(i) for i in range(1, 6))]
    assert [r.layer for r in runs] == [1, 2, 3, 4, 5, 6]
    assert source.tokens_of("river the") == ("river", "the")
    results = source.permutation((1, 0, 2, 3, 4, 5))  # "the" and "bank" swap; [CLS], [SEP] stay
    assert len(results) == 6 and results[0].permutation.tolist() == [0, 2, 1, 3, 4, 5, 6, 7]


def test_minilm_caps_the_pieces_in_every_use():
    """60 words of 5 pieces each: 290 pieces blew the server's memory in the permutation view; 821 raised."""
    require_minilm()
    from core.pretrained import load_minilm
    from core.pretrained.runs import permutation_layers

    model = load_minilm()
    text = " ".join(f"w{123456 + i}" for i in range(60))
    n = len(model.encode(text).ids)
    assert n > MAX_TOKENS
    with pytest.raises(ValueError, match=f"{n} pieces"):
        MiniLMSource.of(model, text)
    with pytest.raises(ValueError, match=f"at most {MAX_TOKENS}"):
        permutation_layers(model, text, list(range(n - 2))[::-1])


# -- other sentences through the same weights (the class and contrast views) -------------------------------------------
@pytest.mark.parametrize("weights", ["random", "identity", "previous"])
def test_a_config_source_reads_another_sentence_as_run_does(weights):
    config = AttentionConfig(d_model=16, n_heads=2, weights=weights, causal=True, seed=5)
    bound = ConfigSource.of(tokenize(SENTENCE), config)
    bare = ConfigSource(config, (), ())  # no sentence of its own: what the views build
    assert bound.weights_key == bare.weights_key and bound.key != bare.key
    [read] = bare.reads("the dog ran")
    same_run(read, run(tokenize("the dog ran"), config))
    for bad in ("", " " * 3, "\x00\x1b", " ".join(["w"] * (MAX_TOKENS + 1))):
        with pytest.raises(ValueError):
            bare.reads(bad)


def test_minilm_reads_another_sentence_as_layer_runs_does_within_the_page_s_limits():
    require_minilm()
    from core.pretrained import load_minilm
    from core.pretrained.runs import layer_runs

    model = load_minilm()
    source = MiniLMSource(model, "", True, ())
    assert source.weights_key == MiniLMSource.of(model, SENTENCE, causal=True).weights_key
    for mine, theirs in zip(source.reads("the dog ran"), layer_runs(model, "the dog ran", causal=True), strict=True):
        same_run(mine, theirs)
    for bad in ("", "\x00", " ".join(["supercalifragilistic"] * 20)):  # empty, nothing to read, over the piece cap
        with pytest.raises(ValueError):
            source.reads(bad)


def test_a_trained_model_reads_its_held_out_sequences_and_no_typed_text():
    from core.training.probes import probe_set

    result = load_trained("shift")
    source = TrainedSource.of(result)
    examples = source.examples(3)
    assert len(examples) == 3
    for runs, tokens in zip(examples, probe_set(result).inputs[:3], strict=True):
        for mine, theirs in zip(runs, runs_of(result, tokens), strict=True):
            same_run(mine, theirs)
    refused = TrainedSource.supports("sentences")
    assert not refused and "not typed sentences" in refused.reason and refused.instead == INSTEAD
    with pytest.raises(NotImplementedError, match="not typed sentences"):
        source.reads("the dog ran")
    assert TrainedSource.supports("examples")
    for kind in (ConfigSource, ToySource, MiniLMSource):
        assert kind.supports("sentences") and not kind.supports("examples")
    with pytest.raises(NotImplementedError, match="No source computes this yet"):
        ConfigSource(AttentionConfig(d_model=8, n_heads=2), (), ()).examples(2)

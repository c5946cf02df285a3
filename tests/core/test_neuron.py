"""Why a score is high: for every source, the per-dimension products summed and scaled are the trace's score."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from core import AttentionConfig, tokenize
from core.attention import alibi_bias, causal_mask
from core.multihead import Projections, multi_head_attention
from core.neuron import score_terms
from core.sources import ConfigSource, MiniLMSource, TrainedSource
from core.training import TASK_NAMES, load_trained
from tests.conftest import require_minilm

SENTENCE = "the cat sat on the mat because it was tired"


def check_every_score(trace) -> None:
    """Every head, query and key: fsum(q_c k_c) * scale equals the score (to rounding), and q, k are the trace's."""
    h, t_q, t_k = trace.scores.shape
    for head, query, key in itertools.product(range(h), range(t_q), range(t_k)):
        terms = score_terms(trace, head, query, key)
        k = trace.keys_per_head[head, key]  # (d_k,): the K head this query head reads
        np.testing.assert_array_equal(terms.products, np.asarray(trace.q[head, query], np.float64) * k)
        assert terms.dot == math.fsum(terms.products.tolist())
        assert terms.scaled == pytest.approx(float(trace.scores[head, query, key]), rel=1e-5, abs=1e-5)
        bias = 0.0 if trace.bias is None else float(np.broadcast_to(trace.bias, trace.scores.shape)[head, query, key])
        assert terms.score == terms.scaled + bias
        assert terms.scale == trace.scale
        assert terms.weight == float(trace.weights[head, query, key])


@pytest.mark.parametrize(
    ("weights", "positional", "scaled", "causal"),
    list(
        itertools.product(
            ("random", "identity", "previous"), ("none", "sinusoidal", "rope", "learned"), (True, False), (False, True)
        )
    ),
)
def test_config_sources(weights, positional, scaled, causal):
    config = AttentionConfig(
        d_model=16,
        n_heads=2 if weights == "random" else 1,
        positional=positional,
        scaled=scaled,
        causal=causal,
        weights=weights,
    )
    source = ConfigSource.of(tokenize(SENTENCE), config)
    check_every_score(source.run(1).trace)


@pytest.mark.parametrize("task", TASK_NAMES)
def test_trained_sources(task):
    for r in TrainedSource.of(load_trained(task)).runs():
        check_every_score(r.trace)


def test_minilm_source():
    require_minilm()
    from core.pretrained import load_minilm

    for r in MiniLMSource.of(load_minilm(), SENTENCE).runs():
        check_every_score(r.trace)


@pytest.mark.parametrize("kv_heads", [4, 2, 1])
@pytest.mark.parametrize("alibi", [False, True])
def test_alibi_bias_and_shared_kv_heads(kv_heads, alibi):
    """The variants of "attention as today's models run it": ALiBi's bias adds to the score, a shared K serves a
    group of query heads. The softmax of the probe's scores (masked) is the trace's weight row."""
    t, d, h = 6, 16, 4
    x = np.random.default_rng(3).standard_normal((t, d))  # (T, d_model)
    proj = Projections.random(d, seed=2).grouped(h, kv_heads)
    mask = causal_mask(t)
    bias = alibi_bias(h, t) if alibi else None
    trace = multi_head_attention(x, proj, h, mask=mask, bias=bias)
    assert (trace.bias is not None) == alibi and trace.kv_heads == kv_heads
    check_every_score(trace)
    for head, query in itertools.product(range(h), range(t)):
        row = np.array([score_terms(trace, head, query, key).score for key in range(query + 1)])  # causal keys
        e = np.exp(row - row.max())
        np.testing.assert_allclose(trace.weights[head, query, : query + 1], e / e.sum(), atol=1e-12)
    if alibi:
        assert score_terms(trace, 0, 5, 0).bias < 0  # ALiBi penalises distance


def test_a_position_out_of_range_is_refused():
    trace = ConfigSource.of(["a", "b"], AttentionConfig(d_model=8, n_heads=2)).run(1).trace
    with pytest.raises(ValueError, match=r"0\.\.1"):
        score_terms(trace, 0, 2, 0)

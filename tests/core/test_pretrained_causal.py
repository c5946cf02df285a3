"""The causal experiment on the pretrained encoder: with the mask, a piece's states depend only on the pieces before it.

That property is independent of how the forward pass is written: run a sentence and a longer one that starts
with the same pieces, and every layer's state at those pieces (but the last, [SEP] against a word) must agree.
Without the mask the future leaks back and they differ.
"""

from __future__ import annotations

import numpy as np
import pytest

from core.attention import causal_mask
from core.pretrained import bert_forward, load_minilm
from tests.conftest import require_minilm


@pytest.fixture(scope="module")
def model():
    require_minilm()
    return load_minilm(dtype=np.float64)


def test_with_the_mask_the_prefix_does_not_see_what_follows(model):
    short = np.array(model.encode("the cat sat").ids)  # [CLS] the cat sat [SEP]
    long = np.array(model.encode("the cat sat on the mat").ids)
    n = len(short) - 1  # the shared prefix: [CLS] the cat sat
    assert np.array_equal(short[:n], long[:n])
    a, b = bert_forward(model.weights, short, causal=True), bert_forward(model.weights, long, causal=True)
    for x, y in zip(a.hidden_states, b.hidden_states, strict=True):
        np.testing.assert_allclose(x[:n], y[:n], rtol=0, atol=1e-12)
    free_a, free_b = bert_forward(model.weights, short), bert_forward(model.weights, long)
    assert np.abs(free_a.hidden_states[-1][:n] - free_b.hidden_states[-1][:n]).max() > 1e-2


def test_the_mask_zeroes_the_future_in_every_layer_and_keeps_padding_masked(model):
    ids = np.array([model.encode("the cat sat on the mat").ids, model.encode("a dog").ids + (0,) * 4])
    real = ids != 0
    out = bert_forward(model.weights, ids, real, causal=True)
    for trace in out.traces:
        w = trace.weights  # (B, h, T, T)
        assert np.all(w[..., ~causal_mask(ids.shape[1])] == 0)
        assert np.all(w[1, :, :, ~real[1]] == 0)  # padding keys of the short sentence
        np.testing.assert_allclose(w.sum(-1), 1.0, rtol=0, atol=1e-12)

"""The .npz download reruns through the lessons' code: load it, recompute the output with plain NumPy.

The forward pass below is written here, the way lessons 1-3 write it (``X @ W_q``, reshape and transpose
into heads, ``Q @ K.T / sqrt(d_k)``, ``np.where(mask == 0, -inf, scores)``, a row softmax, ``A @ V``,
concatenate, ``@ W_o``), sharing no code with ``core``. It reads only the file's arrays: if the export
lost W_Q, W_K, W_V, W_O, a bias, the embeddings or the positions, the output would not come back.
RoPE is left out: no lesson rotates queries and keys.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from core import AttentionConfig, run, tokenize
from dashboard.exports import trace_npz
from tests.conftest import require_minilm

SENTENCE = "The bank of the river gave a loan"
CONFIGS = {
    "random": AttentionConfig(),
    "random-unscaled-causal": AttentionConfig(scaled=False, causal=True),
    "sinusoidal": AttentionConfig(positional="sinusoidal", d_model=32, n_heads=2),
    "identity-learned": AttentionConfig(weights="identity", positional="learned", n_heads=8),
    "previous-learned-causal": AttentionConfig(weights="previous", positional="learned", causal=True),
}


def lesson_forward(npz) -> np.ndarray:
    """The output, recomputed from the file's arrays alone, as the lessons write it."""
    x = npz["x"] + npz["positions"]  # (T, d_model): embeddings plus positions
    w_q, w_k, w_v, w_o = npz["w_q"], npz["w_k"], npz["w_v"], npz["w_o"]
    bias = {name: npz[name] if name in npz.files else 0.0 for name in ("b_q", "b_k", "b_v", "b_o")}
    t, d_model = x.shape
    h = npz["q"].shape[0]  # the file's per-head Q says how many heads
    d_k = d_model // h
    q = x @ w_q + bias["b_q"]
    k = x @ w_k + bias["b_k"]
    v = x @ w_v + bias["b_v"]
    q = q.reshape(t, h, d_k).transpose(1, 0, 2)  # (h, T, d_k)
    k = k.reshape(t, h, d_k).transpose(1, 0, 2)
    v = v.reshape(t, h, d_k).transpose(1, 0, 2)
    scores = q @ k.transpose(0, 2, 1) * float(npz["scale"])  # 1/sqrt(d_k), or 1 with scaling off
    if "mask" in npz.files:  # lesson 1: where the mask is 0, the score becomes -inf
        scores = np.where(npz["mask"].astype(int) == 0, -np.inf, scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    a = e / e.sum(axis=-1, keepdims=True)  # (h, T, T)
    context = a @ v  # (h, T, d_k)
    concat = context.transpose(1, 0, 2).reshape(t, d_model)  # (T, h * d_k)
    return concat @ w_o + bias["b_o"]


def load(data: bytes):
    return np.load(io.BytesIO(data), allow_pickle=False)


@pytest.mark.parametrize("name", CONFIGS)
def test_the_lessons_code_gets_the_output_back_from_the_npz(name):
    r = run(tokenize(SENTENCE), CONFIGS[name])
    with load(trace_npz(r)) as npz:
        np.testing.assert_allclose(lesson_forward(npz), r.trace.output, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("layer", "causal"), [(1, False), (4, True)])
def test_the_pretrained_layers_npz_has_its_biases_and_reruns(layer, causal):
    require_minilm()
    from core.pretrained import load_minilm
    from core.pretrained.runs import layer_runs

    r = layer_runs(load_minilm(), SENTENCE, causal=causal)[layer - 1]
    with load(trace_npz(r)) as npz:
        assert {"b_q", "b_k", "b_v", "b_o"} <= set(npz.files)
        assert npz["w_q"].shape == (384, 384)
        np.testing.assert_allclose(lesson_forward(npz), r.trace.output, rtol=1e-4, atol=1e-4)  # float32 weights

"""The .npz download reruns through the lessons' code: load it, recompute the output with plain NumPy.

The forward pass below is written here, the way lessons 1-3 write it (``X @ W_q``, reshape and transpose
into heads, ``Q @ K.T / sqrt(d_k)``, ``np.where(mask == 0, -inf, scores)``, a row softmax, ``A @ V``,
concatenate, ``@ W_o``), sharing no code with ``core``. It reads only the file's arrays: if the export
lost W_Q, W_K, W_V, W_O, a bias, the embeddings or the positions, the output would not come back.
RoPE is left out: no lesson rotates queries and keys.
"""

from __future__ import annotations

import dataclasses
import io
import json

import numpy as np
import pytest

from core import AttentionConfig, run, tokenize
from dashboard.page.exports import trace_npz
from tests.conftest import require_minilm

SENTENCE = "The bank of the river gave a loan"
CONFIGS = {
    "random": AttentionConfig(),
    "random-unscaled-causal": AttentionConfig(scaled=False, causal=True),
    "sinusoidal": AttentionConfig(positional="sinusoidal", d_model=32, n_heads=2),
    "identity-learned": AttentionConfig(weights="identity", positional="learned", n_heads=8),
    "previous-learned-causal": AttentionConfig(weights="previous", positional="learned", causal=True),
}


def lesson_forward(npz) -> dict[str, np.ndarray]:
    """Scores, masked scores, weights and output, recomputed from the file's arrays alone, as the lessons write it."""
    x = npz["x_input"]  # (T, d_model): what attention read
    if "x_embedded" in npz.files:  # a first layer: the embeddings plus the positions
        np.testing.assert_array_equal(x, npz["x_embedded"] + npz["positions"])
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
    scaled = q @ k.transpose(0, 2, 1) * float(npz["scale"])  # 1/sqrt(d_k), or 1 with scaling off
    masked = scaled
    if "mask" in npz.files:  # lesson 1: where the mask is 0, the score becomes -inf
        masked = np.where(npz["mask"].astype(int) == 0, -np.inf, scaled)
    e = np.exp(masked - masked.max(axis=-1, keepdims=True))
    a = e / e.sum(axis=-1, keepdims=True)  # (h, T, T)
    context = a @ v  # (h, T, d_k)
    concat = context.transpose(1, 0, 2).reshape(t, d_model)  # (T, h * d_k)
    return {"scores_scaled": scaled, "scores_masked": masked, "weights": a, "output": concat @ w_o + bias["b_o"]}


def load(data: bytes):
    return np.load(io.BytesIO(data), allow_pickle=False)


@pytest.mark.parametrize("name", CONFIGS)
def test_the_lessons_code_gets_the_output_back_from_the_npz(name):
    r = run(tokenize(SENTENCE), CONFIGS[name])
    with load(trace_npz(r)) as npz:
        for name, value in lesson_forward(npz).items():  # every step, checked against the file's own arrays
            np.testing.assert_allclose(value, npz[name], rtol=1e-12, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(lesson_forward(npz)["output"], r.trace.output, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", CONFIGS)
def test_the_files_settings_rebuild_the_same_run(name):
    """The settings inside the file are enough to compute every array again: the file stands alone."""
    config = CONFIGS[name]
    settings = {"sentence": SENTENCE, "config": dataclasses.asdict(config)}
    with load(trace_npz(run(tokenize(SENTENCE), config), settings)) as npz:
        about = json.loads(str(npz["settings"]))
        again = run(tokenize(about["settings"]["sentence"]), AttentionConfig(**about["settings"]["config"]))
        assert about["input_from"] == again.input_from and about["scale"] == again.trace.scale
        np.testing.assert_array_equal(npz["weights"], again.trace.weights)
        np.testing.assert_array_equal(npz["x_input"], again.x + again.positions)


@pytest.mark.parametrize(("layer", "causal"), [(1, False), (4, True)])
def test_the_pretrained_layers_npz_has_its_biases_and_reruns(layer, causal):
    require_minilm()
    from core.pretrained import load_minilm
    from core.pretrained.runs import layer_runs

    r = layer_runs(load_minilm(), SENTENCE, causal=causal)[layer - 1]
    with load(trace_npz(r)) as npz:
        assert {"b_q", "b_k", "b_v", "b_o"} <= set(npz.files)
        assert npz["w_q"].shape == (384, 384)
        out = lesson_forward(npz)["output"]
        np.testing.assert_allclose(out, r.trace.output, rtol=1e-4, atol=1e-4)  # float32 weights
        if layer > 1:  # a later layer reads the one before: the file says so and has no embedding to add
            assert "x_embedded" not in npz.files and json.loads(str(npz["settings"]))["layer"] == layer

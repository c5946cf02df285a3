"""The NumPy BERT forward against transformers' BertModel, loaded from the same local files.

transformers runs with ``attn_implementation="eager"`` (the default sdpa path returns
no attention weights). Both sides get the same token ids (ours), so this file tests
the forward pass; ``test_pretrained_tokenizer.py`` tests the ids.
"""

from __future__ import annotations

import numpy as np
import pytest

from core.pretrained import MiniLM, load_minilm
from tests.conftest import require_minilm, require_transformers

SENTENCES = [
    "Hello",  # one word: [CLS] hello [SEP]
    "The bank of the river.",
    "the cat sat on the mat because it was tired",
    'Wait... what?! (No way) -- really; "quoted" & [bracketed] {braces} #hash @at 100% $5 a+b=c',
    "Café naïve façade: Ünïcödé, 東京タワー, Ελληνικά, русский, עברית, العربية, हिन्दी, 😀👍🏽.",
    "In the beginning the Universe was created. This has made a lot of people very angry and been widely "
    "regarded as a bad move. Many races believe that it was created by some sort of god, though the "
    "Jatravartid people of Viltvodyne hold that the entire Universe was in fact sneezed out of the nose.",
]

TOLERANCE = {np.float64: 1e-10, np.float32: 1e-5}
"""atol per dtype, for weights in [0, 1], hidden states and the unit-length embedding."""


@pytest.fixture(scope="module")
def reference():
    """``(torch, BertModel)`` in eval mode from the package's files, float32 (cast with .double() on use)."""
    directory = require_minilm()
    transformers = require_transformers()
    import torch

    model = transformers.BertModel.from_pretrained(str(directory), attn_implementation="eager", local_files_only=True)
    return torch, model.eval()


@pytest.fixture(scope="module", params=[np.float64, np.float32], ids=["float64", "float32"])
def ours(request) -> MiniLM:
    require_minilm()
    return load_minilm(dtype=request.param)


def _reference_run(reference, ids: np.ndarray, real: np.ndarray, dtype):
    """transformers' attentions (L, B, h, T, T), last hidden state (B, T, d) and pooled, normalised embedding."""
    torch, model = reference
    model = model.double() if dtype == np.float64 else model.float()
    with torch.inference_mode():
        out = model(
            input_ids=torch.from_numpy(ids),
            attention_mask=torch.from_numpy(real.astype(np.int64)),
            output_attentions=True,
        )
        m = torch.from_numpy(real).unsqueeze(-1).to(out.last_hidden_state.dtype)  # (B, T, 1)
        pooled = (out.last_hidden_state * m).sum(1) / m.sum(1).clamp(min=1e-9)  # sentence-transformers' mean pooling
        embedding = torch.nn.functional.normalize(pooled, p=2, dim=1)
    attentions = np.stack([a.numpy() for a in out.attentions])
    return attentions, out.last_hidden_state.numpy(), embedding.numpy()


@pytest.mark.parametrize("sentence", SENTENCES, ids=range(len(SENTENCES)))
def test_one_sentence_matches_transformers(reference, ours: MiniLM, sentence: str) -> None:
    run = ours.run(sentence)
    ids = np.array([run.encoding.ids])  # (1, T)
    attentions, hidden, embedding = _reference_run(reference, ids, np.ones(ids.shape, bool), ours.weights.dtype.type)
    atol = TOLERANCE[ours.weights.dtype.type]
    t = ids.shape[1]
    for layer, trace in enumerate(run.output.traces):
        assert trace.weights.shape == (12, t, t) and trace.weights.dtype == ours.weights.dtype
        np.testing.assert_allclose(trace.weights, attentions[layer, 0], rtol=0, atol=atol, err_msg=f"layer {layer + 1}")
    np.testing.assert_allclose(run.output.last_hidden_state, hidden[0], rtol=0, atol=atol)
    np.testing.assert_allclose(run.output.embedding, embedding[0], rtol=0, atol=atol)


def test_long_sentence_has_60_tokens_or_more(ours: MiniLM) -> None:
    assert len(ours.encode(SENTENCES[-1]).ids) >= 60


def test_padded_batch_matches_transformers_and_padding_gets_zero_weight(reference, ours: MiniLM) -> None:
    batch = ours.run_batch(SENTENCES)
    real = batch.output.real  # (B, T)
    assert not real.all(), "the batch must contain padding"
    attentions, hidden, embedding = _reference_run(reference, batch.ids, real, ours.weights.dtype.type)
    atol = TOLERANCE[ours.weights.dtype.type]
    for layer, trace in enumerate(batch.output.traces):
        w = trace.weights  # (B, h, T, T)
        padding_keys = np.broadcast_to(~real[:, None, None, :], w.shape)  # (B, h, T, T)
        assert np.all(w[padding_keys] == 0), "a padding key got attention"
        np.testing.assert_allclose(w, attentions[layer], rtol=0, atol=atol, err_msg=f"layer {layer + 1}")
    ours_hidden = batch.output.last_hidden_state  # (B, T, d_model)
    np.testing.assert_allclose(ours_hidden[real], hidden[real], rtol=0, atol=atol)
    if ours.weights.dtype == np.float64:
        # Padding rows (queries nobody attends to, left out of the pooling) are ill-conditioned in float32:
        # measured against the float64 forward, ours are off by 3.4e-5 and transformers' by 6.2e-5 (real rows:
        # 2.6e-6 and 2.3e-6). So they are compared where rounding cannot hide a bug, in float64.
        np.testing.assert_allclose(ours_hidden[~real], hidden[~real], rtol=0, atol=atol)
    np.testing.assert_allclose(batch.output.embedding, embedding, rtol=0, atol=atol)


def test_batch_rows_equal_single_runs(ours: MiniLM) -> None:
    """Padding changes nothing for the real tokens: each row equals that sentence run alone."""
    batch = ours.run_batch(SENTENCES[:3])
    atol = TOLERANCE[ours.weights.dtype.type]
    for row, sentence in enumerate(SENTENCES[:3]):
        single = ours.run(sentence)
        t = len(single.encoding.ids)
        for a, b in zip(batch.output.traces, single.output.traces, strict=True):
            np.testing.assert_allclose(a.weights[row, :, :t, :t], b.weights, rtol=0, atol=atol)
        np.testing.assert_allclose(batch.output.embedding[row], single.output.embedding, rtol=0, atol=atol)

"""PyTorch as an independent reference for scaled_dot_product_attention and multi_head_attention.

Two conventions differ between us and ``torch.nn.MultiheadAttention``:

- torch's linear layers compute ``x @ W.T``, so ``in_proj_weight`` is the stack
  ``[W_Q.T; W_K.T; W_V.T]`` (3 d_model, d_model) and ``out_proj.weight`` is ``W_O.T``;
- its boolean ``attn_mask`` means True = may NOT attend, the opposite of ours, so we pass
  ``~mask``. (``F.scaled_dot_product_attention`` uses our polarity.)
"""

from __future__ import annotations

import numpy as np
import pytest

from core import Projections, causal_mask, multi_head_attention, scaled_dot_product_attention
from tests.conftest import require_torch

# float64 agrees to rounding; float32 to a few float32 ulps of O(1) numbers.
TOL = {np.float64: {"rtol": 0, "atol": 1e-12}, np.float32: {"rtol": 1e-4, "atol": 2e-5}}
DTYPES = [np.float32, np.float64]


@pytest.fixture(scope="module")
def torch():
    return require_torch()


def torch_mha(torch, proj: Projections, n_heads: int, dtype):
    """An nn.MultiheadAttention (no bias, batch_first) holding exactly ``proj``'s weights."""
    d = proj.d_model
    mha = torch.nn.MultiheadAttention(d, n_heads, bias=False, batch_first=True, dtype=torch_dtype(torch, dtype))
    stacked = np.concatenate([proj.w_q.T, proj.w_k.T, proj.w_v.T])  # (3 d_model, d_model)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(stacked.astype(dtype)))
        mha.out_proj.weight.copy_(torch.from_numpy(proj.w_o.T.astype(dtype)))
    return mha.eval()


def torch_dtype(torch, dtype):
    return {np.float32: torch.float32, np.float64: torch.float64}[dtype]


def run_torch_mha(torch, proj, n_heads, x, kv=None, mask=None):
    """x (B, T_q, d) or (T_q, d); mask ours (True = may attend), (T_q, T_k) or (B * h, T_q, T_k)."""
    mha = torch_mha(torch, proj, n_heads, x.dtype.type)
    kv = x if kv is None else kv
    attn_mask = None if mask is None else torch.from_numpy(~mask)  # torch: True = NOT allowed
    with torch.no_grad():
        out, weights = mha(
            torch.from_numpy(x),
            torch.from_numpy(kv),
            torch.from_numpy(kv),
            attn_mask=attn_mask,
            need_weights=True,
            average_attn_weights=False,
        )
    return out.numpy(), weights.numpy()


MHA_CASES = {
    # name: (batch shape, T_q, T_k or None for self-attention, d_model, h, causal)
    "self": ((), 6, None, 16, 4, False),
    "self-batch": ((3,), 6, None, 16, 4, False),
    "self-causal": ((2,), 7, None, 24, 3, True),
    "self-causal-unbatched": ((), 5, None, 8, 2, True),
    "cross": ((2,), 4, 7, 16, 2, False),
    "cross-causal-wide": ((2,), 3, 6, 16, 4, True),
    "cross-causal-tall": ((2,), 6, 3, 16, 4, True),
    "two-batch-dims": ((2, 3), 5, None, 16, 8, True),
    "two-batch-dims-cross": ((2, 2), 5, 3, 12, 3, False),
    # longer than a classroom sentence: the reference holds at the sizes bench.core times too
    "self-causal-long": ((), 300, None, 32, 4, True),
    "cross-causal-long-tall": ((2,), 260, 140, 16, 2, True),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", MHA_CASES.values(), ids=MHA_CASES.keys())
def test_multi_head_attention_matches_torch_mha(torch, case, dtype):
    batch, t_q, t_k, d, h, causal = case
    rng = np.random.default_rng([t_q, d, h, len(batch)])
    x = rng.standard_normal((*batch, t_q, d)).astype(dtype)
    kv = None if t_k is None else rng.standard_normal((*batch, t_k, d)).astype(dtype)
    t_k = t_q if t_k is None else t_k
    mask = causal_mask(t_q, t_k) if causal else None
    proj = Projections.random(d, seed=11)
    trace = multi_head_attention(x, proj, h, kv=kv, mask=mask)

    # torch's MHA takes one batch dimension (or none): flatten ours, compare, reshape back.
    flat = (-1, t_q, d) if batch else (t_q, d)
    kv_flat = None if kv is None else kv.reshape((-1, t_k, d) if batch else (t_k, d))
    out, weights = run_torch_mha(torch, proj, h, x.reshape(flat), kv_flat, mask)
    out = out.reshape(*batch, t_q, d)
    weights = weights.reshape(*batch, h, t_q, t_k)

    assert trace.output.dtype == dtype
    np.testing.assert_allclose(trace.weights, weights, **TOL[dtype])
    np.testing.assert_allclose(trace.output, out, **TOL[dtype])
    if causal:  # top-left alignment: both put exactly zero above the tril diagonal
        assert np.all(weights[..., ~causal_mask(t_q, t_k)] == 0)
        assert np.all(trace.weights[..., ~causal_mask(t_q, t_k)] == 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_per_batch_per_head_mask_matches_torch_mha(torch, dtype):
    b, t, d, h = 3, 5, 16, 4
    rng = np.random.default_rng(21)
    x = rng.standard_normal((b, t, d)).astype(dtype)
    mask = rng.random((b, h, t, t)) < 0.5
    mask[..., 0] = True  # every query keeps a key: torch MHA gives NaN for an empty row
    proj = Projections.random(d, seed=5)
    trace = multi_head_attention(x, proj, h, mask=mask)
    out, weights = run_torch_mha(torch, proj, h, x, mask=mask.reshape(b * h, t, t))
    np.testing.assert_allclose(trace.weights, weights, **TOL[dtype])
    np.testing.assert_allclose(trace.output, out, **TOL[dtype])


# --- torch.nn.functional.scaled_dot_product_attention ---------------------------------


def torch_weights(torch, q, k, mask, scale):
    """softmax(q k^T * scale) with masked keys at -inf, written out in torch."""
    s = (q @ k.transpose(-1, -2)) * scale
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, dim=-1)


SDPA_CASES = {
    # name: (batch shape, T_q, T_k, d_k, d_v, mask kind, scale)
    "plain": ((), 5, 5, 8, 8, None, None),
    "batch": ((2, 3), 4, 6, 8, 5, None, None),
    "causal-square": ((2,), 6, 6, 16, 4, "causal", None),
    "causal-wide": ((2,), 3, 7, 8, 8, "causal", None),
    "causal-tall": ((3,), 7, 3, 8, 2, "causal", None),
    "random-mask": ((2, 2), 5, 4, 8, 3, "random", None),
    "unscaled": ((2,), 5, 5, 32, 4, None, 1.0),
    "explicit-scale": ((2,), 5, 6, 8, 4, "causal", 0.37),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", SDPA_CASES.values(), ids=SDPA_CASES.keys())
def test_sdpa_matches_torch(torch, case, dtype):
    batch, t_q, t_k, d_k, d_v, mask_kind, scale = case
    rng = np.random.default_rng([t_q, t_k, d_k, d_v])
    q = rng.standard_normal((*batch, t_q, d_k)).astype(dtype)
    k = rng.standard_normal((*batch, t_k, d_k)).astype(dtype)
    v = rng.standard_normal((*batch, t_k, d_v)).astype(dtype)
    if mask_kind == "causal":
        mask = causal_mask(t_q, t_k)
    elif mask_kind == "random":
        mask = rng.random((*batch, t_q, t_k)) < 0.5
        mask[..., -1] = True  # keep one key per row so torch's explicit softmax has no NaN
    else:
        mask = None
    out, weights = scaled_dot_product_attention(q, k, v, mask, scale=scale)

    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    tmask = None if mask is None else torch.from_numpy(mask)  # SDPA: True = may attend, like ours
    ref_out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tmask, scale=scale)
    ref_w = torch_weights(torch, tq, tk, tmask, d_k**-0.5 if scale is None else scale)
    assert out.dtype == dtype and weights.dtype == dtype
    np.testing.assert_allclose(out, ref_out.numpy(), **TOL[dtype])
    np.testing.assert_allclose(weights, ref_w.numpy(), **TOL[dtype])

    if mask_kind == "causal":  # torch's is_causal is top-left aligned too, also for T_q != T_k
        causal_out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True, scale=scale)
        np.testing.assert_allclose(out, causal_out.numpy(), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_sdpa_fully_masked_rows_match_torch_zeros(torch, dtype):
    rng = np.random.default_rng(8)
    q = rng.standard_normal((2, 4, 8)).astype(dtype)
    k = rng.standard_normal((2, 5, 8)).astype(dtype)
    v = rng.standard_normal((2, 5, 3)).astype(dtype)
    mask = rng.random((2, 4, 5)) < 0.5
    mask[0, 1] = False
    mask[1, 3] = False
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    ref = torch.nn.functional.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v, mask)))
    np.testing.assert_allclose(out, ref.numpy(), **TOL[dtype])
    np.testing.assert_array_equal(out[0, 1], 0.0)
    np.testing.assert_array_equal(weights[1, 3], 0.0)

"""PyTorch 2.13 as an independent reference for today's variants, in float64.

- grouped and multi-query heads: ``F.scaled_dot_product_attention(..., enable_gqa=True)``
  on K and V of ``kv_heads`` heads (torch repeats them itself);
- sliding window and prefix-LM: torch gets the boolean mask from the same builder,
  ``core.attention_mask`` (True = may attend, SDPA's polarity as ours);
- ALiBi: torch gets a float ``attn_mask``, the bias where a key may be seen and -inf where not.

Every combination with the causal mask on and off, self-attention and T_q != T_k. A
fully masked query row gives zeros in core; torch 2.13 gives zeros too, and where a torch
version gives NaN instead, only its defined rows are compared.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from core import Projections, alibi_bias, attention_mask, multi_head_attention, repeat_kv, scaled_dot_product_attention
from tests.conftest import require_torch

TOL = {"rtol": 0, "atol": 1e-12}


@pytest.fixture(scope="module")
def torch():
    return require_torch()


def torch_mask(torch, mask: np.ndarray, bias: np.ndarray | None):
    """Our mask (and bias) in a form torch's SDPA takes: bool as it is, or a float mask carrying the bias."""
    if bias is None:
        return torch.from_numpy(mask)
    return torch.from_numpy(np.where(mask, bias, -np.inf))  # (h, T_q, T_k): bias where seen, -inf where not


def torch_grouped_mha(torch, x, kv, proj: Projections, n_heads: int, attn_mask):
    """Multi-head attention with torch's SDPA on grouped K/V heads: project, split, attend (enable_gqa), merge, W_O."""
    d_k = proj.d_model // n_heads
    kv_heads = proj.d_kv // d_k
    tx, tkv = torch.from_numpy(x), torch.from_numpy(kv)

    def heads(a, w, n):  # (B, T, width) @ (d_model, width) -> (B, n, T, d_k)
        y = a @ torch.tensor(w)  # a copy: the cached weights are read-only
        return y.reshape(*y.shape[:-1], n, d_k).transpose(-3, -2)

    q, k, v = heads(tx, proj.w_q, n_heads), heads(tkv, proj.w_k, kv_heads), heads(tkv, proj.w_v, kv_heads)
    context = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, enable_gqa=True)
    concat = context.transpose(-3, -2).reshape(*x.shape[:-1], proj.d_model)  # (B, T_q, d_model)
    return (concat @ torch.tensor(proj.w_o)).numpy(), context.numpy()


def torch_weights(torch, q, k, attn_mask, scale):
    """softmax(q k^T scale + mask) in torch, the reference for the weights (SDPA does not return them)."""
    s = torch.from_numpy(q) @ torch.from_numpy(k).transpose(-1, -2) * scale
    s = s.masked_fill(~attn_mask, -math.inf) if attn_mask.dtype == torch.bool else s + attn_mask
    return torch.softmax(s, dim=-1).numpy()


def assert_defined_rows_equal(ours, ref, fully_masked):
    """Compare rows torch defines (not NaN); our fully masked rows must be exact zeros."""
    defined = ~np.isnan(ref).any(axis=-1)  # (..., T_q)
    assert defined[..., ~fully_masked].all(), "torch left a row with a visible key undefined"
    np.testing.assert_allclose(ours[defined], ref[defined], **TOL)
    np.testing.assert_array_equal(ours[..., fully_masked, :], 0.0)


SHAPES = {"self": (6, 6), "wide": (4, 7), "tall": (8, 4)}
GRID = list(itertools.product((False, True), (0, 1, 3), (0, 2), (False, True), (4, 2, 1)))


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize(("causal", "window", "prefix", "alibi", "kv_heads"), GRID)
def test_multi_head_attention_with_every_variant_matches_torch_sdpa(
    torch, shape, causal, window, prefix, alibi, kv_heads
):
    t_q, t_k = shape
    d_model, n_heads = 16, 4
    rng = np.random.default_rng([t_q, t_k, window, prefix, kv_heads])
    x, kv = rng.standard_normal((2, t_q, d_model)), rng.standard_normal((2, t_k, d_model))  # (B, T, d_model)
    proj = Projections.random(d_model, 1).grouped(n_heads, kv_heads)
    mask = attention_mask(t_q, t_k, causal=causal, window=window, prefix=prefix)  # (T_q, T_k), the builder
    bias = alibi_bias(n_heads, t_q, t_k) if alibi else None  # (h, T_q, T_k)
    trace = multi_head_attention(x, proj, n_heads, kv=kv, mask=mask, bias=bias)
    out, context = torch_grouped_mha(torch, x, kv, proj, n_heads, torch_mask(torch, mask, bias))
    fully_masked = ~mask.any(axis=1)  # (T_q,)
    assert_defined_rows_equal(trace.context, context, fully_masked)
    keep = ~fully_masked
    np.testing.assert_allclose(trace.output[:, keep], out[:, keep], **TOL)
    ref_w = torch_weights(
        torch, trace.q, trace.keys_per_head, torch_mask(torch, mask, bias), 1 / math.sqrt(d_model // n_heads)
    )
    assert_defined_rows_equal(trace.weights, ref_w, fully_masked)


def test_the_grid_reaches_fully_masked_rows():
    """The tall shape with a window leaves late queries no key: those rows are in the grid above."""
    assert not attention_mask(8, 4, window=1)[4:].any()
    assert not attention_mask(8, 4, window=3)[6:].any()


@pytest.mark.parametrize(("n_heads", "kv_heads"), [(8, 8), (8, 4), (8, 2), (8, 1), (32, 8)])
@pytest.mark.parametrize("causal", [False, True])
def test_grouped_sdpa_matches_torch_enable_gqa(torch, n_heads, kv_heads, causal):
    rng = np.random.default_rng([n_heads, kv_heads])
    q = rng.standard_normal((2, n_heads, 5, 8))  # (B, h, T_q, d_k)
    k, v = rng.standard_normal((2, kv_heads, 7, 8)), rng.standard_normal((2, kv_heads, 7, 8))  # (B, kv_heads, T_k, d_k)
    mask = attention_mask(5, 7, causal=True) if causal else None
    group = n_heads // kv_heads
    out, _ = scaled_dot_product_attention(q, repeat_kv(k, group), repeat_kv(v, group), mask)
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, enable_gqa=True)
    np.testing.assert_allclose(out, ref.numpy(), **TOL)  # is_causal is top-left aligned, like attention_mask

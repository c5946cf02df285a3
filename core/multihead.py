"""Multi-head attention by the reshape trick, returning every intermediate array.

Notation: ``T`` tokens, ``h`` heads, ``d_model`` the model width and
``d_k = d_model // h`` the width of one head; ``...`` is any batch prefix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from core.attention import repeat_kv, scaled_dot_product_attention
from core.heads import check_heads
from core.random_weights import cached_weights
from core.rope import apply_rope


@dataclass(frozen=True)
class Projections:
    """The learned matrices of one attention layer: ``w_q, w_o (d_model, d_model)``, ``w_k, w_v (d_model, d_kv)``.

    ``w_q, w_k, w_v`` map tokens to queries, keys and values (``x @ w + b``); ``w_o``
    mixes the concatenated heads back into the model width. ``d_kv = kv_heads * d_k``:
    multi-head attention has as many K/V heads as query heads (``d_kv = d_model``);
    grouped-query attention fewer (Llama 3: 8 for 32), multi-query one. The biases
    ``b_q, b_o`` ``(d_model,)`` and ``b_k, b_v`` ``(d_kv,)`` are optional: None means no
    bias (the random and hand-built weights have none; a pretrained BERT layer has all four).
    """

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray
    b_q: np.ndarray | None = None
    b_k: np.ndarray | None = None
    b_v: np.ndarray | None = None
    b_o: np.ndarray | None = None

    def __post_init__(self) -> None:
        d = self.w_q.shape[0]
        shapes = {name: getattr(self, name).shape for name in ("w_q", "w_k", "w_v", "w_o")}
        if shapes["w_q"] != (d, d) or shapes["w_o"] != (d, d):
            raise ValueError(f"w_q and w_o must be square (d_model, d_model), got {shapes}")
        d_kv = self.w_k.shape[-1]
        if shapes["w_k"] != (d, d_kv) or shapes["w_v"] != (d, d_kv) or d_kv < 1 or d % d_kv:
            raise ValueError(
                f"w_k and w_v must both be (d_model, d_kv) with d_kv = kv_heads * d_k dividing d_model = {d} "
                f"(square for multi-head attention), got {shapes}"
            )
        widths = {"b_q": d, "b_k": d_kv, "b_v": d_kv, "b_o": d}
        biases = {name: getattr(self, name).shape for name in widths if getattr(self, name) is not None}
        if any(s != (widths[name],) for name, s in biases.items()):
            raise ValueError(
                f"biases must have shapes (d_model,) = ({d},) for b_q, b_o and (d_kv,) = ({d_kv},) "
                f"for b_k, b_v, got {biases}"
            )

    @property
    def d_model(self) -> int:
        return self.w_q.shape[0]

    @property
    def d_kv(self) -> int:
        """The width of K and V: ``kv_heads * d_k`` (``d_model`` for multi-head attention)."""
        return self.w_k.shape[-1]

    @classmethod
    def random(cls, d_model: int, seed: int = 0, dtype: np.dtype | type = np.float64) -> Projections:
        """Gaussian weights with standard deviation ``1/sqrt(d_model)`` (LeCun normal), no biases.

        Why this scale: the embeddings have unit-variance entries, so each entry of
        Q and K also has variance ~1, and every scaled score ``q.k / sqrt(d_k)`` has
        variance ~1 whatever d_model and h are. Scores spread by about one unit give
        weights that are visibly peaked but not one-hot; ``tests/core`` checks this.
        The four matrices come from ``core.random_weights`` (drawn once per settings, read-only).
        """
        w_q, w_k, w_v, w_o = cached_weights(d_model, int(seed), np.dtype(dtype))  # four (d_model, d_model)
        return cls(w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o)

    def grouped(self, n_heads: int, kv_heads: int) -> Projections:
        """These weights with ``kv_heads`` K/V heads for ``n_heads`` query heads: W_K, W_V keep their first heads.

        W_K and W_V ``(d_model, d_model) -> (d_model, kv_heads * d_k)``: K/V head g keeps
        the columns of head g, and query heads ``g * group .. (g + 1) * group - 1`` share it
        (``group = n_heads / kv_heads``). The kept columns are the ones multi-head attention
        uses, so ``kv_heads = n_heads`` changes nothing and every score keeps its scale.
        """
        d_k = check_heads(self.d_model, n_heads)
        if kv_heads < 1 or n_heads % kv_heads:
            raise ValueError(f"kv_heads must divide n_heads = {n_heads}, got {kv_heads}")
        if self.d_kv != self.d_model:
            raise ValueError(f"these weights are grouped already (d_kv = {self.d_kv}): group square ones")
        cols = slice(0, kv_heads * d_k)  # the first kv_heads heads' columns
        return replace(
            self,
            w_k=self.w_k[:, cols],  # (d_model, kv_heads * d_k)
            w_v=self.w_v[:, cols],  # (d_model, kv_heads * d_k)
            b_k=None if self.b_k is None else self.b_k[cols],
            b_v=None if self.b_v is None else self.b_v[cols],
        )


@dataclass(frozen=True)
class AttentionTrace:
    """Every intermediate array of one multi-head attention call.

    Shapes with ``...`` the batch prefix of the input and ``kv_heads`` the number of
    K/V heads (``h`` for multi-head attention): q ``(..., h, T_q, d_k)``, k and v
    ``(..., kv_heads, T_k, d_k)`` as computed (``keys_per_head`` and ``values_per_head``
    repeat them to ``(..., h, T_k, d_k)``, what each query head attends over), scores
    (scaled ``QK^T`` before the bias and the mask) and weights ``(..., h, T_q, T_k)``,
    context ``(..., h, T_q, d_k)``, concat and output ``(..., T_q, d_model)``. ``mask``
    is the bool mask that was applied (True = may attend) or None; ``scale`` the factor
    that multiplied ``QK^T``; ``bias`` what was added to the scaled scores (ALiBi's,
    broadcastable to the scores) or None.

    With RoPE, ``q`` and ``k`` are the rotated arrays (so ``scores == q @ k^T *
    scale`` holds for every trace, with k per head) and ``q_unrotated``,
    ``k_unrotated`` hold them before the rotation; without RoPE those two are None.
    """

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    scores: np.ndarray
    weights: np.ndarray
    context: np.ndarray
    concat: np.ndarray
    output: np.ndarray
    mask: np.ndarray | None
    scale: float
    q_unrotated: np.ndarray | None = None
    k_unrotated: np.ndarray | None = None
    bias: np.ndarray | None = None

    @property
    def n_heads(self) -> int:
        return self.q.shape[-3]

    @property
    def kv_heads(self) -> int:
        """The number of K/V heads: ``n_heads`` (multi-head), fewer (grouped-query), or 1 (multi-query)."""
        return self.k.shape[-3]

    @property
    def group(self) -> int:
        """How many query heads share each K/V head: ``n_heads / kv_heads``."""
        return self.n_heads // self.kv_heads

    def kv_head_of(self, head: int) -> int:
        """The K/V head (0-based) that query head ``head`` (0-based) reads."""
        return head // self.group

    @property
    def keys_per_head(self) -> np.ndarray:
        """``(..., h, T_k, d_k)``: the keys each query head attended over (k repeated over its group)."""
        return repeat_kv(self.k, self.group)

    @property
    def values_per_head(self) -> np.ndarray:
        """``(..., h, T_k, d_k)``: the values each query head mixed (v repeated over its group)."""
        return repeat_kv(self.v, self.group)


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    """``(..., T, d_model) -> (..., h, T, d_k)``: the reshape trick (a view, no copy)."""
    *batch, t, d_model = x.shape
    x = x.reshape(*batch, t, n_heads, d_model // n_heads)  # (..., T, h, d_k): cut each row into h pieces
    return np.swapaxes(x, -3, -2)  # (..., h, T, d_k): one (T, d_k) matrix per head


def merge_heads(x: np.ndarray) -> np.ndarray:
    """``(..., h, T, d_k) -> (..., T, h * d_k)``, the inverse of ``split_heads``: concatenate the heads."""
    *batch, h, t, d_k = x.shape
    x = np.swapaxes(x, -3, -2)  # (..., T, h, d_k)
    return x.reshape(*batch, t, h * d_k)  # (..., T, d_model): head 0's columns, then head 1's, ...


def head_contributions(context: np.ndarray, w_o: np.ndarray) -> np.ndarray:
    """Each head's share of the output: ``Z_h @ W_O[rows of head h]``, ``(..., h, T, d_k) -> (..., h, T, d_model)``.

    Head h's context fills columns h*d_k..(h+1)*d_k-1 of concat, so it only ever meets those rows of W_O:
    ``concat @ W_O == sum over h of Z_h @ W_O[h*d_k:(h+1)*d_k]``. The output is the SUM of these
    (T, d_model) blocks (plus b_O); placing them side by side would give (T, h * d_model).
    """
    h, d_k = context.shape[-3], context.shape[-1]
    w_rows = w_o.astype(context.dtype, copy=False).reshape(h, d_k, w_o.shape[-1])  # (h*d_k, d) -> (h, d_k, d)
    return context @ w_rows  # (..., h, T, d_k) @ (h, d_k, d_model) -> (..., h, T, d_model)


def as_float(a: np.ndarray) -> np.ndarray:
    """``a`` as a float array: float dtypes are kept, anything else (ints, bools) becomes float64."""
    a = np.asarray(a)
    return a if np.issubdtype(a.dtype, np.floating) else a.astype(np.float64)


def linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """``x @ w + b``: ``(..., T, d_in) @ (d_in, d_out) -> (..., T, d_out)`` in ``x``'s dtype; no bias if None."""
    y = x @ w.astype(x.dtype, copy=False)  # (..., T, d_out)
    return y if b is None else y + b.astype(x.dtype, copy=False)


def multi_head_attention(
    x: np.ndarray,
    proj: Projections,
    n_heads: int,
    *,
    kv: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    scale: float | None = None,
    bias: np.ndarray | None = None,
    q_positions: np.ndarray | None = None,
    k_positions: np.ndarray | None = None,
) -> AttentionTrace:
    """Multi-head attention of ``x (..., T_q, d_model)`` over ``kv (..., T_k, d_model)``.

    project -> split heads -> attend (each head on its own d_k columns) -> merge heads -> W_O.

    ``kv=None``: self-attention (``kv = x``), else cross-attention. ``mask``: bool, True = may attend, broadcastable
    to ``(..., h, T_q, T_k)``. ``bias`` (ALiBi) is added to the scaled scores; ``scale=None``: ``1/sqrt(d_k)``.
    W_K and W_V of width ``kv_heads * d_k``: grouped-query heads. ``q_positions (T_q,)`` with ``k_positions (T_k,)``:
    RoPE turns q and k by their positions before ``QK^T``. float32 stays float32; integers are computed in float64.
    """
    if (q_positions is None) != (k_positions is None):
        raise ValueError("RoPE needs both q_positions and k_positions (or neither)")
    x = as_float(x)
    kv = x if kv is None else as_float(kv).astype(x.dtype, copy=False)
    if x.shape[-1] != proj.d_model:
        raise ValueError(f"x has width {x.shape[-1]} but the projections expect d_model = {proj.d_model}")
    d_k = check_heads(proj.d_model, n_heads)
    kv_heads = kv_head_count(proj, n_heads)
    scale = 1 / math.sqrt(d_k) if scale is None else float(scale)

    q = split_heads(linear(x, proj.w_q, proj.b_q), n_heads)  # (..., T_q, d_model) -> (..., h, T_q, d_k)
    k = split_heads(linear(kv, proj.w_k, proj.b_k), kv_heads)  # (..., T_k, d_kv) -> (..., kv_heads, T_k, d_k)
    v = split_heads(linear(kv, proj.w_v, proj.b_v), kv_heads)  # (..., T_k, d_kv) -> (..., kv_heads, T_k, d_k)
    q_unrotated = k_unrotated = None
    if q_positions is not None:  # RoPE: turn each head's q and k by their positions
        q_unrotated, k_unrotated = q, k
        q = apply_rope(q, q_positions)  # (..., h, T_q, d_k)
        k = apply_rope(k, k_positions)  # (..., kv_heads, T_k, d_k)
    group = n_heads // kv_heads  # query heads per K/V head (1: multi-head attention)
    context, weights, scores = scaled_dot_product_attention(  # (..., h, T_q, d_k), then two (..., h, T_q, T_k)
        q, repeat_kv(k, group), repeat_kv(v, group), mask, scale=scale, bias=bias, return_scores=True
    )
    concat = merge_heads(context)  # (..., h, T_q, d_k) -> (..., T_q, d_model)
    output = linear(concat, proj.w_o, proj.b_o)  # (..., T_q, d_model) @ (d_model, d_model) -> (..., T_q, d_model)
    return AttentionTrace(
        q=q,
        k=k,
        v=v,
        scores=scores,
        weights=weights,
        context=context,
        concat=concat,
        output=output,
        mask=mask,
        scale=scale,
        q_unrotated=q_unrotated,
        k_unrotated=k_unrotated,
        bias=bias,
    )


def kv_head_count(proj: Projections, n_heads: int) -> int:
    """How many K/V heads ``proj`` has when run with ``n_heads`` query heads: ``d_kv / d_k``.

    Raises ``ValueError`` when W_K's width is not a whole number of heads dividing ``n_heads``.
    """
    d_k = check_heads(proj.d_model, n_heads)
    kv_heads, rest = divmod(proj.d_kv, d_k)
    if rest or kv_heads < 1 or n_heads % kv_heads:
        raise ValueError(
            f"W_K and W_V have {proj.d_kv} columns: with {n_heads} heads of d_k = {d_k} that must be "
            f"kv_heads * {d_k} for a kv_heads dividing {n_heads}"
        )
    return kv_heads

"""Multi-head attention by the reshape trick, returning every intermediate array.

Notation: ``T`` tokens, ``h`` heads, ``d_model`` the model width and
``d_k = d_model // h`` the width of one head; ``...`` is any batch prefix.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from core.attention import attention_scores, masked_softmax, weighted_values
from core.rope import apply_rope


def valid_head_counts(d_model: int) -> list[int]:
    """The head counts that divide ``d_model`` evenly, ascending."""
    return [h for h in range(1, d_model + 1) if d_model % h == 0]


def check_heads(d_model: int, n_heads: int) -> int:
    """Return ``d_k = d_model // n_heads``, or raise ``ValueError`` naming the valid counts."""
    if n_heads < 1 or d_model % n_heads != 0:
        raise ValueError(
            f"{n_heads} heads do not divide d_model = {d_model}: each head needs "
            f"d_model / h columns. Valid head counts for d_model = {d_model}: "
            f"{', '.join(map(str, valid_head_counts(d_model)))}."
        )
    return d_model // n_heads


@dataclass(frozen=True)
class Projections:
    """The four learned matrices of one attention layer, each ``(d_model, d_model)``.

    ``w_q, w_k, w_v`` map tokens to queries, keys and values (``x @ w``); ``w_o``
    mixes the concatenated heads back into the model width. No biases.
    """

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray

    def __post_init__(self) -> None:
        shapes = {name: getattr(self, name).shape for name in ("w_q", "w_k", "w_v", "w_o")}
        d = self.w_q.shape[0]
        if any(s != (d, d) for s in shapes.values()):
            raise ValueError(f"all projections must be square (d_model, d_model), got {shapes}")

    @property
    def d_model(self) -> int:
        return self.w_q.shape[0]

    @functools.cached_property
    def w_qkv(self) -> np.ndarray | None:
        """``[w_q | w_k | w_v]`` as one ``(d_model, 3 d_model)`` view, or None.

        Derived from the fields: it exists when the three matrices are adjacent column
        blocks of one buffer, as ``random`` lays them out. Self-attention then projects
        with one matmul instead of three (~5% of a call at T=128, d_model=512). Worked
        out once per instance (checking the layout costs ~7 us, 0.4% of that call).
        """
        base, d = self.w_q.base, self.d_model
        if base is None or base.ndim != 2 or base.shape[1] < 3 * d:
            return None
        fused = base[:, : 3 * d]
        fields = (self.w_q, self.w_k, self.w_v)
        blocks = (fused[:, :d], fused[:, d : 2 * d], fused[:, 2 * d :])
        same_memory = all(  # same address, shape and strides: the field is exactly that block
            w.__array_interface__ == b.__array_interface__ for w, b in zip(fields, blocks, strict=True)
        )
        return fused if same_memory else None

    @classmethod
    def random(cls, d_model: int, seed: int = 0, dtype: np.dtype | type = np.float64) -> Projections:
        """Gaussian weights with standard deviation ``1/sqrt(d_model)`` (LeCun normal).

        Why this scale: the embeddings have unit-variance entries, so each entry of
        Q and K also has variance ~1, and every scaled score ``q.k / sqrt(d_k)`` has
        variance ~1 whatever d_model and h are. Scores spread by about one unit give
        weights that are visibly peaked but not one-hot; ``tests/core`` checks this.
        """
        w_qkv, w_o = _random_weights(d_model, int(seed), np.dtype(dtype))  # read-only, cached
        d = d_model
        return cls(w_q=w_qkv[:, :d], w_k=w_qkv[:, d : 2 * d], w_v=w_qkv[:, 2 * d :], w_o=w_o)  # w_q, w_k, w_v: views


@functools.lru_cache(maxsize=8)
def _random_weights(d_model: int, seed: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """The matrices of ``Projections.random``, drawn once per settings: ``[w_q | w_k | w_v]`` and ``w_o``.

    Drawing 4 x 512 x 512 normals costs ~10 ms, most of a ``core.run`` at d_model 512,
    and the dashboard asks for the same weights on every rerun. The arrays are made
    read-only so a cached copy can never be changed under another caller
    (8 entries: at most 64 MB at d_model 512 in float64). Both are C-contiguous:
    OpenBLAS multiplies by them ~5% faster than by column slices of one wider array.
    """
    rng = np.random.default_rng([seed, d_model, 0x5157])  # 0x5157: "QW", a stream apart from embeddings
    w = (rng.standard_normal((4, d_model, d_model)) * (1.0 / math.sqrt(d_model))).astype(dtype, copy=False)
    w_qkv = np.concatenate(list(w[:3]), axis=1)  # (3, d, d) -> (d, 3 d): the same numbers, side by side
    w_o = w[3].copy()  # not a view, so the (4, d, d) draw is freed
    for a in (w_qkv, w_o):
        a.flags.writeable = False
    return w_qkv, w_o


@dataclass(frozen=True)
class AttentionTrace:
    """Every intermediate array of one multi-head attention call.

    Shapes with ``...`` the batch prefix of the input:
    q ``(..., h, T_q, d_k)``, k and v ``(..., h, T_k, d_k)``, scores (scaled
    ``QK^T`` before masking) and weights ``(..., h, T_q, T_k)``, context
    ``(..., h, T_q, d_k)``, concat and output ``(..., T_q, d_model)``. ``mask`` is
    the bool mask that was applied (True = may attend) or None; ``scale`` the
    factor that multiplied ``QK^T``.

    With RoPE, ``q`` and ``k`` are the rotated arrays (so ``scores == q @ k^T *
    scale`` holds for every trace) and ``q_unrotated``, ``k_unrotated`` hold them
    before the rotation; without RoPE those two are None.
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

    @property
    def n_heads(self) -> int:
        return self.q.shape[-3]


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    """``(..., T, d_model) -> (..., h, T, d_k)`` by reshape and transpose (a view)."""
    *batch, t, d_model = x.shape
    return np.swapaxes(x.reshape(*batch, t, n_heads, d_model // n_heads), -3, -2)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """``(..., h, T, d_k) -> (..., T, h * d_k)``, the inverse of ``split_heads``."""
    *batch, h, t, d_k = x.shape
    return np.swapaxes(x, -3, -2).reshape(*batch, t, h * d_k)


def _project_qkv(x: np.ndarray, kv: np.ndarray | None, proj: Projections) -> tuple[np.ndarray, ...]:
    """Q ``(..., T_q, d_model)``, K and V ``(..., T_k, d_model)``, computed in ``x``'s dtype.

    Self-attention with ``Projections.random`` weights takes one matmul of width
    ``3 d_model`` and slices it (views); otherwise three matmuls.
    """
    dtype = x.dtype
    w_qkv = proj.w_qkv
    if kv is None and w_qkv is not None:
        qkv = x @ w_qkv.astype(dtype, copy=False)  # (..., T, d_model) @ (d_model, 3 d_model)
        d = proj.d_model
        return qkv[..., :d], qkv[..., d : 2 * d], qkv[..., 2 * d :]
    kv = x if kv is None else kv
    w_q, w_k, w_v = (w.astype(dtype, copy=False) for w in (proj.w_q, proj.w_k, proj.w_v))
    return x @ w_q, kv @ w_k, kv @ w_v


def _as_float(a: np.ndarray) -> np.ndarray:
    """``a`` as a float array: float dtypes are kept, anything else (ints, bools) becomes float64."""
    a = np.asarray(a)
    return a if np.issubdtype(a.dtype, np.floating) else a.astype(np.float64)


def multi_head_attention(
    x: np.ndarray,
    proj: Projections,
    n_heads: int,
    *,
    kv: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    scale: float | None = None,
    q_positions: np.ndarray | None = None,
    k_positions: np.ndarray | None = None,
) -> AttentionTrace:
    """Multi-head attention of ``x (..., T_q, d_model)`` over ``kv (..., T_k, d_model)``.

    ``kv=None`` is self-attention (``kv = x``); otherwise queries come from ``x`` and
    keys and values from ``kv`` (cross-attention). ``mask`` is bool, True = may
    attend, broadcastable to ``(..., h, T_q, T_k)``. ``scale=None`` means
    ``1/sqrt(d_k)``. The weights (and ``kv``) are cast to ``x.dtype``, so float32 stays
    float32; integer input is computed in float64.

    ``q_positions (T_q,)`` and ``k_positions (T_k,)``, given together, switch on RoPE:
    each head's q and k are rotated by their own positions before ``QK^T``.
    """
    if (q_positions is None) != (k_positions is None):
        raise ValueError("RoPE needs both q_positions and k_positions (or neither)")
    x = _as_float(x)
    kv = None if kv is None else _as_float(kv).astype(x.dtype, copy=False)
    d_model = x.shape[-1]
    if d_model != proj.d_model:
        raise ValueError(f"x has width {d_model} but the projections expect d_model = {proj.d_model}")
    d_k = check_heads(d_model, n_heads)
    w_o = proj.w_o.astype(x.dtype, copy=False)
    scale = 1.0 / math.sqrt(d_k) if scale is None else float(scale)

    # Underflow to 0 is correct rounding (a saturated float32 softmax has weights ~1e-40), not an error.
    with np.errstate(under="ignore"):
        q, k, v = (split_heads(a, n_heads) for a in _project_qkv(x, kv, proj))  # -> (..., h, T, d_k) each
        q_unrotated = k_unrotated = None
        if q_positions is not None:
            q_unrotated, k_unrotated = q, k
            q = apply_rope(q, q_positions)  # (..., h, T_q, d_k): every head turned by its query positions
            k = apply_rope(k, k_positions)  # (..., h, T_k, d_k)
        scores = attention_scores(q, k, scale)  # -> (..., h, T_q, T_k)
        weights = masked_softmax(scores, mask)  # -> (..., h, T_q, T_k)
        # Each head's context is written straight into its columns of concat, so merging heads costs nothing.
        *batch, _ = np.broadcast_shapes(weights.shape[:-2], v.shape[:-2])  # (..., h)
        concat = np.empty((*batch, weights.shape[-2], d_model), dtype=np.result_type(weights, v))  # (..., T_q, d_model)
        context = split_heads(concat, n_heads)  # (..., h, T_q, d_k), a view into concat
        weighted_values(weights, v, mask, out=context)  # (..., h, T_q, T_k) @ (..., h, T_k, d_k) -> (..., h, T_q, d_k)
        output = concat @ w_o  # (..., T_q, d_model) @ (d_model, d_model) -> (..., T_q, d_model)
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
    )

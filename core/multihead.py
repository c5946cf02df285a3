"""Multi-head attention by the reshape trick, returning every intermediate array.

Notation: ``T`` tokens, ``h`` heads, ``d_model`` the model width and
``d_k = d_model // h`` the width of one head; ``...`` is any batch prefix.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from core.attention import attention_scores, masked_softmax
from core.heads import check_heads
from core.rope import apply_rope


@dataclass(frozen=True)
class Projections:
    """The learned matrices of one attention layer: ``w_q, w_k, w_v, w_o`` each ``(d_model, d_model)``.

    ``w_q, w_k, w_v`` map tokens to queries, keys and values (``x @ w + b``); ``w_o``
    mixes the concatenated heads back into the model width. The biases
    ``b_q, b_k, b_v, b_o`` ``(d_model,)`` are optional: None means no bias (the
    random and hand-built weights have none; a pretrained BERT layer has all four).
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
        if any(s != (d, d) for s in shapes.values()):
            raise ValueError(f"all projections must be square (d_model, d_model), got {shapes}")
        biases = {
            name: getattr(self, name).shape for name in ("b_q", "b_k", "b_v", "b_o") if getattr(self, name) is not None
        }
        if any(s != (d,) for s in biases.values()):
            raise ValueError(f"biases must have shape (d_model,) = ({d},), got {biases}")

    @property
    def d_model(self) -> int:
        return self.w_q.shape[0]

    @classmethod
    def random(cls, d_model: int, seed: int = 0, dtype: np.dtype | type = np.float64) -> Projections:
        """Gaussian weights with standard deviation ``1/sqrt(d_model)`` (LeCun normal), no biases.

        Why this scale: the embeddings have unit-variance entries, so each entry of
        Q and K also has variance ~1, and every scaled score ``q.k / sqrt(d_k)`` has
        variance ~1 whatever d_model and h are. Scores spread by about one unit give
        weights that are visibly peaked but not one-hot; ``tests/core`` checks this.
        """
        w_q, w_k, w_v, w_o = _random_weights(d_model, int(seed), np.dtype(dtype))  # read-only, cached
        return cls(w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o)


@functools.lru_cache(maxsize=8)
def _random_weights(d_model: int, seed: int, dtype: np.dtype) -> tuple[np.ndarray, ...]:
    """``w_q, w_k, w_v, w_o`` of ``Projections.random``, drawn once per settings.

    The dashboard asks for the same weights on every rerun, and drawing them is most
    of a small run's time. The arrays are read-only, so a cached copy can never be
    changed under another caller (8 entries: at most 64 MB at d_model 512, float64).
    """
    rng = np.random.default_rng([seed, d_model, 0x5157])  # 0x5157: "QW", a stream apart from the embeddings
    w = (rng.standard_normal((4, d_model, d_model)) * (1.0 / math.sqrt(d_model))).astype(dtype, copy=False)  # (4, d, d)
    w.flags.writeable = False
    return tuple(w)  # four read-only (d_model, d_model) views


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


def _as_float(a: np.ndarray) -> np.ndarray:
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
    q_positions: np.ndarray | None = None,
    k_positions: np.ndarray | None = None,
) -> AttentionTrace:
    """Multi-head attention of ``x (..., T_q, d_model)`` over ``kv (..., T_k, d_model)``.

    project -> split heads -> attend (each head on its own d_k columns) -> merge heads -> W_O.

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
    kv = x if kv is None else _as_float(kv).astype(x.dtype, copy=False)
    if x.shape[-1] != proj.d_model:
        raise ValueError(f"x has width {x.shape[-1]} but the projections expect d_model = {proj.d_model}")
    d_k = check_heads(proj.d_model, n_heads)
    scale = 1 / math.sqrt(d_k) if scale is None else float(scale)

    q = split_heads(linear(x, proj.w_q, proj.b_q), n_heads)  # (..., T_q, d_model) -> (..., h, T_q, d_k)
    k = split_heads(linear(kv, proj.w_k, proj.b_k), n_heads)  # (..., T_k, d_model) -> (..., h, T_k, d_k)
    v = split_heads(linear(kv, proj.w_v, proj.b_v), n_heads)  # (..., T_k, d_model) -> (..., h, T_k, d_k)
    q_unrotated = k_unrotated = None
    if q_positions is not None:  # RoPE: turn each head's q and k by their positions
        q_unrotated, k_unrotated = q, k
        q = apply_rope(q, q_positions)  # (..., h, T_q, d_k)
        k = apply_rope(k, k_positions)  # (..., h, T_k, d_k)
    scores = attention_scores(q, k, scale)  # (..., h, T_q, d_k) @ (..., h, d_k, T_k) -> (..., h, T_q, T_k)
    weights = masked_softmax(scores, mask)  # (..., h, T_q, T_k): softmax over keys, masked keys get 0
    with np.errstate(under="ignore"):  # a weight of 1e-40 times a value may round to 0: correct, not an error
        context = weights @ v  # (..., h, T_q, T_k) @ (..., h, T_k, d_k) -> (..., h, T_q, d_k)
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
    )

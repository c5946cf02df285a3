"""Positional encodings added to the embeddings before attention.

Without one, self-attention sees a bag of tokens: permuting the input only
permutes the attention map. Each kind returns ``(t, d_model)``.
"""

from __future__ import annotations

import numpy as np

POSITIONAL_KINDS = ("none", "sinusoidal", "learned", "rope")
"""``"rope"`` adds nothing to x: it rotates each head's q and k instead (``core.rope``)."""


def sinusoidal(t: int, d_model: int) -> np.ndarray:
    """Vaswani et al. (2017): ``PE[p, 2i] = sin(p / 10000^(2i/d))``, ``PE[p, 2i+1] = cos(...)``."""
    pos = np.arange(t)[:, None]  # (t, 1)
    freq = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)  # (ceil(d/2),)
    angles = pos * freq  # (t, ceil(d/2))
    pe = np.empty((t, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d_model // 2])
    return pe


def learned(t: int, d_model: int, seed: int = 0) -> np.ndarray:
    """A random table standing in for a trained one: standard-normal rows.

    Row ``p`` depends only on ``(p, d_model, seed)``, not on ``t``: the generator
    fills rows in order, so a longer sentence extends the table.
    """
    rng = np.random.default_rng([int(seed), d_model, 0x504F53])  # 0x504F53: "POS", a stream of its own
    return rng.standard_normal((t, d_model))


def positional_encoding(kind: str, t: int, d_model: int, seed: int = 0, *, start: int = 0) -> np.ndarray:
    """The table added to x for positions ``start..start+t-1``: ``(t, d_model)`` float64.

    ``"none"`` and ``"rope"`` give zeros (RoPE acts on q and k, not on x);
    ``"sinusoidal"`` and ``"learned"`` give rows ``start..`` of their table.
    """
    if start < 0:
        raise ValueError(f"positions start at 0 or later, got start = {start}")
    if kind in ("none", "rope"):
        return np.zeros((t, d_model))
    if kind == "sinusoidal":
        return sinusoidal(start + t, d_model)[start:]
    if kind == "learned":
        return learned(start + t, d_model, seed)[start:]
    raise ValueError(f"unknown positional encoding {kind!r}; choose one of {', '.join(POSITIONAL_KINDS)}")

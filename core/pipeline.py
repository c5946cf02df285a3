"""The whole data path for one sentence, and the permutation experiment built on it.

tokens -> embed -> + positional -> multi-head self-attention -> trace.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.attention import causal_mask
from core.multihead import AttentionTrace, Projections, check_heads, multi_head_attention
from core.positions import POSITIONAL_KINDS, positional_encoding
from core.tokens import embed


@dataclass(frozen=True)
class AttentionConfig:
    """The settings a teacher changes, one reason per field."""

    d_model: int = 64
    """Width of every token vector; more width, more room per head."""
    n_heads: int = 4
    """Heads run side by side, each on d_k = d_model / n_heads columns."""
    causal: bool = False
    """Mask future tokens, as a decoder does: query i sees keys 0..i only."""
    positional: str = "none"
    """"none" keeps the permutation symmetry; "sinusoidal" or "learned" break it."""
    seed: int = 0
    """Fixes the embeddings, positional table and projections: same seed, same pictures."""

    def __post_init__(self) -> None:
        if self.d_model < 1:
            raise ValueError(f"d_model must be a positive integer, got {self.d_model}")
        check_heads(self.d_model, self.n_heads)
        if self.positional not in POSITIONAL_KINDS:
            raise ValueError(f"positional must be one of {POSITIONAL_KINDS}, got {self.positional!r}")
        if self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed}")

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads


@dataclass(frozen=True)
class Run:
    """One sentence through the data path: the inputs and the attention trace."""

    tokens: tuple[str, ...]
    x: np.ndarray
    """(T, d_model) token embeddings, before any position is added."""
    positions: np.ndarray
    """(T, d_model) positional encoding (zeros for "none")."""
    trace: AttentionTrace
    """Q, K, V, scores, weights, context, concat and output of self-attention on x + positions."""


def run(tokens: list[str] | tuple[str, ...], config: AttentionConfig) -> Run:
    """Embed ``tokens``, add positions, and run multi-head self-attention."""
    t = len(tokens)
    x = embed(list(tokens), config.d_model, config.seed)  # (T, d_model)
    pe = positional_encoding(config.positional, t, config.d_model, config.seed)  # (T, d_model)
    proj = Projections.random(config.d_model, config.seed)
    mask = causal_mask(t) if config.causal else None  # (T, T)
    trace = multi_head_attention(x + pe, proj, config.n_heads, mask=mask)
    return Run(tokens=tuple(tokens), x=x, positions=pe, trace=trace)


@dataclass(frozen=True)
class PermutationResult:
    """Attention on a sentence and on a reordering of it, compared position by position."""

    permutation: np.ndarray
    """(T,) the reordered sentence is ``[tokens[p] for p in permutation]``."""
    weights: np.ndarray
    """(h, T, T) weights for the original order."""
    permuted_weights: np.ndarray
    """(h, T, T) weights for the reordered sentence, in its own order."""
    realigned: np.ndarray
    """(h, T, T) the permuted weights moved back to the original order."""
    max_abs_diff: float
    """max |weights - realigned|: rounding level (~1e-15) exactly when order is invisible."""


def realign(permuted: np.ndarray, permutation: np.ndarray) -> np.ndarray:
    """Undo a permutation of both token axes: ``out[..., p[i], p[j]] = permuted[..., i, j]``."""
    inverse = np.argsort(permutation)
    return permuted[..., inverse, :][..., :, inverse]


def permutation_experiment(
    tokens: list[str] | tuple[str, ...], permutation: list[int] | np.ndarray, config: AttentionConfig
) -> PermutationResult:
    """Run attention on ``tokens`` and on ``tokens`` reordered by ``permutation``.

    With no positional encoding and no mask the realigned map equals the original
    to rounding; a positional encoding or the causal mask makes the difference large.
    """
    perm = np.asarray(permutation)
    if sorted(perm.tolist()) != list(range(len(tokens))):
        raise ValueError(f"{perm.tolist()} is not a permutation of positions 0..{len(tokens) - 1}")
    original = run(tokens, config).trace.weights
    permuted = run([tokens[p] for p in perm], config).trace.weights
    realigned = realign(permuted, perm)
    return PermutationResult(
        permutation=perm,
        weights=original,
        permuted_weights=permuted,
        realigned=realigned,
        max_abs_diff=float(np.max(np.abs(original - realigned))),
    )

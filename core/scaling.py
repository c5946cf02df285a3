"""Why divide by sqrt(d_k): softmax sharpness against head width, with and without the factor.

For q and k with independent unit-variance entries, ``q . k`` is a sum of d_k
products of variance 1, so its standard deviation is sqrt(d_k). Unscaled, the
scores spread wider as heads widen and the softmax collapses toward one-hot (the
largest weight -> 1, entropy -> 0, gradients vanish). Dividing by sqrt(d_k)
brings the spread back to 1, so the weights look the same at every width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.attention import softmax
from core.head_summary import row_entropy

DEFAULT_D_KS = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
"""Head widths from tiny to larger than any common model's head (64 or 128)."""


@dataclass(frozen=True)
class ScalingResult:
    """Softmax sharpness per d_k, averaged over seeds and query rows; arrays are ``(len(d_ks),)``."""

    d_ks: np.ndarray
    """The head widths tried."""
    max_weight_scaled: np.ndarray
    """Mean largest weight of a row with scores q.k / sqrt(d_k): about flat in d_k."""
    max_weight_unscaled: np.ndarray
    """Mean largest weight with raw q.k: rises toward 1 (one-hot) as d_k grows."""
    entropy_scaled: np.ndarray
    """Mean row entropy in nats with the factor; log(t) would be uniform."""
    entropy_unscaled: np.ndarray
    """Mean row entropy without it: falls toward 0."""
    t: int
    """Keys per row (and queries per draw)."""
    n_seeds: int
    """Independent (q, k) draws per d_k."""

    @property
    def uniform_entropy(self) -> float:
        """log(t): the entropy of equal weights, the ceiling of both entropy curves."""
        return math.log(self.t)


def _sharpness(scores: np.ndarray) -> tuple[float, float]:
    """Mean max weight and mean entropy (nats) of the softmax rows of ``scores (n, t, t)``."""
    w = softmax(scores)  # (n, t, t)
    return float(w.max(axis=-1).mean()), float(row_entropy(w).mean())


def scaling_experiment(
    d_ks: tuple[int, ...] | list[int] = DEFAULT_D_KS, n_seeds: int = 32, t: int = 16, seed: int = 0
) -> ScalingResult:
    """Draw ``n_seeds`` pairs q, k ``(t, d_k)`` of standard-normal entries per d_k; compare both scalings.

    The same draws serve both columns, so the two curves differ only by the factor.
    Each d_k has its own random stream (``[seed, d_k]``): adding a width to the grid
    leaves the other points unchanged.
    """
    if n_seeds < 1 or t < 1 or any(d < 1 for d in d_ks):
        raise ValueError(f"n_seeds, t and every d_k must be positive, got {n_seeds}, {t}, {list(d_ks)}")
    out = np.empty((len(d_ks), 4))  # columns: max scaled, max unscaled, entropy scaled, entropy unscaled
    for row, d_k in enumerate(d_ks):
        rng = np.random.default_rng([int(seed), int(d_k), 0x5CA1E])  # 0x5CA1E: "SCALE", a stream of its own
        q = rng.standard_normal((n_seeds, t, d_k))
        k = rng.standard_normal((n_seeds, t, d_k))
        raw = q @ np.swapaxes(k, -1, -2)  # (n, t, d_k) @ (n, d_k, t) -> (n, t, t), std sqrt(d_k)
        (m_s, h_s), (m_u, h_u) = _sharpness(raw / math.sqrt(d_k)), _sharpness(raw)
        out[row] = m_s, m_u, h_s, h_u
    return ScalingResult(
        d_ks=np.asarray(d_ks),
        max_weight_scaled=out[:, 0],
        max_weight_unscaled=out[:, 1],
        entropy_scaled=out[:, 2],
        entropy_unscaled=out[:, 3],
        t=t,
        n_seeds=n_seeds,
    )


SPREAD_D_KS = (16, 64, 512)
"""Widths for the spread of raw scores: a small head, a common head (64), and lesson 3's 512-wide dot product."""
SPREAD_QUANTILES = (0.005, 0.025, 0.25, 0.5, 0.75, 0.975, 0.995)
"""Quantiles reported per width: the middle half, the middle 95 % and the middle 99 %."""


@dataclass(frozen=True)
class SpreadResult:
    """Raw dot products ``q . k`` of unit-variance vectors, per width; arrays are ``(len(d_ks), ...)``."""

    d_ks: np.ndarray
    """The widths tried."""
    scores: np.ndarray
    """(len(d_ks), n) the raw scores drawn at each width (for a histogram)."""
    std: np.ndarray
    """(len(d_ks),) their sample standard deviation: close to sqrt(d_k)."""
    quantiles: np.ndarray
    """(len(d_ks), len(SPREAD_QUANTILES)) the scores' quantiles."""
    share_beyond_100: np.ndarray
    """(len(d_ks),) the fraction of scores with |q . k| >= 100."""


def score_spread(d_ks: tuple[int, ...] | list[int] = SPREAD_D_KS, n: int = 20_000, seed: int = 0) -> SpreadResult:
    """Draw ``n`` pairs q, k ``(d_k,)`` of standard-normal entries per width; return their raw dot products.

    ``q . k`` is a sum of d_k products of variance 1, so its standard deviation is sqrt(d_k): about 22.6 at
    d_k = 512, where +-100 is 4.4 standard deviations out. Each width has its own stream ``[seed, d_k]``.
    """
    if n < 2 or any(d < 1 for d in d_ks):
        raise ValueError(f"n must be at least 2 and every d_k positive, got {n}, {list(d_ks)}")
    rows = []
    for d_k in d_ks:
        rng = np.random.default_rng([int(seed), int(d_k), 0x5D])  # 0x5D: "SD", a stream of its own
        q = rng.standard_normal((n, d_k))  # (n, d_k)
        k = rng.standard_normal((n, d_k))  # (n, d_k)
        rows.append(np.einsum("nd,nd->n", q, k))  # (n,): one q . k per pair
    scores = np.stack(rows)  # (len(d_ks), n)
    return SpreadResult(
        d_ks=np.asarray(d_ks),
        scores=scores,
        std=scores.std(axis=1, ddof=1),
        quantiles=np.quantile(scores, SPREAD_QUANTILES, axis=1).T,  # (len(d_ks), len(SPREAD_QUANTILES))
        share_beyond_100=(np.abs(scores) >= 100).mean(axis=1),
    )

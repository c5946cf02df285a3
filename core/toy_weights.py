"""Hand-built projections, next to the random ones, so a class sees weights *make* a pattern.

``"identity"``: W_Q = W_K = W_V = W_O = I. A score is then ``x_i . x_j / sqrt(d_k)``
over the head's columns: a token matches itself and every copy of itself (the same
word has the same embedding), so repeated words attend to each other.

``"previous"``: a previous-token head, built with the position table it reads.
Why a table of its own: the word vectors have unit-variance entries in *every*
coordinate, and a linear W_Q, W_K cannot separate them from a position vector
added on top. With the sinusoidal table (entries of size 1) the rotation trick
"PE(p-1) is a fixed rotation of PE(p)" is drowned by the words: it gives ~0 weight
on the previous token (measured, d_model = 64). So this model's learned table
writes each position loudly into the first four coordinates as two clock hands,
``CLOCK_RADIUS * (cos p a, sin p a, cos p b, sin p b)`` with a slow hand
(``a = 2 pi / 72``: no two positions of a sentence share its angle) and a fast hand
(``b = 2 pi / 4.5``: neighbours differ clearly). Every head's W_K copies the hands;
W_Q copies them turned back by one position, so ``q_i`` points where ``k_{i-1}``
points and the scaled score peaks at ``j = i - 1``. W_V = W_O = I: each output row
is roughly the previous token's vector. Two hands need four columns, hence
``d_k >= 4``. The pipeline uses the clock table when ``weights="previous"`` and
``positional="learned"``; with any other encoding the head has no clock to read
and its pattern fades, which is itself the lesson.
"""

from __future__ import annotations

import math

import numpy as np

from core.heads import PREVIOUS_MIN_D_K, check_heads
from core.multihead import Projections
from core.positions import positional_encoding

WEIGHT_KINDS = ("random", "identity", "previous")

CLOCK_PERIODS = (72.0, 4.5)
"""Positions per turn of the slow and the fast hand; chosen so that the clean scores
of the previous-token head beat every other key by a margin for sentences up to 64."""
CLOCK_RADIUS = 48.0
"""Length of each hand: large against the unit-variance word vectors, whose noise in
the score grows like the radius while the position signal grows like its square."""
CLOCK_SHARPNESS = 40.0
"""Each hand contributes ``CLOCK_SHARPNESS * cos(angle)`` to the scaled score, so the
target key scores 80 and its nearest rival at least ~12 less."""


def clock_positions(t: int, d_model: int, start: int = 0) -> np.ndarray:
    """The previous-token model's learned table ``(t, d_model)`` for positions ``start..start+t-1``.

    Columns 0-3 hold the two hands ``(cos, sin)`` pairs; every other column is zero.
    """
    if d_model < PREVIOUS_MIN_D_K:
        raise ValueError(f"the clock table needs d_model >= {PREVIOUS_MIN_D_K}, got {d_model}")
    p = np.arange(start, start + t, dtype=np.float64)[:, None]  # (t, 1)
    angles = p * (2 * np.pi / np.asarray(CLOCK_PERIODS))  # (t, 2): slow, fast
    table = np.zeros((t, d_model))
    table[:, 0:4:2] = CLOCK_RADIUS * np.cos(angles)
    table[:, 1:4:2] = CLOCK_RADIUS * np.sin(angles)
    return table


def identity_projections(d_model: int) -> Projections:
    """W_Q = W_K = W_V = W_O = I (d_model, d_model): tokens attend to look-alikes."""
    eye = np.eye(d_model)
    return Projections(w_q=eye, w_k=eye.copy(), w_v=eye.copy(), w_o=eye.copy())


def _turn_back(angle: float) -> np.ndarray:
    """(2, 2) ``B`` with ``[cos t, sin t] @ B = [cos(t - angle), sin(t - angle)]`` (row vectors)."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s], [s, c]])


def previous_token_projections(d_model: int, n_heads: int) -> Projections:
    """Every head attends to the previous position, read from ``clock_positions``.

    Head ``h`` uses its first four columns ``h*d_k .. h*d_k+3``; the gain ``g`` makes the
    scaled score ``g^2 (q . k) / sqrt(d_k)`` equal ``CLOCK_SHARPNESS * (cos + cos)``
    of the hands' angle difference, whatever d_k is.
    """
    d_k = check_heads(d_model, n_heads, weights="previous")
    gain = math.sqrt(CLOCK_SHARPNESS) * d_k**0.25 / CLOCK_RADIUS
    back = np.zeros((4, 4))  # turns both hands back by one position
    for hand, period in enumerate(CLOCK_PERIODS):
        back[2 * hand : 2 * hand + 2, 2 * hand : 2 * hand + 2] = _turn_back(2 * np.pi / period)
    w_q = np.zeros((d_model, d_model))
    w_k = np.zeros((d_model, d_model))
    for head in range(n_heads):
        cols = slice(head * d_k, head * d_k + 4)
        w_q[0:4, cols] = gain * back  # q_i: position i's hands turned back to position i-1
        w_k[0:4, cols] = gain * np.eye(4)  # k_j: position j's hands as they are
    eye = np.eye(d_model)
    return Projections(w_q=w_q, w_k=w_k, w_v=eye, w_o=eye.copy())


def make_projections(kind: str, d_model: int, n_heads: int, seed: int = 0) -> Projections:
    """``"random"`` (seeded, ``Projections.random``), ``"identity"`` or ``"previous"``."""
    if kind == "random":
        return Projections.random(d_model, seed)
    if kind == "identity":
        return identity_projections(d_model)
    if kind == "previous":
        return previous_token_projections(d_model, n_heads)
    raise ValueError(f"unknown weights {kind!r}; choose one of {', '.join(WEIGHT_KINDS)}")


def model_positions(positional: str, weights: str, t: int, d_model: int, seed: int = 0, start: int = 0) -> np.ndarray:
    """The table added to x ``(t, d_model)``: the clock table for a previous-token model's
    learned positions, otherwise ``positional_encoding`` for positions ``start..start+t-1``."""
    if weights == "previous" and positional == "learned":
        return clock_positions(t, d_model, start)
    return positional_encoding(positional, t, d_model, seed, start=start)

"""The shift figure: one head's map at positions 0.. and at shift.., and their difference, per encoding."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dashboard.figures.grid import ChartGrid, GridSpec, Panel, chart_grid
from dashboard.figures.layout import map_columns


@dataclass(frozen=True)
class ShiftRow:
    """One positional encoding's pair of maps for the same head, each ``(T, T)``."""

    label: str
    weights: np.ndarray
    shifted: np.ndarray


def shift_charts(
    rows: Sequence[ShiftRow],
    tokens: Sequence[str],
    shift: int,
    allowed: np.ndarray | None = None,
    *,
    presenter: bool = False,
) -> ChartGrid:
    """Three maps per encoding, one chart each, a row per encoding (a phone stacks them): positions 0..T-1,
    positions shift..shift+T-1, and |difference|.

    All on the 0-1 weight scale: a difference is between two weights, so it is in
    [0, 1] too, and "no difference" is the dark end, like a weight of 0.
    """
    t = len(tokens)
    span = f"{0}–{t - 1}" if t > 1 else "0"
    shifted_span = f"{shift}–{shift + t - 1}" if t > 1 else str(shift)
    panels = []
    for row in rows:
        if row.weights.shape != (t, t) or row.shifted.shape != (t, t):
            raise ValueError(f"{row.label}: maps {row.weights.shape}, {row.shifted.shape} do not match {t} tokens")
        diff = np.abs(row.weights - row.shifted)  # (T, T)
        panels += [
            Panel(row.weights, tokens, tokens, f"{row.label}: positions {span}", allowed),
            Panel(row.shifted, tokens, tokens, f"{row.label}: positions {shifted_span}", allowed),
            Panel(diff, tokens, tokens, f"{row.label}: |difference|", allowed, hover="|difference| at %{y} → %{x}"),
        ]
    return chart_grid(panels, map_columns(3, presenter=presenter), GridSpec(presenter=presenter))

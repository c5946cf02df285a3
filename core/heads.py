"""Which head counts are allowed: the one rule every control, link note and config check asks.

Each of the ``h`` heads works on ``d_k = d_model / h`` columns, so ``h`` must divide
``d_model``. Two settings ask more of ``d_k``: RoPE rotates pairs of coordinates (an
even ``d_k``), and the hand-built previous-token head reads two clock hands of two
coordinates each (``d_k >= 4``).
"""

from __future__ import annotations

PREVIOUS_MIN_D_K = 4
"""Two clock hands of two coordinates each: the hand-built previous-token head needs ``d_k >= 4``."""


def head_count_problem(d_model: int, n_heads: int, positional: str = "none", weights: str = "random") -> str | None:
    """Why ``n_heads`` heads cannot run with these settings, in one sentence; None when they can."""
    if n_heads < 1:
        return f"{n_heads} heads: at least one head is needed."
    if d_model % n_heads:
        return f"{n_heads} heads do not divide d_model = {d_model}: each head needs d_model / h columns."
    d_k = d_model // n_heads
    if positional == "rope" and d_k % 2:
        return f"{n_heads} heads leave d_k = {d_k}, but RoPE rotates pairs of coordinates: it needs an even d_k."
    if weights == "previous" and d_k < PREVIOUS_MIN_D_K:
        return (
            f"{n_heads} heads leave d_k = {d_k}, but the previous-token head reads two clock hands: "
            f"it needs d_k >= {PREVIOUS_MIN_D_K}."
        )
    return None


def head_counts(d_model: int, positional: str = "none", weights: str = "random") -> list[int]:
    """The head counts these settings allow, ascending (may be empty)."""
    return [h for h in range(1, d_model + 1) if head_count_problem(d_model, h, positional, weights) is None]


def check_heads(d_model: int, n_heads: int, positional: str = "none", weights: str = "random") -> int:
    """Return ``d_k = d_model // n_heads``, or raise ``ValueError`` saying why and naming the valid counts."""
    problem = head_count_problem(d_model, n_heads, positional, weights)
    if problem is not None:
        valid = ", ".join(map(str, head_counts(d_model, positional, weights))) or "none"
        raise ValueError(f"{problem} Valid head counts for d_model = {d_model}: {valid}.")
    return d_model // n_heads

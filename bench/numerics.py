"""The one speed trick left in ``core/numerics/``, on and off, side by side at the app's sizes.

    python -m bench.numerics            # ~1 minute

``core.numerics.erf.FAST`` picks float32's erf: the fitted ``tanh(x P(x^2))`` (on) or the
float64 fdlibm erf with two casts (off, the plain version). Timed: erf alone on a
training batch's GELU input (B = 64, T = 24, 4 x d_model 64 = 256) and on MiniLM's at
T = 128 (128, 1536); then one whole training step (forward, cross-entropy, backward, Adam;
float32, B = 64, T = 24, LayerNorm + MLP, the only models with a GELU). One BLAS thread,
as the app runs (``dashboard/app.py`` sets OPENBLAS_NUM_THREADS=1).

Timing as in ``bench.core``: interleaved rounds in alternating order, IDLE_SECONDS of
sleep before each turn, the best of a few calls per turn; the table gives each side's
median and the median of off/on measured within a round (the machine is shared, so
only that ratio is worth comparing between runs). Before timing, each case checks that
both sides agree (erf within 2e-7; the step's loss within 1e-5).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

import core.numerics.erf as erf_module
from bench.core import IDLE_SECONDS, best_of, numpy_blas_threads, set_numpy_blas_threads, steady_allocator
from bench.train import VOCAB, B, T, make_batch, numpy_step
from core.training.model import ModelConfig, init_params

ROUNDS = 9
ROUND_SECONDS = 0.2
STEP_CONFIGS = ((1, 32), (2, 64))
"""(layers, d_model) of the timed steps, 2 heads, LayerNorm + MLP."""


def with_fast(on: bool, fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` run with ``erf_module.FAST`` set to ``on``, and set back after."""

    def run() -> object:
        saved, erf_module.FAST = erf_module.FAST, on
        try:
            return fn()
        finally:
            erf_module.FAST = saved

    return run


def training_step(config: ModelConfig) -> Callable[[], float]:
    """One step of bench.train's (B = 64, T = 24) on its fixed batch from fresh float32 weights; returns the loss."""
    return numpy_step(config, init_params(config, VOCAB, 0, np.float32), make_batch())


def side_by_side(label: str, fn: Callable[[], object]) -> None:
    """Print the medians of ``fn`` with FAST on and off, and of off/on within a round (with its IQR)."""
    sides = {"on": with_fast(True, fn), "off": with_fast(False, fn)}
    calls = int(np.clip(ROUND_SECONDS / 2 / min(best_of(f, 1) for f in sides.values()), 1, 50))
    samples: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for r in range(ROUNDS):
        for name in names[r % 2 :] + names[: r % 2]:
            time.sleep(IDLE_SECONDS)
            samples[name].append(best_of(sides[name], calls))
    ratios = np.array(samples["off"]) / np.array(samples["on"])
    q1, q3 = np.percentile(ratios, [25, 75])
    print(
        f"{label:<44} {np.median(samples['on']) * 1e3:>8.3f} {np.median(samples['off']) * 1e3:>8.3f} "
        f"{np.median(ratios):>7.2f} ({q1:.2f}-{q3:.2f})",
        flush=True,
    )


def main() -> int:
    steady_allocator()
    if not set_numpy_blas_threads(1):
        print("cannot set NumPy's BLAS to 1 thread (not OpenBLAS?): timings would not be the app's")
    print(f"numpy {np.__version__}, BLAS threads {numpy_blas_threads() or 'unknown'}; {ROUNDS} rounds")
    print(f"{'case':<44} {'on ms':>8} {'off ms':>8} {'off/on':>7} (IQR)")
    rng = np.random.default_rng(0)
    for shape in ((B, T, 256), (128, 1536)):
        x = rng.standard_normal(shape).astype(np.float32)
        on, off = with_fast(True, lambda x=x: erf_module.erf(x))(), with_fast(False, lambda x=x: erf_module.erf(x))()
        if not np.allclose(on, off, rtol=0, atol=2e-7):
            raise AssertionError(f"erf on {shape}: the two paths differ by {np.abs(on - off).max()}")
        side_by_side(f"erf float32 {shape}", lambda x=x: erf_module.erf(x))
    for layers, d in STEP_CONFIGS:
        config = ModelConfig(d_model=d, n_heads=2, n_layers=layers, layer_norm=True, mlp=True)
        loss_on = with_fast(True, training_step(config))()
        loss_off = with_fast(False, training_step(config))()
        if abs(loss_on - loss_off) > 1e-5:
            raise AssertionError(f"step loss {loss_on} with FAST, {loss_off} without")
        side_by_side(f"training step, {layers} layer(s), d_model {d}, LN+MLP", training_step(config))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Speed of ``core.multi_head_attention`` on the CPU against two PyTorch forms of the same layer.

    python -m bench.core               # both tables
    python -m bench.core attention     # only the attention-only table (today's variants)

The first table times the whole layer (projections, attention, output projection) against
``torch.nn.MultiheadAttention`` ("MHA", every head's weights returned, as ours does) and against
the same projections around ``torch.nn.functional.scaled_dot_product_attention`` ("SDPA", as
nanoGPT writes it: ``F.linear`` for Q|K|V, ``is_causal=True``, ``F.linear`` for W_O). SDPA
returns no weights, so it does less work than ours; a speed claim names which one it beats.

A second table times attention alone (q, k and v given, no projections) for the shapes of
today's models, against ``torch.nn.functional.scaled_dot_product_attention``: grouped-query
heads (32 query, 8 K/V heads, d_k 128, as Llama 3 8B) with the causal mask at T = 128 and
1,024, and a sliding window of 128 at T = 1,024. Ours repeats K and V over each group
(``repeat_kv``) and returns every weight; torch's SDPA gets ``enable_gqa=True``, repeats
nothing and returns no weights, so it does less work. The tiled path
(``core.tiled.tiled_attention``, B_c = 128) is a teaching path: its time is reported, with
no target.

Ours and MHA do the same work: float32, the same weights, a causal mask, no biases,
and every head's weights returned (torch: ``need_weights=True,
average_attn_weights=False``). Each gets its mask built before timing, in its
own polarity (ours: True = may attend; torch's ``attn_mask``: True = masked), so
turning the mask into whatever form a side computes with is inside its timing.
SDPA gets the same weights and ``is_causal=True`` (torch's causal fast path, no mask).

Why the timing is shaped this way: the machine is shared and noisy (other
tenants take whole time slices: a 2 ms call sometimes takes 10 or 100 ms), and
its speed drifts over seconds. So the sides, and a plain matmul (the
yardstick for GFLOP/s), run interleaved in rounds, in rotating order. Each
contestant's turn starts after IDLE_SECONDS of sleep, because after a call
OpenBLAS keeps a worker thread spinning on a core for ~0.1 s (torch's OpenMP
threads for much less), which would slow whoever runs next; then one discarded
warm-up call wakes its own threads, then a few timed calls, of which the fastest
counts: the one least disturbed by other tenants. The table gives each
contestant's median over rounds, and the median over rounds of ours/torch's
measured in the same round, which cancels most of the drift. glibc's malloc
thresholds are fixed first (``steady_allocator``), so neither side's allocations
decide whether the other's arrays land on fresh pages.

Before timing, each size checks once that every side gives the same output (and
MHA the same weights) to float32 tolerance, so a broken fast path cannot look fast.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core import Projections, attention_mask, causal_mask, multi_head_attention, repeat_kv, scaled_dot_product_attention
from core.tiled import tiled_attention

SIZES = ((16, 64, 4), (64, 512, 16), (128, 512, 8), (512, 512, 8), (1024, 768, 12))
"""(T, d_model, h): a classroom sentence, the app's largest (64 tokens, d_model 512, 16 heads), then sizes beyond."""

ATTENTION_SIZES = (
    ("GQA 32/8", 128, 32, 8, 128, 0),
    ("GQA 32/8", 1024, 32, 8, 128, 0),
    ("window 128", 1024, 32, 8, 128, 128),
)
"""(label, T, h, kv_heads, d_k, window) of the attention-only rows: Llama 3 8B's heads; a window of 128."""

TILE_BLOCK = 128
"""B_c of the tiled path's timing: FlashAttention's usual key block on a GPU."""

ROUND_SECONDS = 0.6
"""Rough wall time of the timed calls of one round (all three contestants); sets the calls per turn."""

IDLE_SECONDS = 0.15
"""Sleep before each turn, so that no library's worker threads still spin (OpenBLAS: ~0.1 s)."""

SIZE_SECONDS = 20.0
"""Timing budget per size: five sizes keep the whole run under ~2 minutes."""

MIN_ROUNDS, MAX_ROUNDS = 7, 25
"""At least MIN_ROUNDS even past the budget (a median needs a few), at most MAX_ROUNDS."""

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
"""glibc's ``mallopt`` parameter numbers (``malloc.h``)."""

MMAP_BYTES, TRIM_BYTES = 32 << 20, 1 << 30
"""Fixed malloc thresholds (32 MiB is the largest mmap threshold glibc accepts); see ``steady_allocator``."""

RTOL, ATOL = 1e-4, 1e-5
"""Float32 agreement asked of the sides: weights lie in [0, 1], outputs are O(1)."""


def attention_flops(t: int, d_model: int) -> int:
    """Multiply-adds x 2 of one self-attention call: ``8 T d^2 + 4 T^2 d``.

    Q, K, V and output projections: 4 x ``2 T d^2``; ``QK^T`` over all heads:
    ``2 T^2 d`` (h heads x ``2 T^2 d_k``); weights @ V: ``2 T^2 d``. Masking and the
    softmax (O(h T^2)) are not counted.
    """
    return 8 * t * d_model**2 + 4 * t**2 * d_model


def matmul_flops(t: int, d_model: int) -> int:
    """``(T, d) @ (d, d)``: ``2 T d^2``, the plain float32 matmul used as the yardstick."""
    return 2 * t * d_model**2


def _openblas_call(names: tuple[str, ...], *args: int) -> int | None:
    """Call the first of ``names`` the loaded OpenBLAS exports; None if there is none (not OpenBLAS)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return None
    for path in paths:
        lib = ctypes.CDLL(path)
        for name in names:
            if hasattr(lib, name):
                result = getattr(lib, name)(*args)
                return 0 if result is None else int(result)
    return None


def numpy_blas_threads() -> int | None:
    """Threads of the BLAS NumPy calls into, read from the loaded OpenBLAS; None if unknown."""
    names = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads")
    return _openblas_call(names)


def set_numpy_blas_threads(n: int) -> bool:
    """Let NumPy's OpenBLAS use ``n`` threads from now on; False if that is not possible (another BLAS)."""
    names = ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads")
    return _openblas_call(names, n) is not None and numpy_blas_threads() == n


def steady_allocator() -> bool:
    """Fix glibc's malloc thresholds for this process; False if that is not possible (not glibc).

    By default glibc raises its mmap threshold to the largest block freed so far and hands the top of
    the heap back to the OS when more than twice that is free. So one side's allocations decided
    whether the other's next arrays came from memory already mapped or from fresh pages: at T=512 a
    NumPy call took ~1,500 page faults (~3 ms) or none, depending on what torch had freed before
    (torch: ~4,000 or none), and numpy/torch swung from 0.74 to 1.18 between runs. With fixed
    thresholds both sides reuse mapped memory for arrays under 32 MiB (T <= 512), and both map fresh
    memory for every 48 MiB array at T=1024: the same rule for both, whatever ran before.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc.mallopt(M_MMAP_THRESHOLD, MMAP_BYTES) == 1 and libc.mallopt(M_TRIM_THRESHOLD, TRIM_BYTES) == 1
    except (OSError, AttributeError):
        return False


@dataclass
class Case:
    """One size, set up outside timing: the same input and weights for every side."""

    t: int
    d_model: int
    n_heads: int
    x: np.ndarray  # (1, T, d_model) float32
    proj: Projections  # float32
    mask: np.ndarray  # (T, T) bool, True = may attend
    run_numpy: Callable[[], object]
    run_torch: Callable[[], object]
    run_sdpa: Callable[[], object]
    run_matmul: Callable[[], object]
    torch_result: Callable[[], tuple[np.ndarray, np.ndarray]]


def make_case(torch, t: int, d_model: int, n_heads: int, seed: int = 0) -> Case:
    """Build the inputs, a torch module loaded with our weights, and the four timed calls."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, t, d_model)).astype(np.float32)  # (1, T, d_model)
    proj = Projections.random(d_model, seed, dtype=np.float32)
    mask = causal_mask(t)  # (T, T), True = may attend

    mha = torch.nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True)
    with torch.no_grad():  # torch computes x @ W.T, and in_proj_weight stacks [W_q; W_k; W_v]
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([proj.w_q.T, proj.w_k.T, proj.w_v.T])))
        mha.out_proj.weight.copy_(torch.from_numpy(np.ascontiguousarray(proj.w_o.T)))
    mha.eval()
    x_t = torch.from_numpy(x)
    mask_t = torch.from_numpy(~mask)  # torch's polarity: True = NOT allowed

    def run_torch():
        with torch.inference_mode():
            return mha(x_t, x_t, x_t, need_weights=True, average_attn_weights=False, attn_mask=mask_t)

    def torch_result() -> tuple[np.ndarray, np.ndarray]:
        out, weights = run_torch()
        return out.numpy(), weights.numpy()  # (1, T, d_model), (1, h, T, T)

    linear, sdpa = torch.nn.functional.linear, torch.nn.functional.scaled_dot_product_attention
    w_qkv, w_out = mha.in_proj_weight.detach(), mha.out_proj.weight.detach()  # (3 d, d), (d, d): x @ W.T
    d_k = d_model // n_heads

    def run_sdpa():  # nanoGPT's CausalSelfAttention.forward, without dropout and biases
        with torch.inference_mode():
            q, k, v = linear(x_t, w_qkv).split(d_model, dim=2)  # (1, T, d_model) each
            q, k, v = (a.view(1, t, n_heads, d_k).transpose(1, 2) for a in (q, k, v))  # (1, h, T, d_k)
            y = sdpa(q, k, v, is_causal=True)  # (1, h, T, d_k); no weights returned
            return linear(y.transpose(1, 2).reshape(1, t, d_model), w_out)  # (1, T, d_model)

    w = np.ascontiguousarray(proj.w_q)
    x2 = x[0]  # (T, d_model)
    return Case(
        t=t,
        d_model=d_model,
        n_heads=n_heads,
        x=x,
        proj=proj,
        mask=mask,
        run_numpy=lambda: multi_head_attention(x, proj, n_heads, mask=mask),
        run_torch=run_torch,
        run_sdpa=run_sdpa,
        run_matmul=lambda: x2 @ w,
        torch_result=torch_result,
    )


def check_same(case: Case) -> tuple[float, float]:
    """Ours, MHA and SDPA agree to float32 tolerance; returns max |ours - MHA| of output and of weights.

    Raises AssertionError otherwise (explicitly, so that ``python -O`` cannot skip the check).
    """
    trace = multi_head_attention(case.x, case.proj, case.n_heads, mask=case.mask)
    out_t, weights_t = case.torch_result()
    if trace.output.dtype != np.float32 or trace.weights.dtype != np.float32:
        raise AssertionError(f"float32 in, {trace.output.dtype} / {trace.weights.dtype} out")
    if not trace.weights.shape == weights_t.shape == (1, case.n_heads, case.t, case.t):
        raise AssertionError(f"weights shapes {trace.weights.shape} and {weights_t.shape}")
    if np.any(trace.weights[..., ~case.mask]):
        raise AssertionError("a masked weight is not exactly 0")
    np.testing.assert_allclose(trace.weights, weights_t, rtol=RTOL, atol=ATOL, err_msg="weights differ from torch")
    np.testing.assert_allclose(trace.output, out_t, rtol=RTOL, atol=ATOL, err_msg="outputs differ from torch")
    out_sdpa = case.run_sdpa().numpy()  # (1, T, d_model)
    np.testing.assert_allclose(trace.output, out_sdpa, rtol=RTOL, atol=ATOL, err_msg="outputs differ from SDPA")
    return float(np.max(np.abs(trace.output - out_t))), float(np.max(np.abs(trace.weights - weights_t)))


def best_of(fn: Callable[[], object], calls: int) -> float:
    """Seconds of the fastest of ``calls`` back-to-back calls, after one discarded warm-up call."""
    fn()
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


@dataclass
class Timing:
    numpy_s: float
    torch_s: float
    """nn.MultiheadAttention's median."""
    sdpa_s: float
    matmul_s: float
    ratios: np.ndarray  # (rounds,) numpy/MHA measured in the same round
    sdpa_ratios: np.ndarray  # (rounds,) numpy/SDPA measured in the same round


def time_interleaved(contestants: dict[str, Callable[[], object]]) -> dict[str, list[float]]:
    """Interleaved rounds of every contestant, in rotating order, for ~SIZE_SECONDS: each one's best-of per round."""
    names = list(contestants)
    once = {name: best_of(fn, 1) for name, fn in contestants.items()}  # also a warm-up
    calls = {name: int(np.clip(ROUND_SECONDS / len(names) / once[name], 1, 50)) for name in names}
    samples: dict[str, list[float]] = {name: [] for name in names}
    deadline = time.perf_counter() + SIZE_SECONDS
    rounds = 0
    while rounds < MAX_ROUNDS and (rounds < MIN_ROUNDS or time.perf_counter() < deadline):
        turn = rounds % len(names)
        for name in names[turn:] + names[:turn]:
            time.sleep(IDLE_SECONDS)
            samples[name].append(best_of(contestants[name], calls[name]))
        rounds += 1
    return samples


def time_case(case: Case) -> Timing:
    """Interleaved rounds of numpy, MHA, SDPA and the plain matmul, in rotating order, for ~SIZE_SECONDS."""
    calls = {"numpy": case.run_numpy, "torch": case.run_torch, "sdpa": case.run_sdpa, "matmul": case.run_matmul}
    samples = time_interleaved(calls)
    numpy_s, torch_s, sdpa_s, matmul_s = (float(np.median(samples[n])) for n in calls)
    ours = np.array(samples["numpy"])
    return Timing(
        numpy_s, torch_s, sdpa_s, matmul_s, ours / np.array(samples["torch"]), ours / np.array(samples["sdpa"])
    )


@dataclass
class AttentionCase:
    """One attention-only size: q, k, v and the mask built outside timing, the same numbers for every side."""

    label: str
    t: int
    n_heads: int
    kv_heads: int
    d_k: int
    window: int
    run_numpy: Callable[[], tuple[np.ndarray, np.ndarray]]
    run_torch: Callable[[], object]
    run_tiled: Callable[[], np.ndarray]


def make_attention_case(torch, label: str, t: int, n_heads: int, kv_heads: int, d_k: int, window: int) -> AttentionCase:
    """Float32 q (1, h, T, d_k), k and v (1, kv_heads, T, d_k), causal (and windowed) mask in each side's form."""
    rng = np.random.default_rng([t, n_heads, kv_heads, d_k, window])
    q = rng.standard_normal((1, n_heads, t, d_k)).astype(np.float32)  # (1, h, T, d_k)
    k = rng.standard_normal((1, kv_heads, t, d_k)).astype(np.float32)  # (1, kv_heads, T, d_k)
    v = rng.standard_normal((1, kv_heads, t, d_k)).astype(np.float32)
    mask = attention_mask(t, causal=True, window=window)  # (T, T), True = may attend (SDPA's polarity too)
    group = n_heads // kv_heads
    tq, tk, tv, tmask = (torch.from_numpy(a) for a in (q, k, v, mask))
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def run_torch():
        with torch.inference_mode():
            if window:  # no fused form for a window: the boolean mask
                return sdpa(tq, tk, tv, attn_mask=tmask, enable_gqa=True)
            return sdpa(tq, tk, tv, is_causal=True, enable_gqa=True)  # torch's causal fast path

    return AttentionCase(
        label,
        t,
        n_heads,
        kv_heads,
        d_k,
        window,
        run_numpy=lambda: scaled_dot_product_attention(q, repeat_kv(k, group), repeat_kv(v, group), mask),
        run_torch=run_torch,
        run_tiled=lambda: tiled_attention(q, repeat_kv(k, group), repeat_kv(v, group), mask, block=TILE_BLOCK),
    )


def check_attention_case(case: AttentionCase) -> tuple[float, float]:
    """Ours, torch's and the tiled output agree to float32 tolerance; returns max |ours - torch|, |tiled - ours|."""
    out, weights = case.run_numpy()
    ref = case.run_torch().numpy()
    tiled = case.run_tiled()
    if out.dtype != np.float32 or tiled.dtype != np.float32:
        raise AssertionError(f"float32 in, {out.dtype} / {tiled.dtype} out")
    mask = attention_mask(case.t, causal=True, window=case.window)
    if np.any(weights[..., ~mask]):
        raise AssertionError("a masked weight is not exactly 0")
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL, err_msg="attention differs from torch SDPA")
    np.testing.assert_allclose(tiled, out, rtol=RTOL, atol=ATOL, err_msg="the tiled path differs from plain")
    return float(np.max(np.abs(out - ref))), float(np.max(np.abs(tiled - out)))


def attention_table(torch) -> None:
    """Attention only (q, k, v given): ours against torch SDPA, and the tiled path's time (no target)."""
    print("Attention only: q, k, v given (float32, batch of 1), no projections; causal mask built outside timing.")
    print("ours = scaled_dot_product_attention(q, repeat_kv(k), repeat_kv(v), mask), every weight returned;")
    print("torch = F.scaled_dot_product_attention(q, k, v, enable_gqa=True): is_causal=True without a window,")
    print(f"the boolean mask with one; no weights returned. tiled = core.tiled.tiled_attention, B_c = {TILE_BLOCK},")
    print("a teaching path: its time is reported, with no target. Rounds, medians and IQR as above.")
    print()
    header = (
        f"{'case':<11} {'T':>5} {'h/kv':>5} {'d_k':>4} {'window':>6} {'ours ms':>8} {'torch ms':>9} "
        f"{'ours/torch':>10} {'(IQR)':>11} {'tiled ms':>9} {'max|d torch|':>12} {'max|d tiled|':>12} {'rounds':>6}"
    )
    print(header)
    print("-" * len(header))
    for label, t, n_heads, kv_heads, d_k, window in ATTENTION_SIZES:
        case = make_attention_case(torch, label, t, n_heads, kv_heads, d_k, window)
        d_torch, d_tiled = check_attention_case(case)
        samples = time_interleaved({"ours": case.run_numpy, "torch": case.run_torch, "tiled": case.run_tiled})
        ours_s, torch_s, tiled_s = (float(np.median(samples[n])) for n in ("ours", "torch", "tiled"))
        ratios = np.array(samples["ours"]) / np.array(samples["torch"])
        q1, q3 = np.percentile(ratios, [25, 75])
        print(
            f"{label:<11} {t:>5} {f'{n_heads}/{kv_heads}':>5} {d_k:>4} {window or '-':>6} {ours_s * 1e3:>8.2f} "
            f"{torch_s * 1e3:>9.2f} {np.median(ratios):>10.2f} {f'({q1:.2f}-{q3:.2f})':>11} {tiled_s * 1e3:>9.2f} "
            f"{d_torch:>12.1e} {d_tiled:>12.1e} {len(ratios):>6}",
            flush=True,
        )


def _ratio(ratios: np.ndarray, width: int) -> str:
    """A column of within-round ratios: their median in ``width`` characters, then ``(q1-q3)``."""
    q1, q3 = np.percentile(ratios, [25, 75])
    return f"{np.median(ratios):>{width}.2f} {f'({q1:.2f}-{q3:.2f})':>11}"


def layer_table(torch, sizes: tuple[tuple[int, int, int], ...] = SIZES) -> None:
    """The whole layer at each ``(T, d_model, h)`` of ``sizes``: ours against MHA and against SDPA."""
    print("float32, batch of 1, bias=False. MHA = torch.nn.MultiheadAttention, causal mask built outside timing")
    print("(each side in its own polarity), need_weights=True, average_attn_weights=False: every weight returned,")
    print("as ours. SDPA = F.linear (Q|K|V) -> F.scaled_dot_product_attention(is_causal=True) -> F.linear (W_O),")
    print("no weights returned (less work than ours).")
    print("GFLOP = (8 T d^2 + 4 T^2 d) / 1e9 (4 projections + QK^T + weights@V; softmax not counted).")
    print("matmul = plain float32 (T, d) @ (d, d) in NumPy (2 T d^2 FLOP), timed in the same rounds;")
    print("(%) = a side's GFLOP/s as a share of it. max|d...| = largest difference between ours and MHA.")
    print(f"Per round, each side after {IDLE_SECONDS} s idle: best of a few calls; ms = median over rounds;")
    print("numpy/MHA and numpy/SDPA = median over rounds of the ratio within the round (< 1: NumPy is faster),")
    print("with its interquartile range over rounds.")
    print()
    header = (
        f"{'T':>5} {'d_model':>7} {'h':>3} {'GFLOP':>6} {'numpy ms':>9} {'MHA ms':>8} {'SDPA ms':>8} "
        f"{'numpy/MHA':>9} {'(IQR)':>11} {'numpy/SDPA':>10} {'(IQR)':>11} {'numpy GFLOP/s':>14} "
        f"{'MHA GFLOP/s':>12} {'SDPA GFLOP/s':>12} {'matmul GFLOP/s':>14} {'max|dout|':>9} {'max|dw|':>8} "
        f"{'rounds':>6}"
    )
    print(header)
    print("-" * len(header))
    for t, d_model, n_heads in sizes:
        case = make_case(torch, t, d_model, n_heads)
        d_out, d_w = check_same(case)
        timing = time_case(case)
        flops = attention_flops(t, d_model)
        matmul_rate = matmul_flops(t, d_model) / timing.matmul_s / 1e9
        rates = [flops / seconds / 1e9 for seconds in (timing.numpy_s, timing.torch_s, timing.sdpa_s)]
        shares = [f"{rate:.1f} ({rate / matmul_rate:.0%})" for rate in rates]
        print(
            f"{t:>5} {d_model:>7} {n_heads:>3} {flops / 1e9:>6.3f} {timing.numpy_s * 1e3:>9.3f} "
            f"{timing.torch_s * 1e3:>8.3f} {timing.sdpa_s * 1e3:>8.3f} {_ratio(timing.ratios, 9)} "
            f"{_ratio(timing.sdpa_ratios, 10)} {shares[0]:>14} "
            f"{shares[1]:>12} {shares[2]:>12} {matmul_rate:>14.1f} {d_out:>9.1e} {d_w:>8.1e} {len(timing.ratios):>6}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv not in ([], ["attention"]):
        print("usage: python -m bench.core [attention]")
        return 2
    try:
        import torch
    except ImportError:
        print("bench.core needs torch (a test-only dependency): pip install torch==2.13.0")
        return 1
    steady = steady_allocator()
    blas = numpy_blas_threads()
    threads = blas if blas else len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    print(
        f"numpy {np.__version__} (BLAS threads: {blas if blas else 'unknown'}), torch {torch.__version__} "
        f"(threads: {torch.get_num_threads()}), {len(os.sched_getaffinity(0))} CPUs, {platform.machine()}"
    )
    if steady:
        print(
            f"malloc: glibc thresholds fixed (mmap {MMAP_BYTES >> 20} MiB, trim {TRIM_BYTES >> 20} MiB) for every side."
        )
    else:
        print("malloc: thresholds left as they are (not glibc); page faults may differ from run to run.")
    start = time.perf_counter()
    if argv == ["attention"]:
        attention_table(torch)
        print(f"\n{time.perf_counter() - start:.0f} s")
        return 0
    layer_table(torch)
    print()
    attention_table(torch)
    print(f"\n{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""all-MiniLM-L6-v2: our NumPy forward against transformers' BertModel (eager), and the cost of loading it.

    python -m bench.pretrained

Forward: both sides float32, the same token ids (a sentence cut to T pieces with
[CLS] and [SEP]), one sentence (no padding), every layer's attention weights
returned (ours: the traces; transformers: ``output_attentions=True`` with
``attn_implementation="eager"``), torch with as many threads as NumPy's BLAS.
Timing as in ``bench.core`` (interleaved rounds in rotating order, idle before each
turn, best of a few calls per turn, median over rounds, numpy/transformers measured
within each round). A third contestant is our forward with the float32 erf swapped
for the float64 fdlibm one plus two casts, to show what the float32 erf
buys. Before timing, each size checks that both sides agree (weights and last
hidden state, atol 1e-5).

Load: in a fresh process each (page cache warm, as on a server after its first
start; numpy already imported), the wall time of importing ``core.pretrained`` and
calling ``load_minilm()`` (locate, sha256 of both files, map the weights and copy the
matrices, read the vocabulary) and the RSS they add, then the RSS after a 128-token
forward; and, for the choice of reader, importing ``safetensors.numpy`` and its
``load_file``.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

import core.numerics.erf as erf_module
from bench.core import IDLE_SECONDS, best_of, numpy_blas_threads, steady_allocator
from core.pretrained import bert_forward, load_minilm

SIZES = (8, 32, 64, 128)
"""Tokens per sentence, [CLS] and [SEP] included."""

SIZE_SECONDS, MIN_ROUNDS, MAX_ROUNDS, ROUND_SECONDS = 15.0, 7, 25, 0.6
ATOL = 1e-5
TEXT = (
    "The bank of the river was steep, so the children who had come to fish sat on the grass and watched the "
    "boats drift past while their teacher explained how a river carves its bed over thousands of years, and "
    "why the water near the outside of a bend runs faster than the water near the inside, which is where the "
    "sand settles and small beaches form in the summer when the level drops and the current slows down."
)

LOAD_SCRIPT = """
import json, sys, time
def rss():
    with open('/proc/self/status') as f:
        return next(int(l.split()[1]) for l in f if l.startswith('VmRSS')) / 1024
import numpy as np
before = rss()
start = time.perf_counter()
if sys.argv[1] == 'ours':
    from core.pretrained import load_minilm
    model = load_minilm()
    seconds = time.perf_counter() - start
    loaded = rss()
    model.run(' '.join(['word'] * 126))
    print(json.dumps({'seconds': seconds, 'loaded_mb': loaded - before, 'after_forward_mb': rss() - before}))
else:
    from core.pretrained import locate_minilm
    directory = locate_minilm(download=False)
    start = time.perf_counter()
    from safetensors.numpy import load_file
    tensors = load_file(str(directory / 'model.safetensors'))
    print(json.dumps({'seconds': time.perf_counter() - start, 'loaded_mb': rss() - before}))
"""


def measure_load(which: str) -> dict:
    """Run LOAD_SCRIPT in a fresh interpreter (numpy imported before the clock starts)."""
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    command = [sys.executable, "-c", LOAD_SCRIPT, which]
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def ids_of_length(model, t: int) -> np.ndarray:
    """(T,) ids: TEXT's pieces cut to T - 2, between [CLS] and [SEP]."""
    ids = list(model.encode(f"{TEXT} {TEXT}").ids)
    if len(ids) < t:
        raise ValueError(f"TEXT has {len(ids)} pieces, fewer than {t}")
    return np.array(ids[: t - 1] + ids[-1:], dtype=np.int64)  # (T,)


def accurate_erf_forward(weights, ids):
    """Our forward with the float32 erf replaced by the float64 fdlibm one (cast in and out)."""
    erf_module.FAST = False
    try:
        return bert_forward(weights, ids)
    finally:
        erf_module.FAST = True


def main() -> int:
    try:
        import torch
        import transformers
    except ImportError:
        print("bench.pretrained needs torch and transformers (test-only): pip install -r requirements-dev.txt")
        return 1
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    steady = steady_allocator()
    blas = numpy_blas_threads()
    threads = blas if blas else len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    model = load_minilm(dtype=np.float32)
    reference = transformers.BertModel.from_pretrained(str(model.directory), attn_implementation="eager").eval()
    print(
        f"numpy {np.__version__} (BLAS threads: {blas or 'unknown'}), torch {torch.__version__} "
        f"(threads: {torch.get_num_threads()}), transformers {transformers.__version__}, "
        f"{len(os.sched_getaffinity(0))} CPUs, {platform.machine()}; malloc thresholds fixed: {steady}"
    )
    print("float32, one sentence, every layer's attention weights returned; ms = median over rounds of the best")
    print("of a few calls; numpy/hf = median over rounds of the within-round ratio (< 1: NumPy faster), with its")
    print("IQR. 'fdlibm erf' = our forward with the float64 erf instead of the float32 tanh(x P(x^2)) one.\n")
    header = (
        f"{'T':>4} {'numpy ms':>9} {'hf ms':>8} {'numpy/hf':>9} {'(IQR)':>11} {'fdlibm erf ms':>14} "
        f"{'fdlibm/hf':>9} {'max|dw|':>8} {'max|dh|':>8} {'rounds':>6}"
    )
    print(header)
    print("-" * len(header))
    for t in SIZES:
        ids = ids_of_length(model, t)
        ids_t = torch.from_numpy(ids[None])

        def run_hf(ids_t=ids_t):
            with torch.inference_mode():
                return reference(input_ids=ids_t, output_attentions=True)

        out, ref = bert_forward(model.weights, ids), run_hf()
        pairs = zip(out.traces, ref.attentions, strict=True)
        d_w = max(float(np.abs(trace.weights - a[0].numpy()).max()) for trace, a in pairs)
        d_h = float(np.abs(out.last_hidden_state - ref.last_hidden_state[0].numpy()).max())
        if d_w > ATOL or d_h > ATOL:
            raise AssertionError(f"T={t}: the two sides differ (weights {d_w:.1e}, hidden {d_h:.1e})")
        contestants = {
            "numpy": lambda ids=ids: bert_forward(model.weights, ids),
            "hf": run_hf,
            "fdlibm": lambda ids=ids: accurate_erf_forward(model.weights, ids),
        }
        names = list(contestants)
        once = {name: best_of(fn, 1) for name, fn in contestants.items()}
        calls = {name: int(np.clip(ROUND_SECONDS / 3 / once[name], 1, 50)) for name in names}
        samples: dict[str, list[float]] = {name: [] for name in names}
        deadline, rounds = time.perf_counter() + SIZE_SECONDS, 0
        while rounds < MAX_ROUNDS and (rounds < MIN_ROUNDS or time.perf_counter() < deadline):
            for name in names[rounds % 3 :] + names[: rounds % 3]:
                time.sleep(IDLE_SECONDS)
                samples[name].append(best_of(contestants[name], calls[name]))
            rounds += 1
        s = {name: np.array(v) for name, v in samples.items()}
        ratio, ratio_fdlibm = s["numpy"] / s["hf"], s["fdlibm"] / s["hf"]
        q1, q3 = np.percentile(ratio, [25, 75])
        print(
            f"{t:>4} {np.median(s['numpy']) * 1e3:>9.2f} {np.median(s['hf']) * 1e3:>8.2f} {np.median(ratio):>9.2f} "
            f"{f'({q1:.2f}-{q3:.2f})':>11} {np.median(s['fdlibm']) * 1e3:>14.2f} {np.median(ratio_fdlibm):>9.2f} "
            f"{d_w:>8.1e} {d_h:>8.1e} {rounds:>6}",
            flush=True,
        )
    print("\nLoad, each in a fresh process (page cache warm), median of 5:")
    loaders = (("ours", "import + load_minilm()"), ("safetensors", "import + safetensors.numpy.load_file"))
    for which, label in loaders:
        runs = [measure_load(which) for _ in range(5)]
        seconds = np.median([r["seconds"] for r in runs])
        loaded = np.median([r["loaded_mb"] for r in runs])
        extra = ""
        if "after_forward_mb" in runs[0]:
            extra = f", +{np.median([r['after_forward_mb'] for r in runs]):.0f} MB RSS after a 128-token forward"
        print(f"  {label:<38} {seconds * 1e3:6.0f} ms, +{loaded:.0f} MB RSS{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

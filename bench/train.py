"""One training step of ``core.training`` against the same model in torch, and seconds to 99% per task.

    python -m bench.train                # step table + time to 99% and memory per task (~2 minutes)
    python -m bench.train --no-steps     # only the per-task runs
    python -m bench.train --seeds        # the seed survey: 12 seeds per task, the fraction that forms the circuit
    python -m bench.train --seeds --tasks induction --first 1000 --count 6   # other seeds, one task

Part 1, one step = forward + cross-entropy + backward + Adam, at B = 64, T = 24,
vocabulary 20, 2 heads, causal, learned positions, float32 (the dtype training
uses) on both sides. Torch runs the same model eagerly (autograd, torch.optim.Adam)
with as many threads as NumPy's BLAS: first 1 thread each, then 2.

One thread is the comparison the target is read from, because it is what the app
runs (``dashboard/app.py`` sets OPENBLAS_NUM_THREADS=1: on the server's two shared cores a
threaded product stalls when other sessions are busy). So NumPy leaves the
second core unused, and the 2-thread table shows what torch gains from it. Before timing, both sides take one step from
the same float64 weights on the same batch and must agree (loss to 1e-12, every
parameter after the Adam update to 1e-10). Timing follows bench/core.py: interleaved rounds
in rotating order, IDLE_SECONDS of sleep before each turn, the best of a few calls per
turn, the median over rounds of the ratio measured within a round.

Part 2, each task at its recommended settings in a fresh process with
OPENBLAS_NUM_THREADS=1 (one core): wall-clock seconds until the held-out evaluation
that first reads >= 99% (evaluations included), the whole run, and the memory the
run adds: tracemalloc's peak (NumPy reports its arrays to it) and the growth of the
process's peak RSS across ``train``.

``--seeds``, each task at its recommended settings but the seed, seeds 0..11 by default
(one process per task, one core): per seed the step and seconds to 99% (wall clock, and
CPU time per step x steps, which leaves out a loaded machine's waits), the held-out
accuracy, the lowest accuracy over the places of the repeat (induction), the circuit's
heads with their weight, share of rows and the points lost without each (mean
ablation), the most any other head costs, and whether it formed
(``core.training.pretrain.SeedRun.formed``); then per task "k of n seeds form it by
step N". ``core.training.train.SEED_SURVEY`` records these numbers for the page.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

from bench.core import IDLE_SECONDS, best_of, numpy_blas_threads, set_numpy_blas_threads, steady_allocator
from core.training.adam import Adam
from core.training.backward import backward
from core.training.model import LN_EPS, ModelConfig, cross_entropy, forward, init_params
from core.training.tasks import TASK_NAMES

B, T, VOCAB, HEADS = 64, 24, 20, 2
CONFIGS = [(layers, d, extras) for layers in (1, 2) for d in (32, 64) for extras in (False, True)]
"""(layers, d_model, LayerNorm + MLP)."""
ROUNDS = 9
ROUND_SECONDS = 0.4


def make_batch(seed: int = 0):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, VOCAB, size=(B, T))
    targets = rng.integers(0, VOCAB, size=(B, T))
    scored = np.ones((B, T), dtype=bool)
    return tokens, targets, scored


def numpy_step(config: ModelConfig, params: dict, batch) -> Callable[[], float]:
    adam = Adam(lr=1e-3)
    tokens, targets, scored = batch

    def step() -> float:
        cache = forward(params, config, tokens)
        loss, dlogits, _ = cross_entropy(cache.logits, targets, scored)
        adam.step(params, backward(params, config, cache, dlogits))
        return loss

    return step


def torch_step(torch, config: ModelConfig, params: dict, batch) -> tuple[Callable[[], float], dict]:
    """The same model, written directly in torch; returns the step and its parameter tensors."""
    functional = torch.nn.functional
    p = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    opt = torch.optim.Adam(list(p.values()), lr=1e-3)
    d, h = config.d_model, config.n_heads
    tokens, targets, scored = (torch.from_numpy(a) for a in batch)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    flat_targets = targets[scored]

    def ln(a, name):
        return functional.layer_norm(a, (d,), p[name + "_g"], p[name + "_b"], eps=LN_EPS)

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        x = p["embed"][tokens] + p["pos"][:T]  # (B, T, d)
        for layer in range(config.n_layers):
            pre = f"l{layer}."
            a = ln(x, pre + "ln1") if config.layer_norm else x
            q, k, v = ((a @ p[pre + w]).view(B, T, h, d // h).transpose(1, 2) for w in ("w_q", "w_k", "w_v"))
            w = torch.softmax((q @ k.transpose(-1, -2) / math.sqrt(d // h)).masked_fill(~mask, float("-inf")), -1)
            x = x + (w @ v).transpose(1, 2).reshape(B, T, d) @ p[pre + "w_o"]
            if config.mlp:
                m = ln(x, pre + "ln2") if config.layer_norm else x
                x = x + functional.gelu(m @ p[pre + "w_1"] + p[pre + "b_1"]) @ p[pre + "w_2"] + p[pre + "b_2"]
        f = ln(x, "lnf") if config.layer_norm else x
        loss = functional.cross_entropy((f @ p["unembed"])[scored], flat_targets)
        loss.backward()
        opt.step()
        return float(loss.detach())

    return step, p


def check_same(torch, config: ModelConfig) -> float:
    """One step from the same float64 weights on both sides; returns the largest weight difference after it.

    float64, because Adam's first step is ``lr * g / (|g| + eps)``: for a gradient entry near
    float32's rounding noise it can differ by up to lr, whatever the gradients' agreement.
    """
    params = init_params(config, VOCAB, 0, np.float64)
    batch = make_batch()
    ours = {k: v.copy() for k, v in params.items()}
    loss = numpy_step(config, ours, batch)()
    step, theirs = torch_step(torch, config, params, batch)
    loss_t = step()
    if abs(loss - loss_t) > 1e-12 * abs(loss_t):
        raise AssertionError(f"loss {loss} vs torch {loss_t}")
    worst = 0.0
    for name, w in ours.items():
        diff = float(np.max(np.abs(w - theirs[name].detach().numpy())))
        if diff > 1e-10:  # Adam moves each weight by ~lr = 1e-3
            raise AssertionError(f"{name}: {diff} after one step")
        worst = max(worst, diff)
    return worst


def time_steps(torch, threads: int) -> None:
    if not set_numpy_blas_threads(threads):
        print(f"cannot set NumPy's BLAS to {threads} threads (not OpenBLAS?): skipped")
        return
    blas = numpy_blas_threads()
    torch.set_num_threads(threads)
    print(
        f"\n{threads} thread{'s' if threads > 1 else ''} each"
        + (" (what the app runs; the target is read here)" if threads == 1 else "")
    )
    print(
        f"numpy {np.__version__} (BLAS threads {blas or 'unknown'}), torch {torch.__version__} "
        f"(threads {torch.get_num_threads()}); B={B}, T={T}, vocab {VOCAB}, h={HEADS}, causal, learned positions, "
        "float32"
    )
    print("ms = median over rounds of the best of a few steps; numpy/torch = median of the in-round ratios (IQR)")
    header = (
        f"{'layers':>6} {'d_model':>7} {'LN+MLP':>6} {'numpy ms':>9} {'torch ms':>9} {'numpy/torch':>11} "
        f"{'(IQR)':>11} {'max|dw|':>8}"
    )
    print(header)
    print("-" * len(header))
    for layers, d, extras in CONFIGS:
        config = ModelConfig(d_model=d, n_heads=HEADS, n_layers=layers, layer_norm=extras, mlp=extras)
        dw = check_same(torch, config)
        batch = make_batch()
        ours = numpy_step(config, init_params(config, VOCAB, 0, np.float32), batch)
        theirs, _ = torch_step(torch, config, init_params(config, VOCAB, 0, np.float32), batch)
        contestants = {"numpy": ours, "torch": theirs}
        once = {n: best_of(fn, 1) for n, fn in contestants.items()}
        calls = {n: int(np.clip(ROUND_SECONDS / 2 / once[n], 1, 50)) for n in contestants}
        samples: dict[str, list[float]] = {n: [] for n in contestants}
        names = list(contestants)
        for r in range(ROUNDS):
            for name in names[r % 2 :] + names[: r % 2]:
                time.sleep(IDLE_SECONDS)
                samples[name].append(best_of(contestants[name], calls[name]))
        ratios = np.array(samples["numpy"]) / np.array(samples["torch"])
        q1, q3 = np.percentile(ratios, [25, 75])
        print(
            f"{layers:>6} {d:>7} {'yes' if extras else 'no':>6} {np.median(samples['numpy']) * 1e3:>9.2f} "
            f"{np.median(samples['torch']) * 1e3:>9.2f} {np.median(ratios):>11.2f} {f'({q1:.2f}-{q3:.2f})':>11} "
            f"{dw:>8.1e}",
            flush=True,
        )


RUN_ONE = """
import json, resource, sys, tracemalloc
from core.training.train import held_out, recommended, train
s = recommended(sys.argv[1])
held_out(s.task, s.length, s.model.causal)  # the cached held-out set is shared by every run of the task
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tracemalloc.start()
r = train(s)
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
r2 = train(s)  # timed again without tracemalloc, which slows allocation
print(json.dumps({"steps": s.steps, "step99": r2.step_to_target, "t99": r2.seconds_to_target, "total": r2.seconds,
                  "acc": r2.final_accuracy, "pattern": r2.named_pattern(), "traced_mb": peak / 2**20,
                  "rss_mb": (after - before) / 1024}))
"""


def time_tasks() -> None:
    print("\nEach task at its recommended settings, one core (OPENBLAS_NUM_THREADS=1), a fresh process per task:")
    header = (
        f"{'task':>10} {'steps':>5} {'99% at':>6} {'s to 99%':>8} {'s total':>7} {'held-out':>8} "
        f"{'traced MB':>9} {'+RSS MB':>7}  pattern"
    )
    print(header)
    print("-" * len(header))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    for task in TASK_NAMES:
        out = subprocess.run([sys.executable, "-c", RUN_ONE, task], env=env, capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        pattern = ", ".join(f"{k} {v:.2f}" for k, v in r["pattern"].items())
        step99 = "-" if r["step99"] is None else r["step99"]  # a run that never reached 99%
        t99 = "-" if r["t99"] is None else f"{r['t99']:.2f}"
        print(
            f"{task:>10} {r['steps']:>5} {step99:>6} {t99:>8} {r['total']:>7.2f} {r['acc']:>8.4f} "
            f"{r['traced_mb']:>9.1f} {r['rss_mb']:>7.1f}  {pattern}",
            flush=True,
        )


RUN_SURVEY = """
import dataclasses, json, sys
from core.training.pretrain import describe, survey_one
from core.training.train import recommended
for seed in range(int(sys.argv[2]), int(sys.argv[3])):
    r = survey_one(dataclasses.replace(recommended(sys.argv[1]), seed=seed))
    print(json.dumps({**dataclasses.asdict(r), "formed": r.formed, "line": describe(r)}), flush=True)
"""


def seed_survey(tasks: list[str], first: int, count: int) -> None:
    print(f"\nSeeds {first}..{first + count - 1} at each task's recommended settings, one core, one process per task:")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    for task in tasks:
        print(f"\n{task}:")
        args = [sys.executable, "-c", RUN_SURVEY, task, str(first), str(first + count)]
        runs = []
        with subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True) as proc:
            for line in proc.stdout:
                r = json.loads(line)
                runs.append(r)
                print("  " + r["line"], flush=True)
        if proc.returncode:
            raise SystemExit(f"the {task} survey failed (exit {proc.returncode})")
        formed = [r for r in runs if r["formed"]]
        by = max((r["step99"] for r in formed), default=None)
        slowest = max((r["seconds99"] for r in formed), default=None)
        cpu = max((r["cpu_per_step"] * r["step99"] for r in formed), default=None)  # the load's waits left out
        print(
            f"  {task}: {len(formed)} of {len(runs)} seeds form it"
            + (
                f" by step {by} (slowest {slowest:.1f} s to 99%; CPU time per step x steps {cpu:.1f} s)"
                if formed
                else ""
            )
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-steps", action="store_true", help="skip the numpy-vs-torch step table")
    parser.add_argument("--seeds", action="store_true", help="only the seed survey (see the docstring)")
    parser.add_argument("--tasks", nargs="+", default=list(TASK_NAMES), choices=TASK_NAMES, help="survey tasks")
    parser.add_argument("--first", type=int, default=0, help="first survey seed")
    parser.add_argument("--count", type=int, default=12, help="survey seeds per task")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.seeds:
        seed_survey(args.tasks, args.first, args.count)
        print(f"\n{time.perf_counter() - start:.0f} s")
        return 0
    steady_allocator()
    if not args.no_steps:
        try:
            import torch
        except ImportError:
            print("bench.train's step table needs torch (a test-only dependency): pip install torch==2.13.0")
            return 1
        for threads in (1, 2):
            time_steps(torch, threads)
    time_tasks()
    print(f"\n{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

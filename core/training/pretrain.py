"""The pre-trained runs of the recommended settings, and the seed survey behind them.

    python -m core.training.pretrain                    # retrain every task, write core/training/trained/<task>.npz
    python -m core.training.pretrain --survey induction 0 12   # which circuit seeds 0..11 learn

Each file holds the weights, snapshots, history and the settings they came from
(``TrainResult.save``), written by ``train`` itself: nothing in it is edited by hand.
``tests/core/test_training_runs.py`` retrains from the recorded settings and compares.

What other seeds do: ``python -m bench.train --seeds`` trains each task at its
recommended settings for seeds 0..11 and ``core.training.train.SEED_SURVEY``
records what it measured (the page states it). A seed counts when it reaches 99%
held-out accuracy, its circuit's heads are named from their rows (and the
induction head puts >= 0.8 on the token after the earlier twin), and accuracy is
>= 97% wherever the repeat sits in held-out sequences of the length it was trained
on (``SeedRun.formed``; induction: 24 tokens). ``--survey TASK FIRST STOP``
here prints the same lines for other seeds (``--steps`` to change the length of the
run); with ``--lengths`` each line also gives the worst place at every length the
task and the model accept (induction: 18 to 32 tokens), which the survey does not
require.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from core.training.patterns import CircuitHead, circuit_heads
from core.training.probes import ablation_table
from core.training.train import (
    RECOMMENDED,
    TRAINED_DIR,
    TrainResult,
    TrainSettings,
    accuracy_by_start,
    held_out,
    recommended,
    train,
    trained_path,
)

PLACED = 4096
"""Held-out sequences for the accuracy per repeat position: about 200 per place of the second copy."""


def circuit(result: TrainResult) -> str:
    """Name the circuit a 2-layer induction run learned, from its heads' numbers."""
    p = result.patterns()
    if result.final_accuracy < 0.99:
        return "unsolved"
    if all(h.formed for h in circuit_heads("induction", p)):
        return "textbook"
    if np.nanmax(p.duplicate[0]) >= 0.5:
        return "duplicate-token"
    return "mixed"


@dataclass(frozen=True)
class SeedRun:
    """One seed of a survey: what ``bench.train --seeds`` prints and ``SEED_SURVEY`` records."""

    seed: int
    step99: int | None
    """First evaluated step at >= 99% held-out accuracy (None: never)."""
    seconds99: float | None
    """Wall-clock seconds to it (one core in bench.train; not deterministic)."""
    cpu_per_step: float
    """CPU seconds of this process per training step, evaluations included (on a loaded machine the wall clock
    counts the waits for a core; ``cpu_per_step * step99`` does not)."""
    accuracy: float
    """Held-out accuracy after the last step."""
    heads: tuple[CircuitHead, ...]
    """The task's circuit heads, with their weights and shares of rows."""
    worst_place: float
    """The lowest held-out accuracy over the places of the scored stretch (for induction: where the repeat sits), in
    sequences of the length trained on (``TrainSettings.length``)."""
    knockout_drops: tuple[float, ...] = ()
    """Per circuit head (as ``heads``): the held-out accuracy lost with it knocked out (its mean in its place,
    ``core.training.probes.ablation_table``); 0.5 = 50 points."""
    bystander_drop: float = 0.0
    """The largest accuracy lost with any other head knocked out (0 when every head is in the circuit)."""
    by_length: tuple[tuple[int, float], ...] = ()
    """(length, worst place) at every length the task and the model accept (``accepted_lengths``), when the
    survey was asked for them (``--lengths``); ``formed`` does not read them."""

    @property
    def formed(self) -> bool:
        """Reached 99%, every circuit head formed (``CircuitHead.formed``), and >= 97% wherever the repeat sits, at
        the length trained on."""
        return self.step99 is not None and all(h.formed for h in self.heads) and self.worst_place >= PLACE_ACCURACY


PLACE_ACCURACY = 0.97
"""The least held-out accuracy at every place of the repeat, in sequences of the length trained on, for a seed to
count (the issue's bar)."""


def accepted_lengths(settings: TrainSettings) -> list[int]:
    """Every task length the settings' task takes whose sequence fits the model's positions."""
    task, model = settings.task_info, settings.model
    low, high = task.length_range
    return [n for n in range(low, high + 1) if task.sequence_length(n, model.causal) <= model.n_positions]


def worst_place(result: TrainResult, length: int) -> float:
    """The lowest held-out accuracy over the places of the scored stretch, in ``PLACED`` sequences of ``length``."""
    s = result.settings
    placed = held_out(s.task, length, s.model.causal, PLACED)
    return min(accuracy_by_start(result.params, s.model, placed).values())


def survey_one(settings: TrainSettings, lengths: bool = False) -> SeedRun:
    """Train ``settings`` and measure it as a survey does (``lengths``: also the worst place at every length)."""
    cpu = time.process_time()
    result = train(settings)
    cpu = (time.process_time() - cpu) / max(result.steps_done, 1)
    s = result.settings
    by_length = tuple((n, worst_place(result, n)) for n in accepted_lengths(s)) if lengths else ()
    heads = tuple(circuit_heads(s.task, result.patterns()))
    drop = ablation_table(result, "mean").accuracy_drop  # (L, h)
    circuit = [(h.layer, h.head) for h in heads]
    others = [float(drop[i]) for i in np.ndindex(drop.shape) if i not in circuit]
    return SeedRun(
        s.seed,
        result.step_to_target,
        result.seconds_to_target,
        cpu,
        result.final_accuracy,
        heads,
        dict(by_length)[s.length] if lengths else worst_place(result, s.length),
        tuple(float(drop[i]) for i in circuit),
        max(others, default=0.0),
        by_length,
    )


def survey(task: str, seeds: range, steps: int | None = None, lengths: bool = False) -> list[SeedRun]:
    """Train ``task`` at its recommended settings (``steps`` if given) for each seed, printing each as it ends."""
    rows = []
    for seed in seeds:
        settings = dataclasses.replace(recommended(task), seed=seed)
        if steps is not None:
            settings = dataclasses.replace(settings, steps=steps)
        rows.append(run := survey_one(settings, lengths))
        print(describe(run), flush=True)
    return rows


def describe(run: SeedRun) -> str:
    """One survey line."""
    heads = ", ".join(
        f"{h.description} L{h.layer + 1}H{h.head + 1} {h.weight:.2f} ({h.share:.0%} of rows, {100 * drop:.0f} points "
        "without it)"
        for h, drop in zip(run.heads, run.knockout_drops, strict=True)
    )
    t99 = "-" if run.seconds99 is None else f"{run.seconds99:.1f} s, CPU {run.cpu_per_step * run.step99:.1f} s"
    line = (
        f"seed {run.seed:>3}: 99% at step {run.step99 or '-':>5} ({t99}), held-out {run.accuracy:.4f}, "
        f"worst place {run.worst_place:.3f}; {heads}; any other head {100 * run.bystander_drop:.0f} points; "
        f"{'formed' if run.formed else 'NOT formed'}"
    )
    if not run.by_length:
        return line
    low = min(run.by_length, key=lambda pair: pair[1])
    places = " ".join(f"{n}:{worst:.3f}" for n, worst in run.by_length)
    return f"{line}\n  worst place by length: {places} (lowest {low[1]:.3f} at {low[0]})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--survey", nargs=3, metavar=("TASK", "FIRST", "STOP"), help="survey seeds FIRST..STOP-1")
    parser.add_argument("--steps", type=int, default=None, help="steps per survey run (default: the recommended)")
    parser.add_argument(
        "--lengths", action="store_true", help="also the worst place at every length the task and the model accept"
    )
    args = parser.parse_args()
    if args.survey:
        task, first, stop = args.survey
        survey(task, range(int(first), int(stop)), args.steps, args.lengths)
        return 0
    TRAINED_DIR.mkdir(exist_ok=True)
    for task, settings in RECOMMENDED.items():
        result = train(settings)
        result.save(trained_path(task))
        size = trained_path(task).stat().st_size
        print(
            f"{task}: held-out {result.final_accuracy:.4f}, 99% at step {result.step_to_target}, "
            f"{result.named_pattern()}, {size / 1024:.0f} KiB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""runs_of: a trained model's layers as core.Run, so every view draws them like a random run.

Checked: each run's trace is the model's own (``TrainResult.traces``), the tokens are the
task's symbols, and ``x + positions`` is exactly what that layer's attention was given,
recomputed here with ``core.multi_head_attention`` from the weights.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from core.attention import causal_mask
from core.multihead import multi_head_attention
from core.training import TASK_NAMES, load_trained, recommended, train
from core.training.model import projections
from core.training.runs import runs_of

TRACE_FIELDS = ("q", "k", "v", "scores", "weights", "context", "concat", "output")


def attention_of(result, layer: int, x: np.ndarray):
    """Layer ``layer``'s attention on input ``x (T, d)``, from the weights alone."""
    c = result.settings.model
    t = x.shape[0]
    rope = np.arange(t) if c.positional == "rope" else None
    mask = causal_mask(t) if c.causal else None
    return multi_head_attention(
        x, projections(result.params, layer), c.n_heads, mask=mask, q_positions=rope, k_positions=rope
    )


def check_runs(result, tokens: np.ndarray) -> None:
    runs = runs_of(result, tokens)
    expected = result.traces(tokens)
    assert len(runs) == result.settings.model.n_layers == len(expected)
    for layer, (run, trace) in enumerate(zip(runs, expected, strict=True)):
        assert run.tokens == tuple(result.settings.task_info.symbols[int(t)] for t in tokens)
        for name in TRACE_FIELDS:
            np.testing.assert_array_equal(getattr(run.trace, name), getattr(trace, name), err_msg=name)
        assert (run.trace.mask is None) == (not result.settings.model.causal)
        again = attention_of(result, layer, run.x + run.positions)
        np.testing.assert_array_equal(again.weights, run.trace.weights)  # the same input, the same arithmetic
        np.testing.assert_array_equal(again.output, run.trace.output)


@pytest.mark.parametrize("task", TASK_NAMES)
def test_pretrained_runs_equal_the_model_traces(task):
    result = load_trained(task)
    check_runs(result, result.fixed_example.inputs[0])


@pytest.mark.parametrize("task", TASK_NAMES)
def test_first_layer_splits_embeddings_and_positions(task):
    result = load_trained(task)
    tokens = result.fixed_example.inputs[0]
    first = runs_of(result, tokens)[0]
    np.testing.assert_array_equal(first.x, result.params["embed"][tokens])  # the token rows, no position
    if result.settings.model.positional == "learned":
        np.testing.assert_array_equal(first.positions, result.params["pos"][: len(tokens)])  # the learned table
    else:  # induction runs RoPE: positions rotate q and k inside attention, nothing is added to x
        assert result.settings.model.positional == "rope" and "pos" not in result.params
        np.testing.assert_array_equal(first.positions, 0)


def test_second_layer_reads_the_residual_stream():
    result = load_trained("induction")
    tokens = result.fixed_example.inputs[0]
    first, second = runs_of(result, tokens)
    np.testing.assert_array_equal(second.positions, 0)
    np.testing.assert_allclose(second.x, first.x + first.positions + first.trace.output, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "change",
    [
        dict(layer_norm=True, mlp=True, n_layers=2, n_heads=2),
        dict(positional="sinusoidal"),
        dict(positional="rope", n_heads=2),
        dict(positional="none", causal=False),
    ],
)
def test_other_architectures_keep_the_contract(change):
    """A few steps are enough: the contract holds for any weights."""
    shift = recommended("shift")
    result = train(dataclasses.replace(shift, steps=3, model=dataclasses.replace(shift.model, **change)))
    tokens = result.fixed_example.inputs[0]
    check_runs(result, tokens)
    if change.get("positional") in ("rope", "none"):
        np.testing.assert_array_equal(runs_of(result, tokens)[0].positions, 0)


def test_shorter_input_than_the_example():
    result = load_trained("shift")
    check_runs(result, np.array([3, 1, 4]))

"""Shapes view: the batch control puts lesson 2's (B, h, T, d_k) on the page, and the (B, T, h, d_k) rows."""

from __future__ import annotations

import pytest

from dashboard.page.common import CODE_LABEL
from tests.conftest import require_minilm
from tests.dashboard.conftest import make_app, no_exception, open_all


def shapes(**query: str) -> dict[str, str]:
    at = make_app(view="shapes", sentence="a b c", d_model="32", n_heads="2", **query).run()
    no_exception(at)
    return at.dataframe[0].value.set_index("tensor")["shape"].to_dict()


def test_a_batch_of_three_adds_the_leading_axis_to_every_activation_not_the_weights():
    table = shapes(batch="3")  # worked out by hand for B = 3, T = 3, d_model = 32, h = 2, d_k = 16
    assert table == {
        "X": "(3, 3, 32)",
        "W_Q, W_K, W_V": "(32, 32)",
        "Q, K, V": "(3, 3, 32)",
        "Q, K, V split": "(3, 3, 2, 16)",  # (B, T, h, d_k): before the transpose
        "Q, K, V per head": "(3, 2, 3, 16)",  # (B, h, T, d_k): lesson 2's split_heads
        "Kᵀ": "(3, 2, 16, 3)",
        "scores": "(3, 2, 3, 3)",
        "weights": "(3, 2, 3, 3)",
        "context": "(3, 2, 3, 16)",
        "context, swapped back": "(3, 3, 2, 16)",
        "concat": "(3, 3, 32)",
        "W_O": "(32, 32)",
        "output": "(3, 3, 32)",
    }


@pytest.mark.parametrize("batch", ["0", "9", "x"])
def test_a_batch_outside_1_to_8_keeps_the_default(batch):
    assert shapes(batch=batch)["Q, K, V per head"] == "(2, 3, 16)"


def test_the_pretrained_model_batches_too():
    require_minilm()
    at = make_app(view="shapes", weights="minilm", batch="2").run()
    no_exception(at)
    table = at.dataframe[0].value.set_index("tensor")["shape"]
    assert table["Q, K, V per head"].startswith("(2, 12, ") and table["W_O"] == "(384, 384)"


@pytest.mark.parametrize("weights", ["random", "trained"])
def test_the_batch_code_starts_from_the_line_that_made_this_run(weights):
    """The trained model's run comes from runs_of(train(...)), not run(tokenize(...)): the code says which."""
    at = open_all(make_app(view="shapes", weights=weights, task="shift", batch="2").run(), CODE_LABEL)
    no_exception(at)
    [code] = [c.value for c in at.code if "run_batch(result, 2)" in c.value]
    assert ("runs_of(trained" in code) == (weights == "trained")
    assert ("run(tokenize(" in code) == (weights == "random")

"""The probe panels in the page: knock a head out, predictions with a temperature, repeated random tokens, and
"Why a score is high". Each control is a URL key; every number shown is compared with core's own."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from core import run, tokenize
from core.neuron import score_terms
from core.training import load_trained
from core.training.model import forward
from core.training.probes import ablation_table, predictions, repeated_token_scores
from dashboard.compute.training_jobs import registry
from dashboard.figures.probes import head_bars_figure, head_grid_figure, predictions_figure, score_terms_figure
from dashboard.state.settings import DEFAULT_CONFIG, LINK_KEYS
from tests.dashboard.charts import charts
from tests.dashboard.conftest import array, escaped, make_app, no_exception

NEW_KEYS = ("ablate", "ablate_mode", "temperature", "probe_query", "probe_key")


@pytest.fixture(autouse=True)
def fresh_registry():
    registry.clear()
    yield
    registry.clear()


def markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def captions(at) -> str:
    return "\n".join(c.value for c in at.caption)


def test_every_new_control_is_a_link_key_with_help():
    assert set(NEW_KEYS) <= LINK_KEYS
    at = make_app(view="train", task="induction").run()
    no_exception(at)
    assert at.selectbox(key="ablate").help and at.select_slider(key="temperature").help
    assert at.segmented_control(key="ablate_mode").help
    steps = make_app(view="steps").run()
    assert steps.number_input(key="probe_query").help and steps.number_input(key="probe_key").help


@pytest.mark.parametrize("mode", ["mean", "zero"])
def test_train_view_shows_every_heads_effect_and_the_chosen_one(mode):
    at = make_app(view="train", task="induction", ablate="L2 H1", ablate_mode=mode).run()
    no_exception(at)
    table = ablation_table(load_trained("induction"), mode)
    bars = charts(at)["ablation_chart"]["data"][0]
    np.testing.assert_allclose(array(bars["y"]), 100 * table.accuracy_drop.ravel(), atol=1e-9)
    assert bars["x"] == ["L1 H1", "L2 H1"]  # one head per layer (RECOMMENDED["induction"])
    knocked = table.knocked[1][0]
    assert f"held-out accuracy **{knocked.accuracy:.1%}** (intact {table.intact.accuracy:.1%})" in markdown(at)
    [shown] = [d.value for d in at.dataframe if "points lost" in d.value.columns]
    np.testing.assert_allclose(shown["points lost"], 100 * table.accuracy_drop.ravel(), atol=1e-9)


def test_the_ablated_head_is_read_from_the_link_and_a_bad_value_falls_back():
    at = make_app(view="train", task="induction", ablate="L9 H9").run()
    no_exception(at)
    assert at.selectbox(key="ablate").value == "none"
    assert "Without **" not in markdown(at)
    at.selectbox(key="ablate").set_value("L1 H1").run()
    assert "Without **L1 H1**" in markdown(at)
    other = make_app(view="train", task="induction", ablate="L2 H2").run()  # a head of another model: not this one's
    no_exception(other)
    assert other.selectbox(key="ablate").value == "none" and "Without **" not in markdown(other)


def test_predictions_follow_the_temperature_and_equal_forward():
    result = load_trained("induction")
    at = make_app(view="train", task="induction", temperature="0.5").run()
    no_exception(at)
    ids = result.fixed_example.inputs[0]
    expected = predictions(forward(result.params, result.settings.model, ids).logits, 0.5)
    bars = charts(at)["predictions_chart"]["data"][0]
    np.testing.assert_allclose(array(bars["y"]), expected.probability, rtol=1e-12)
    assert bars["text"] == [escaped(s) for s in result.settings.task_info.decode(expected.token)]
    at.select_slider(key="temperature").set_value(2.0).run()
    warm = predictions(forward(result.params, result.settings.model, ids).logits, 2.0)
    np.testing.assert_allclose(array(charts(at)["predictions_chart"]["data"][0]["y"]), warm.probability, rtol=1e-12)
    # the induction model continues the repeat: the page counts its hits from the predictions it drew
    assert "followed its earlier twin at" in captions(at)


def test_model_view_shows_the_induction_score_for_a_trained_model():
    at = make_app(view="model", weights="trained", task="induction").run()
    no_exception(at)
    _, scores = repeated_token_scores(load_trained("induction"))
    np.testing.assert_allclose(array(charts(at)["induction_chart"]["data"][0]["y"]), scores.ravel(), rtol=1e-6)
    assert "ablation_chart" in charts(at)  # the knockout panel is there for every trained model


def test_random_weights_say_why_they_cannot_be_knocked_out():
    at = make_app(view="model").run()
    no_exception(at)
    assert "Knock a head out: Random and hand-built weights are one attention layer" in captions(at)
    assert "induction_chart" not in charts(at)


VARIANTS = {"alibi": True, "causal": True, "kv_heads": 2}
"""ALiBi's bias and a K shared by two query heads (issue 20's variants)."""


@pytest.mark.parametrize(("positional", "variants"), [("none", {}), ("rope", {}), ("none", VARIANTS)])
def test_steps_view_probe_sums_to_the_traces_score(positional, variants):
    sentence = "the cat sat on the mat"
    link = {k: str(v).lower() for k, v in variants.items()}
    at = make_app(view="steps", sentence=sentence, positional=positional, probe_query="3", probe_key="1", **link).run()
    no_exception(at)
    trace = run(tokenize(sentence), dataclasses.replace(DEFAULT_CONFIG, positional=positional, **variants)).trace
    assert (trace.bias is not None) == bool(variants) and trace.kv_heads == variants.get("kv_heads", 4)
    products = array(charts(at)["score_probe_chart"]["data"][0]["y"])
    assert math.fsum(products.tolist()) * trace.scale == pytest.approx(float(trace.scores[0, 3, 1]), abs=1e-9)
    terms = score_terms(trace, 0, 3, 1)
    assert f"{terms.score:.4g}" in "\n".join(str(e.value) for e in at.get("latex"))


def test_figures_are_pure_and_escape_tokens():
    bars = head_bars_figure(np.array([[0.1, -0.2]]), "t", "y", marked={(0, 1)})
    assert [b for b in bars.data[0].marker.color] == ["#0072B2", "#D55E00"]
    grid = head_grid_figure(np.array([[0.5, np.nan]]), "g", "c", limits=(0, 1))
    assert grid.data[0].text[0] == ["0.50", ""]
    pred = predictions_figure(("<b>", "a"), ("&", "b"), np.array([0.9, 0.4]), "p")
    assert list(pred.data[0].text) == ["&amp;", "b"] and list(pred.layout.xaxis.ticktext) == ["&lt;b&gt;", "a"]
    terms = score_terms_figure(np.array([1.0, -2.0]), "q <i>")
    assert terms.layout.title.text == "q &lt;i&gt;"
    assert list(terms.data[0].marker.color) == ["#0072B2", "#D55E00"]


@pytest.mark.parametrize(
    ("sentence", "causal", "query", "key", "says"),
    [
        ("hello", "false", 0, 0, "After the softmax over the only key (one token)"),  # was "all 1 keys"
        ("the cat sat", "false", 1, 2, "After the softmax over all 3 keys"),
        ("the cat sat", "true", 0, 0, "After the softmax over the one key the mask lets this query see"),
        ("the cat sat", "true", 1, 0, "After the softmax over the 2 keys the mask lets this query see"),
        ("the cat sat", "true", 0, 2, "The mask hides this key from this query"),
    ],
)
def test_the_probe_says_what_the_softmax_runs_over(sentence, causal, query, key, says):
    at = make_app(view="steps", sentence=sentence, causal=causal, probe_query=str(query), probe_key=str(key)).run()
    no_exception(at)
    assert any(says in m.value for m in [*at.markdown, *at.caption]), [m.value for m in at.caption]

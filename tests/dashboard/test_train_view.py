"""The train view and weights=trained: maps equal core's numbers, the replay, typed input, the job registry.

The pages are run headless (AppTest). Every map is compared with core.training's own
numbers for the same model (the pre-trained files, or a run trained here), never with
a copy of an earlier output. The registry is tested directly with a trainer that waits
on a gate, so "a second caller arrives while the first trains" happens every time.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import numpy as np
import pytest

from core import head_summary
from core.training import SEED_SURVEY, TASK_NAMES, load_trained, recommended, seed_note, train
from dashboard.compute.training_jobs import SESSION_SECONDS, Registry, registry
from dashboard.views import train as train_view
from tests.dashboard.charts import charts, grids
from tests.dashboard.conftest import figures, make_app, no_exception

WAIT = 60
"""Seconds a test waits for a background training (each is a fraction of a second alone)."""


@pytest.fixture(autouse=True)
def fresh_registry():
    """Every test starts with an empty registry of jobs (it is one per process otherwise)."""
    registry.clear()
    yield
    registry.clear()


def final_weights(result) -> np.ndarray:
    """``(L, h, T, T)``: every head's map on the task's fixed example, from core."""
    return np.stack([t.weights for t in result.traces(result.fixed_example.inputs[0])])


def shown(fig: dict) -> np.ndarray:
    """A layers figure's panels as ``(panels, T, T)``, masked cells (NaN on the page) as the 0 core gives them."""
    return np.nan_to_num(np.stack(grids(fig)), nan=0.0)


def wait_done(settings, seconds: float = WAIT):
    deadline = time.monotonic() + seconds
    while (job := registry().job(settings)) is not None and job.active:
        assert time.monotonic() < deadline, "training did not finish"
        time.sleep(0.05)
    return job


@pytest.mark.parametrize("task", TASK_NAMES)
def test_recommended_settings_show_the_pretrained_model(task):
    at = make_app(view="train", task=task).run()
    no_exception(at)
    result = load_trained(task)
    shown_maps = charts(at)
    expected = final_weights(result)
    np.testing.assert_array_equal(shown(shown_maps["trained_maps"]), expected.reshape(-1, *expected.shape[-2:]))
    slider = at.select_slider(key="replay_step")
    assert [int(o) for o in slider.options] == result.snapshot_steps.tolist()
    assert int(slider.value) == result.snapshot_steps[-1]
    assert "pre-trained" in " ".join(m.value for m in at.markdown)
    assert any("uses all of them" in c.value for c in at.caption)
    assert seed_note(task) in [c.value for c in at.caption]  # the survey's fraction, from core.training.SEED_SURVEY
    assert not at.warning and not at.error


def test_replay_slider_moves_through_the_snapshots():
    result = load_trained("induction")
    at = make_app(view="train", task="induction").run()
    last = shown(charts(at)["replay_maps"])
    n = result.snapshots.shape[1] * result.snapshots.shape[2]
    for i in (0, 4, 8):  # steps 0, 60, 120: before and in the phase change (0.99, 1.00, 0.98 from the last)
        step = int(result.snapshot_steps[i])
        at.select_slider(key="replay_step").set_value(step).run()
        no_exception(at)
        maps = shown(charts(at)["replay_maps"])
        np.testing.assert_array_equal(maps, result.snapshots[i].reshape(n, *maps.shape[-2:]))
        assert np.abs(maps - last).max() > 0.5  # the maps change: not the trained model's yet
        assert any(m.value.startswith(f"**Step {step}**") for m in at.markdown)


def test_play_advances_the_replay():
    at = make_app(view="train", task="shift", replay_step="0").run()
    at.button(key="replay_play").click().run()  # Play from step 0: the fragment moves on one frame per run
    first = int(at.select_slider(key="replay_step").value)
    at.run()
    assert int(at.select_slider(key="replay_step").value) > first >= 0
    no_exception(at)


@pytest.mark.parametrize(
    "typed, words",
    [
        ("<script>alert(1)</script>", "not symbols of the shift task"),
        ("**bold** [x](javascript:alert(1))", "not symbols of the shift task"),
        ("1" * 13, "at most 12"),
        ("   ", "Type up to 12"),
    ],
)
def test_typed_input_gets_a_message_never_markup(typed, words):
    at = make_app(view="train", task="shift").run()
    at.text_input(key="try_shift").set_value(typed).run()
    no_exception(at)
    [warning] = at.warning
    assert words in warning.value
    assert "<" not in warning.value and "*" not in warning.value and "javascript" not in warning.value
    assert "try_maps" not in charts(at)


def test_typed_input_answers_with_the_model():
    result = load_trained("shift")
    at = make_app(view="train", task="shift").run()
    at.text_input(key="try_shift").set_value("3 1 4 1 5 9 2 6").run()
    no_exception(at)
    tokens = np.array([3, 1, 4, 1, 5, 9, 2, 6])
    [code] = [c.value for c in at.code if c.value.startswith("input")]
    assert code.splitlines()[1].split()[2:] == [str(d) for d in result.predict(tokens)]
    assert code.splitlines()[1].split()[3:] == ["3", "1", "4", "1", "5", "9", "2"]  # a solved shift: t-1
    maps = shown(charts(at)["try_maps"])
    np.testing.assert_array_equal(maps, result.traces(tokens)[0].weights)


@pytest.mark.parametrize("view", ["heads", "steps", "summary", "model"])
@pytest.mark.parametrize("layer", [1, 2])
def test_weights_trained_draw_the_trained_heads(view, layer):
    result = load_trained("induction")
    at = make_app(view=view, weights="trained", task="induction", layer=str(layer)).run()
    no_exception(at)
    assert not at.error and not at.info
    expected = final_weights(result)  # (L, h, T, T)
    figs = charts(at)
    if view == "heads":
        np.testing.assert_array_equal(shown(figs["heads_chart"]), expected[layer - 1])
    elif view == "model":
        np.testing.assert_array_equal(shown(figs["model_chart"]), expected.reshape(-1, *expected.shape[-2:]))
    elif view == "summary":
        table = at.dataframe[0].value
        summary = head_summary(expected[layer - 1], result.traces(result.fixed_example.inputs[0])[0].mask)
        np.testing.assert_allclose(table["on the previous token"], summary.previous_weight, rtol=1e-6)
        np.testing.assert_allclose(table["on itself"], summary.self_weight, rtol=1e-6)
    else:
        weights_panels = [f for f in figs.values() if f.get("data")]
        assert weights_panels
        trace = result.traces(result.fixed_example.inputs[0])[layer - 1]
        found = [g for f in weights_panels for g in grids(f) if g.shape == trace.weights.shape[-2:]]
        assert any(np.allclose(np.nan_to_num(g), trace.weights[0], atol=1e-6) for g in found)


def test_the_model_view_draws_a_tiny_trained_model_s_maps_large_and_minilm_s_as_small_multiples():
    """The induction model's 2 maps of 24 tokens were 64 px small multiples; now one chart each, as large as the
    heads view's, titled with their layer and head, and the caption says so (not "rows are layers")."""
    result = load_trained("induction")
    n_layers, h = final_weights(result).shape[:2]
    at = make_app(view="model", weights="trained", task="induction").run()
    no_exception(at)
    ids = [c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")]
    maps = [i for i in ids if i.startswith("model_chart_") and i != "model_chart_bar"]
    assert len(maps) == n_layers * h
    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id.endswith(tuple(maps))]
    titles = [a["text"] for f in figs for a in f["layout"]["annotations"] if a.get("name") == "title"]
    assert titles == [f"layer {n + 1}, head {k + 1}" for n in range(n_layers) for k in range(h)]
    assert all(f["layout"]["height"] >= 250 for f in figs)
    [caption] = [c.value for c in at.caption if "maps of" in c.value]
    assert "each titled with its layer and head" in caption and "rows are layers" not in caption


def test_untrained_settings_say_how_to_train_them():
    at = make_app(view="heads", weights="trained", task="shift", seed="7").run()
    no_exception(at)
    [info] = at.info
    assert "not been trained yet" in info.value and "Train" in info.value
    at.button(key="open_train").click().run()
    no_exception(at)
    assert at.button(key="train_button")  # the train view is open, ready to train these settings
    assert any("Press **Train**" in i.value for i in at.info)


def test_pressing_train_trains_and_shows_the_result():
    at = make_app(view="train", task="shift", seed="4", train_steps="50").run()
    assert any("Press **Train**" in i.value for i in at.info)
    at.button(key="train_button").click().run()
    no_exception(at)
    settings = dataclasses.replace(recommended("shift"), seed=4, steps=50)
    job = wait_done(settings)
    assert job.error is None and not job.trained.result.stopped
    at.run()
    no_exception(at)
    expected = final_weights(train(settings))  # the same settings give the same weights, bit for bit
    np.testing.assert_array_equal(shown(charts(at)["trained_maps"]), expected[0])
    assert any("trained in" in m.value for m in at.markdown)


def test_two_sessions_pressing_train_share_one_training(monkeypatch):
    gate, calls = threading.Event(), []

    def gated(settings, **kwargs):
        calls.append(settings)
        gate.wait(WAIT)
        return train(settings, **kwargs)

    monkeypatch.setattr(registry(), "_trainer", gated)
    who = {"session": "first"}  # AppTest gives every app the same session id: name them here
    monkeypatch.setattr(train_view, "session_id", lambda: who["session"])
    query = dict(view="train", task="reverse", seed="2", train_steps="50")
    first, second = make_app(**query).run(), make_app(**query).run()
    first.button(key="train_button").click().run()
    who["session"] = "second"
    second.button(key="train_button").click().run()
    no_exception(second)
    assert any("Another session started this training" in c.value for c in second.caption)
    assert "stop_button" not in [b.key for b in second.button]  # only the session that started it may stop it
    gate.set()
    wait_done(dataclasses.replace(recommended("reverse"), seed=2, steps=50))
    assert len(calls) == 1
    assert registry().seconds_left("second") == SESSION_SECONDS  # watching costs the watcher nothing
    for at in (first.run(), second.run()):
        no_exception(at)
        assert "trained_maps" in charts(at)


# --- the registry itself -----------------------------------------------------------------------------------------


def gated_registry(**limits) -> tuple[Registry, threading.Event, list]:
    gate, calls = threading.Event(), []

    def gated(settings, **kwargs):
        calls.append(settings)
        gate.wait(WAIT)
        return train(settings, **kwargs)

    return Registry(gated, **limits), gate, calls


def small(seed: int, steps: int = 20):
    return dataclasses.replace(recommended("shift"), seed=seed, steps=steps)


def wait_for(reg: Registry, settings) -> None:
    deadline = time.monotonic() + WAIT
    while reg.job(settings).active:
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_identical_settings_train_once():
    reg, gate, calls = gated_registry()
    a = reg.start(small(1), "session a")
    b = reg.start(small(1), "session b")  # arrives while the first still trains
    assert b is a and a.owner == "session a"
    gate.set()
    wait_for(reg, small(1))
    assert reg.start(small(1), "session c") is a  # finished: served, not retrained
    assert len(calls) == 1
    assert reg.trained(small(1)) is a.trained and a.trained.result.steps_done == 20


def test_recommended_settings_never_train():
    reg, _, calls = gated_registry()
    for task in TASK_NAMES:
        trained = reg.trained(recommended(task))
        assert trained.pretrained and trained.result.settings == recommended(task)
    assert calls == []


def test_a_session_stops_at_its_training_seconds():
    reg = Registry(session_seconds=0.5)
    induction = recommended("induction")
    wide = dataclasses.replace(induction.model, d_model=128, n_heads=4)
    slow = dataclasses.replace(induction, seed=9, steps=2000, model=wide)
    start = time.monotonic()
    job = reg.start(slow, "greedy")
    wait_for(reg, slow)
    assert job.trained.result.stopped and job.trained.result.steps_done < 2000
    assert time.monotonic() - start < 0.5 + 5  # one step past the cap, plus the final evaluation
    refusal = reg.start(small(3), "greedy")
    assert isinstance(refusal, str) and "used its 0.5 s" in refusal
    assert reg.seconds_left("greedy") == 0
    assert not isinstance(reg.start(small(3), "someone else"), str)  # other sessions keep their own time


def test_default_session_budget_is_stated_on_the_page():
    at = make_app(view="train", task="sort").run()
    assert any(f"{SESSION_SECONDS:.0f} s in all" in c.value for c in at.caption)


def test_one_job_per_session_and_a_bounded_queue():
    reg, gate, calls = gated_registry(max_running=1, max_jobs=2)
    assert not isinstance(reg.start(small(1), "a"), str)
    assert "already training" in reg.start(small(2), "a")
    waiting = reg.start(small(2), "b")
    assert not isinstance(waiting, str)
    assert "server is busy" in reg.start(small(3), "c")
    time.sleep(0.2)
    assert waiting.state == "waiting" and len(calls) == 1  # one slot: the second waits its turn
    gate.set()
    wait_for(reg, small(1))
    wait_for(reg, small(2))
    assert len(calls) == 2 and reg.trained(small(2)) is not None


def test_only_the_owner_stops_a_job():
    reg, gate, _ = gated_registry()
    job = reg.start(small(5, steps=2000), "owner")
    assert not reg.stop(small(5, steps=2000), "watcher")
    assert reg.stop(small(5, steps=2000), "owner")
    gate.set()
    wait_for(reg, small(5, steps=2000))
    assert job.trained.result.stopped and job.trained.result.steps_done == 0


def test_finished_results_are_bounded():
    reg = Registry(keep_finished=3)
    for seed in range(1, 6):
        reg.start(small(seed), f"s{seed}")
        wait_for(reg, small(seed))
    kept = [seed for seed in range(1, 6) if reg.job(small(seed)) is not None]
    assert kept == [3, 4, 5]


def test_a_mixed_circuit_names_only_the_patterns_its_rows_show():
    """previous 0.116 / duplicate 0.057 was called "partly a previous-token head, partly a duplicate-token head";
    a name now needs most rows (head_roles), not a mean: a mean of 0.74 from 40% of the rows is not named."""
    trained = registry().trained(recommended("induction"))
    p = trained.patterns
    low = {name: np.full_like(p.shares[name], 0.1) for name in ("previous_at_source", "duplicate")}
    weak = dataclasses.replace(
        p,
        previous_at_source=np.full_like(p.previous_at_source, 0.116),
        duplicate=np.full_like(p.duplicate, 0.057),
        shares={**p.shares, **low},
    )
    words = train_view.mixed_words(dataclasses.replace(trained, patterns=weak))
    assert "at most 0.12" in words and "at most 0.06" in words
    assert "previous-token head" not in words and "duplicate-token head" not in words and "neither is named" in words
    high_mean = dataclasses.replace(
        weak,
        previous_at_source=np.full_like(p.previous_at_source, 0.74),
        shares={**weak.shares, "previous_at_source": np.full_like(p.previous_at_source, 0.4)},
    )
    assert "neither is named" in train_view.mixed_words(dataclasses.replace(trained, patterns=high_mean))
    most_rows = dataclasses.replace(
        high_mean, shares={**weak.shares, "previous_at_source": np.full_like(p.previous_at_source, 0.6)}
    )
    assert "layer 1 has a previous-token head" in train_view.mixed_words(
        dataclasses.replace(trained, patterns=most_rows)
    )


def test_the_table_names_heads_by_the_per_row_rule():
    """The "learned" column is head_roles' names with their share of rows (it once used a 0.5 mean of its own)."""
    trained = registry().trained(recommended("induction"))
    p = trained.patterns
    table = train_view._pattern_table(trained)
    assert table.loc[0, "learned"].startswith("previous-token head (") and "% of rows)" in table.loc[0, "learned"]
    assert table.loc[1, "learned"].startswith("induction head (")
    share = round(100 * float(p.shares["answer"][1, 0]))
    assert f"induction head ({share}% of rows)" in table.loc[1, "learned"]
    # a mean over the old 0.5 bar from a minority of rows: no name
    one = np.zeros_like(p.answer)
    one[1, 0] = 1.0
    minority = dataclasses.replace(p, answer=0.6 * one, shares={**p.shares, "answer": 0.4 * one})
    renamed = train_view._pattern_table(dataclasses.replace(trained, patterns=minority))
    assert "induction head" not in renamed.loc[1, "learned"]


def test_the_seed_survey_is_stated_for_the_recommended_settings_it_ran():
    """The survey ran each task's recommended settings, steps included (it once ran 600 steps of a 500-step one)."""
    at = make_app(view="train", task="induction").run()
    no_exception(at)
    [survey] = [c.value for c in at.caption if c.value.startswith("At the recommended settings")]
    assert survey == seed_note("induction")
    survey_of = SEED_SURVEY["induction"]
    slowest = max(step for step, formed in zip(survey_of.step99, survey_of.formed, strict=True) if formed)
    assert f"{sum(survey_of.formed)} of {len(survey_of.seeds)} seeds" in survey and f"by step {slowest}" in survey
    assert slowest <= recommended("induction").steps


def test_trained_weights_cannot_run_unscaled_and_say_so():
    """?weights=trained&task=shift&scaled=false said "Scaling is off" over the scaled maps."""
    off = make_app(weights="trained", task="shift", scaled="false").run()
    on = make_app(weights="trained", task="shift", scaled="true").run()
    no_exception(off)
    assert not any(w.value.startswith("Scaling is off") for w in off.warning)
    assert any("with weights = trained it stays on" in w.value for w in off.warning)
    drawn, scaled = grids(figures(off)[0]), grids(figures(on)[0])
    assert len(drawn) == len(scaled) > 0
    for a, b in zip(drawn, scaled, strict=True):  # the maps drawn are the scaled ones, and nothing claims otherwise
        np.testing.assert_array_equal(a, b)


def test_views_the_trained_model_cannot_serve_say_why_and_what_instead():
    """?view=permutation&weights=trained raised; now it says why and uses random weights of the same shape."""
    for view in ("permutation", "cross", "positions", "scaling"):
        at = make_app(view=view, weights="trained", task="shift").run()
        no_exception(at)
        [info] = [i.value for i in at.info if "random weights of the same shape" in i.value]
        assert "trained model" in info, view

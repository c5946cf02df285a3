"""The heads view's values toggle (numbers in the cells, up to 10 x 10) and the URL keeping only its own keys."""

from __future__ import annotations

import numpy as np
import pytest

from dashboard.figures.heads import head_charts
from dashboard.figures.layout import VALUES_COLUMNS, VALUES_MAX_CELLS
from dashboard.state.settings import LINK_KEYS
from tests.dashboard.conftest import figures, heatmaps, make_app, no_exception


def weight_traces(fig: dict) -> list[dict]:
    return [t for t in heatmaps(fig) if t.get("coloraxis")]


def test_values_link_writes_every_weight_in_its_cell():
    at = make_app(values="true").run()
    no_exception(at)
    assert at.toggle(key="values").value is True and not at.toggle(key="values").disabled
    traces = weight_traces(figures(at)[0])
    assert len(traces) == 4
    assert all(t["texttemplate"] == "%{z:.2f}" for t in traces)  # two decimals, as lesson 1 prints them


def test_values_are_off_by_default_and_the_toggle_turns_them_on():
    at = make_app().run()
    assert not any("texttemplate" in t for t in weight_traces(figures(at)[0]))
    at.toggle(key="values").set_value(True).run()
    no_exception(at)
    assert all("texttemplate" in t for t in weight_traces(figures(at)[0]))


def test_above_ten_tokens_the_toggle_is_disabled_and_says_why():
    sentence = " ".join(f"w{i}" for i in range(VALUES_MAX_CELLS + 1))
    at = make_app(values="true", sentence=sentence).run()
    no_exception(at)
    toggle = at.toggle(key="values")
    assert toggle.disabled and str(VALUES_MAX_CELLS) in toggle.help
    assert not any("texttemplate" in t for t in weight_traces(figures(at)[0]))


@pytest.mark.parametrize("presenter", [False, True])
def test_values_use_a_readable_font_and_larger_maps(presenter):
    w = np.full((4, 8, 8), 1 / 8)
    tokens = [f"t{i}" for i in range(8)]
    plain = head_charts(w, tokens, presenter=presenter)
    numbers = head_charts(w, tokens, presenter=presenter, values=True)
    assert numbers.ncols == VALUES_COLUMNS <= plain.ncols  # two to a row: a cell holds "0.12"
    trace = numbers.maps[0].to_dict()["data"][0]
    assert trace["textfont"]["size"] >= (19 if presenter else 11)
    assert "color" not in trace["textfont"]  # plotly.js picks black or white against each cell's colour


def test_unknown_parameters_leave_the_url_and_are_counted_not_quoted():
    at = make_app(utm_source="<b>x</b>", fbclid="abc", n_heads="2", view="heads").run()
    no_exception(at)
    assert set(at.query_params) <= LINK_KEYS
    assert "utm_source" not in at.query_params and "fbclid" not in at.query_params
    assert at.query_params["n_heads"] == ["2"] or at.query_params["n_heads"] == "2"  # the settings stay
    notes = [w.value for w in at.warning]
    assert any("2 parameters this dashboard does not use" in n for n in notes)
    assert not any("utm" in n or "<b>" in n or "fbclid" in n for n in notes)
    at.run()  # a later rerun: the URL stays clean, and the note (said once) is not repeated
    assert "utm_source" not in at.query_params and at.query_params["n_heads"] in ("2", ["2"])
    assert not any("does not use" in w.value for w in at.warning)

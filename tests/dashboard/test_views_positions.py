"""The positions view (AppTest): shifting every position leaves RoPE's maps unchanged, not the absolute ones'."""

from __future__ import annotations

import numpy as np
import pytest

from tests.dashboard.charts import charts, grids
from tests.dashboard.conftest import make_app, no_exception

ROUNDING = 1e-9
REAL = 1e-3
"""A change a class can see; the absolute encodings move weights by tenths at the defaults."""


def positions(**query: str):
    at = make_app(view="positions", **query).run()
    no_exception(at)
    return at


def table(at) -> dict[str, float]:
    df = at.dataframe[0].value
    pairs = zip(df["positional encoding"], df["max |difference|, all heads"], strict=True)
    return {kind: float(diff) for kind, diff in pairs}


def panels(at) -> dict[str, np.ndarray]:
    """Panel title -> drawn map, for the shift chart."""
    fig = charts(at)["shift_chart"]
    names = [t["name"] for t in fig["data"] if t.get("name") != "masked"]
    return dict(zip(names, grids(fig), strict=True))


def test_rope_is_unchanged_by_a_shift_and_absolute_encodings_are_not():
    at = positions()
    diffs = table(at)
    assert set(diffs) == {"none", "sinusoidal", "learned", "rope"}
    assert diffs["rope"] < ROUNDING and diffs["none"] < ROUNDING
    assert diffs["sinusoidal"] > REAL and diffs["learned"] > REAL
    maps = panels(at)
    assert len(maps) == 9  # rope, sinusoidal, learned: 0.., shifted.., |difference|
    assert maps["rope: |difference|"].max() < 1e-6  # float32 on the wire
    assert maps["sinusoidal: |difference|"].max() > REAL
    np.testing.assert_allclose(maps["rope: positions 0–7"], maps["rope: positions 10–17"], atol=1e-6)
    np.testing.assert_allclose(
        maps["sinusoidal: |difference|"],
        np.abs(maps["sinusoidal: positions 0–7"] - maps["sinusoidal: positions 10–17"]),
        atol=1e-6,
    )
    [verdict] = at.success
    assert verdict.value.startswith("RoPE keeps the map")


@pytest.mark.parametrize(("kind", "word"), [("rope", "Unchanged"), ("sinusoidal", "Changed"), ("learned", "Changed")])
def test_the_verdict_follows_the_sidebar_encoding(kind, word):
    at = positions(positional=kind)
    mine = [m.value for m in at.markdown if m.value.startswith(f"**Your setting ({kind}):**")]
    assert len(mine) == 1 and f"** {word} (max |difference|" in mine[0]


def test_shift_and_head_widgets_change_the_maps():
    at = positions()
    before = panels(at)["sinusoidal: positions 10–17"]
    at.number_input(key="shift").set_value(3).run()
    no_exception(at)
    after = panels(at)
    assert "sinusoidal: positions 3–10" in after
    assert not np.allclose(after["sinusoidal: positions 3–10"], before, atol=1e-3)
    at.button_group(key="shift_head").set_value(2).run()
    no_exception(at)
    assert not np.allclose(panels(at)["rope: positions 0–7"], after["rope: positions 0–7"], atol=1e-3)


def test_a_link_restores_shift_and_head():
    at = positions(shift="25", shift_head="3")
    assert at.number_input(key="shift").value == 25
    assert at.button_group(key="shift_head").value == 3
    assert "rope: positions 25–32" in panels(at)


def test_causal_maps_keep_the_mask_and_rope_still_ignores_the_shift():
    at = positions(causal="true")
    assert table(at)["rope"] < ROUNDING
    fig = charts(at)["shift_chart"]
    assert len([t for t in fig["data"] if t.get("name") == "masked"]) == 9


def test_without_an_even_d_k_rope_is_left_out_and_said_so():
    at = positions(d_model="8", n_heads="8")  # d_k = 1
    assert set(table(at)) == {"none", "sinusoidal", "learned"}
    assert any("RoPE needs an even d_k" in i.value for i in at.info)
    assert len(panels(at)) == 6


@pytest.mark.parametrize(
    "query",
    [
        dict(sentence="word"),
        dict(sentence=" ".join(f"w{i}" for i in range(64)), d_model="512", n_heads="16", shift="1000"),
    ],
    ids=["one-token", "64-tokens-16-heads-shift-1000"],
)
def test_extremes(query):
    at = positions(**query)
    t = len(query["sentence"].split())
    assert all(g.shape == (t, t) for g in panels(at).values())
    assert table(at)["rope"] < ROUNDING

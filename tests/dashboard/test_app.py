"""The dashboard as a user opens it: AppTest runs the real script headless."""

from __future__ import annotations

from tests.dashboard.conftest import array, figures, heatmaps, no_exception


def test_default_page_renders_the_heads(app):
    no_exception(app)
    [fig] = figures(app)
    maps = heatmaps(fig)
    assert len(maps) == 4  # defaults: 4 heads
    for trace in maps:
        assert array(trace["z"]).shape == (8, 8)  # "The bank of the river gave a loan": 8 tokens

"""The address Chromium shows is the address the property test models (tests/dashboard/test_link_is_the_screen.py).

AppTest never sees the browser's own writes of a bound control's parameter, so the property test models them: a
click writes key=value, or drops the key at the control's default at that moment, and then the page's answer (its
whole address) replaces the bar. Here the same clicks run in Chromium and in AppTest side by side, on the K/V heads
sequence that once made grouped-query attention out of a click on Heads 8: at every step the real address must be
the page's (AppTest's) and hold the clicked key as the model wrote it; a fresh tab on it must draw the same maps.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest

from tests.dashboard.test_link_is_the_screen import Downloads, Visitor
from tests.e2e.conftest import watched_page
from tests.e2e.dom import choose_segment, chosen_segment, heads_z, wait_charts_drawn

pytestmark = pytest.mark.e2e

SEQUENCE = [("n_heads", 8), ("kv_heads", 2), ("n_heads", 4), ("n_heads", 1), ("n_heads", 8)]
"""Heads 8 (K/V heads follow), K/V heads 2 (chosen), Heads 4 (still valid), Heads 1 (moves to 1), Heads 8."""


def address(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def test_the_kv_heads_sequence_leaves_the_modelled_address_in_chromium(server, browser):
    spy = Downloads()
    try:
        model = Visitor(spy)
        with watched_page(browser) as page:
            page.goto(server)
            wait_charts_drawn(page)
            for key, value in SEQUENCE:
                choose_segment(page, key, str(value))
                wait_charts_drawn(page)
                model.click("button_group", key, value)
                real = address(page.url)
                assert real == dict(model.at.query_params), (key, value, real)  # the page's answer, in the bar
                assert real.get(key) == model.browser.get(key), (key, value, real)  # as the click wrote it
                assert chosen_segment(page, "kv_heads") == str(model.at.button_group(key="kv_heads").value)
            drawn = heads_z(page)
            with watched_page(browser) as fresh:
                fresh.goto(page.url)
                wait_charts_drawn(fresh)
                assert chosen_segment(fresh, "n_heads") == "8" and chosen_segment(fresh, "kv_heads") == "8"
                for a, b in zip(heads_z(fresh), drawn, strict=True):
                    np.testing.assert_array_equal(a, b)
    finally:
        spy.close()

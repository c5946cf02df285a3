"""Reading the dashboard back from the browser: widget states, heatmap values, pixels.

Widgets are found by their key (Streamlit gives each keyed element the class
``st-key-<key>``), never by position on the page. Heatmap values are read from
plotly.js's own computed data (``gd.calcdata``: one decoded T_q x T_k grid per
drawn trace), i.e. what the browser drew, not what the server meant to send.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image
from playwright.sync_api import Locator, Page, expect

from bench.streamlit_server import HEADS_CHART, wait_idle


def widget(page: Page, key: str) -> Locator:
    return page.locator(f".st-key-{key}")


def choose_segment(page: Page, key: str, label: str) -> None:
    """Click option ``label`` of a segmented control and wait for the rerun it causes."""
    button = widget(page, key).get_by_role("radio", name=label, exact=True)
    wait_idle(page, button.click)


def chosen_segment(page: Page, key: str) -> str:
    """The label of the selected option of a segmented control."""
    return widget(page, key).locator("[role='radio'][aria-checked='true']").inner_text().strip()


def flip_toggle(page: Page, key: str) -> None:
    wait_idle(page, widget(page, key).locator("label").first.click)


def toggle_on(page: Page, key: str) -> bool:
    return widget(page, key).locator("input[type='checkbox']").is_checked()


def type_text(page: Page, key: str, text: str) -> None:
    """Replace the text of a text or number input and press Enter, as a user commits a value."""
    box = widget(page, key).locator("input")

    def commit() -> None:
        box.fill(text)
        box.press("Enter")

    wait_idle(page, commit)


def input_value(page: Page, key: str) -> str:
    return widget(page, key).locator("input").input_value()


def expect_number(page: Page, key: str, value: str) -> None:
    """Wait until the number input ``key`` shows ``value``, failing if it never does.

    Why not ``input_value`` as soon as the maps are drawn: Streamlit's number input first paints
    its ``default`` and only an effect later the value the URL seeded (a link with ``seed=7``
    shows 18, then 7). Under load that comes up to 2 s after the heatmaps are drawn, so an
    immediate read can catch the default.
    """
    expect(widget(page, key).locator("input")).to_have_value(value)


# Each drawn heatmap's group "g.hm" carries its calcdata as d3 datum: cd[0].z is the decoded
# (T_q, T_k) grid plotly.js drew, cd[0].trace the full trace. Weights maps sit on the shared colour
# axis; the masked-cell overlay is named "masked" (dashboard/figures/grid.py).
_GRIDS = """([chart, which]) => [...document.querySelectorAll(chart + ' g.hm')]
    .filter((g) => g.querySelector('image') && g.__data__)
    .map((g) => g.__data__[0])
    .filter((cd) => (which === 'weights' ? Boolean(cd.trace.coloraxis) : cd.trace.name === 'masked'))
    .map((cd) => Array.from(cd.z, (row) => Array.from(row, (v) => (Number.isFinite(v) ? v : null))))"""


def heads_z(page: Page, chart: str = HEADS_CHART) -> list[np.ndarray]:
    """Each drawn weights heatmap ``(T_q, T_k)`` of ``chart`` as plotly.js computed it, in order; NaN in a gap."""
    return [np.array(g, dtype=np.float64) for g in page.evaluate(_GRIDS, [chart, "weights"])]


def mask_z(page: Page) -> list[np.ndarray]:
    """Each drawn masked-cell overlay ``(T_q, T_k)``: a value on masked cells, NaN elsewhere."""
    return [np.array(g, dtype=np.float64) for g in page.evaluate(_GRIDS, [HEADS_CHART, "masked"])]


def cell_colours(page: Page, head: int = 0) -> np.ndarray:
    """RGB ``(T, T, 3)`` sampled from a screenshot of head ``head``'s map, one point per cell.

    The point is a quarter cell from the cell's top-left corner: off the "/" hatch
    stroke that crosses a masked cell from corner to corner.
    """
    t = heads_z(page)[head].shape[0]
    page.evaluate(
        """([chart, head]) => [...document.querySelectorAll(chart + ' g.hm')]
            .filter((g) => g.querySelector('image') && g.__data__ && g.__data__[0].trace.coloraxis)[head]
            .querySelector('image').setAttribute('data-al-shot', 'yes')""",
        [HEADS_CHART, head],
    )
    png = page.locator(f"{HEADS_CHART} image[data-al-shot='yes']").screenshot(animations="disabled")
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))  # (H, W, 3)
    h_px, w_px = pixels.shape[:2]
    ys = ((np.arange(t) + 0.25) * h_px / t).astype(int)
    xs = ((np.arange(t) + 0.25) * w_px / t).astype(int)
    return pixels[ys[:, None], xs[None, :]].astype(int)  # (T, T, 3)

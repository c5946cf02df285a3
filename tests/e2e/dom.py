"""Reading the dashboard back from the browser: widget states, heatmap values, pixels.

Widgets are found by their key (Streamlit gives each keyed element the class
``st-key-<key>``), never by position on the page. Heatmap values are read from
plotly.js's own computed data (``gd.calcdata``: one decoded T_q x T_k grid per
drawn trace), i.e. what the browser drew, not what the server meant to send.
"""

from __future__ import annotations

import io
import math
import time

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


def open_expander(page: Page, label: str) -> Locator:
    """Open the first expander labelled ``label`` and wait for the run that opening it causes (the code and the
    downloads are drawn only while open, ``dashboard.page.common.opened``); the expander."""
    expander = page.get_by_test_id("stExpander").filter(has=page.locator("summary", has_text=label)).first
    wait_idle(page, expander.locator("summary").click)
    return expander


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


# ---- geometry: what the browser drew, for the layout tests (tests/e2e/test_projector_and_phone.py) ----------

# Every drawn Plotly chart: its key (the innermost ".st-key-<key>" around it), its box, the boxes of its heatmap
# images, and every piece of its text with its kind, font size as drawn ("fs": the declared size times any scale
# Plotly applies, as it does to fit a bar's label to a narrow bar; "declared": the size alone) and box. Titles are
# the annotations the figures name "title" (dashboard/figures/grid.py title_annotation); "rotated" marks x labels
# drawn at an angle.
CHARTS = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .filter((p) => p._fullLayout && p.querySelector('.main-svg'))
  .map((p) => {
    const keyed = p.closest('[class*="st-key-"]');
    const key = keyed ? [...keyed.classList].find((c) => c.startsWith('st-key-')).slice(7) : '';
    const box = (e) => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height}; };
    const texts = [...p.querySelectorAll('text')].filter((t) => t.textContent.trim() && !t.closest('.hoverlayer'))
      .map((t) => {
      let kind = 'text';
      if (t.closest('.xtick')) kind = 'xtick';
      else if (t.closest('.ytick')) kind = 'ytick';
      else if (t.closest('.annotation')) {
        const a = p._fullLayout.annotations[Number(t.closest('.annotation').dataset.index)];
        kind = a && a.name === 'title' ? 'title' : 'annotation';
      } else if (t.closest('.legend')) kind = 'legend';
      const subplot = t.closest('.subplot');
      const m = t.getScreenCTM();  // Plotly shrinks a bar's label to its bar with a transform, not its font size
      const fs = parseFloat(getComputedStyle(t).fontSize);
      return {kind, text: t.textContent.slice(0, 40), fs: fs * Math.hypot(m.a, m.b), declared: fs, ...box(t),
              rotated: [t, t.parentNode].some((e) => (e.getAttribute('transform') || '').includes('rotate')),
              subplot: subplot ? subplot.getAttribute('class') : ''};
    }).filter((t) => t.w > 0 && t.h > 0);
    const maps = [...p.querySelectorAll('g.hm')].filter((g) => g.__data__ && g.__data__[0].trace.coloraxis)
      .map((g) => g.querySelector('image')).filter(Boolean).map(box);  // one per panel, not its mask's overlay
    return {key, box: box(p), maps, texts};
  })"""

# Font size of every visible text node outside the charts. Left out: Plotly's SVG (measured above), invisible
# zero-width text, Material icon ligatures (a glyph, not words; by test id or font) and Streamlit's
# "Skip to main content" (shown only on focus).
PAGE_TEXT = """() => {
  const out = [];
  const walker = document.createTreeWalker(document.querySelector('.stApp'), NodeFilter.SHOW_TEXT);
  for (let n; (n = walker.nextNode()); ) {
    const el = n.parentElement;
    if (!/[^\\s\u200b\u200c\u200d\ufeff]/.test(n.textContent) || el.closest('svg, .js-plotly-plot, '
        + '[data-testid=stIconMaterial], [data-testid=stSkipToContent]')) continue;
    if (getComputedStyle(el).fontFamily.includes('Material Symbols')) continue;  // an icon's ligature
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.bottom < 0 || r.top > innerHeight || r.right < 0 || r.left > innerWidth)
      continue;
    if (!el.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;
    out.push({text: n.textContent.trim().slice(0, 40), fs: parseFloat(getComputedStyle(el).fontSize)});
  }
  return out;
}"""

# Charts drawn so far, and how many of them are still without their SVG.
_DRAWN_COUNT = """() => { const all = [...document.querySelectorAll('.js-plotly-plot')];
  const drawn = (p) => Boolean(p._fullLayout && p.querySelector('.main-svg')
    && (!(p.data || []).some((t) => t.type === 'heatmap') || p.querySelector('g.hm image')));
  return [all.length, all.filter((p) => !drawn(p)).length]; }"""


def wait_charts_drawn(page: Page, *, charts: bool = True, settle_ms: int = 800, timeout: float = 90) -> None:
    """Until every chart on the page is drawn and their number has stayed the same for ``settle_ms``.

    ``charts=False``: a page of tables, with no chart to wait for. Streamlit loads plotly.js on demand, so a
    page that will draw charts may show none for a while after its script run has ended.
    """
    deadline = time.monotonic() + timeout
    seen, since = None, time.monotonic()
    while True:
        count, undrawn = page.evaluate(_DRAWN_COUNT)
        if (count, undrawn) != seen:
            seen, since = (count, undrawn), time.monotonic()
        elif undrawn == 0 and bool(count) is charts and (time.monotonic() - since) * 1000 >= settle_ms:
            return
        assert time.monotonic() < deadline, f"charts still drawing: {seen}"
        page.wait_for_timeout(100)


def charts(page: Page) -> list[dict]:
    """Every drawn chart (see ``CHARTS``); a colour bar's chart (key ending "_bar") is a key, not a chart."""
    return [c for c in page.evaluate(CHARTS) if not c["key"].endswith("_bar")]


def overlap(a: dict, b: dict, slack: float = 1.0) -> bool:
    """Two boxes share more than ``slack`` px in both directions."""
    apart_x = a["x"] + slack >= b["x"] + b["w"] or b["x"] + slack >= a["x"] + a["w"]
    apart_y = a["y"] + slack >= b["y"] + b["h"] or b["y"] + slack >= a["y"] + a["h"]
    return not (apart_x or apart_y)


ACROSS = (math.cos(math.radians(30)), math.sin(math.radians(30)))
"""The unit normal to x labels rotated 60° (dashboard/figures/layout.py TICK_ANGLE), in screen coordinates."""


def text_overlaps(drawn: list[dict]) -> list[tuple[str, str]]:
    """Pairs of texts drawn over each other, in any chart or across charts.

    Boxes are compared, except two tick labels of one axis, whose boxes include the line's leading: labels
    whose centres are one font size apart (y labels stacked, as the old heads test held them) do not touch.
    Two rotated x labels' boxes are upright rectangles around slanted text and always meet: their centres must
    be at least 0.86 of the font size apart across the text's direction (a capital's height plus a descender
    in Source Sans), as tilted text never touches then. Other rotated text (a bar's value written upright) has a
    tight box: boxes are compared.
    """
    texts = [(i, t) for i, c in enumerate(drawn) for t in c["texts"]]
    bad = []
    for n, (i, a) in enumerate(texts):
        for j, b in texts[n + 1 :]:
            dx = (b["x"] + b["w"] / 2) - (a["x"] + a["w"] / 2)
            dy = (b["y"] + b["h"] / 2) - (a["y"] + a["h"] / 2)
            same_axis = i == j and a["kind"] == b["kind"] and a["subplot"] == b["subplot"]
            if same_axis and a["kind"] == "xtick" and a["rotated"] and b["rotated"]:  # x labels at TICK_ANGLE
                clash = abs(dx * ACROSS[0] + dy * ACROSS[1]) < 0.86 * max(a["fs"], b["fs"])
            elif same_axis and a["kind"] == "ytick":
                clash = abs(dy) < max(a["fs"], b["fs"]) and overlap(a, b)
            else:
                clash = overlap(a, b)
            if clash:
                bad.append((a["text"], b["text"]))
    return bad


def toolbar_overlaps(page: Page, index: int) -> list[str]:
    """Hover chart ``index`` (of ``charts``' order) so Plotly shows its toolbar: the texts it covers."""
    plots = page.locator(".js-plotly-plot").filter(has=page.locator(".main-svg"))
    keyed = [c["key"] for c in page.evaluate(CHARTS)]
    nth = [k for k, key in enumerate(keyed) if not key.endswith("_bar")][index]
    plot = plots.nth(nth)
    plot.scroll_into_view_if_needed()
    plot.hover()
    bar = plot.locator(".modebar")
    bar.wait_for(state="visible")
    b = bar.bounding_box()
    box = {"x": b["x"], "y": b["y"], "w": b["width"], "h": b["height"]}
    return [t["text"] for t in charts(page)[index]["texts"] if overlap(box, t)]


# Sideways overflow: how far the page scrolls sideways, and the visible elements whose right edge passes the
# screen's (the first ten, by test id or tag). An element inside a parent that clips or scrolls it (a table's
# own scroll box, Plotly's clipped SVG) is clipped, not overflowing: only what sticks out of every clipping
# ancestor counts. The sidebar, collapsed off screen to the left on a phone, is not the page.
_OVERFLOW = """() => {
  const w = document.documentElement.clientWidth;
  const clips = (e) => { const s = getComputedStyle(e); return s.overflowX !== 'visible'; };
  const wide = [];
  for (const e of document.querySelectorAll('.stApp *')) {
    if (e.closest('[data-testid=stSidebar]') || !e.checkVisibility({visibilityProperty: true})) continue;
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.right <= w + 0.5) continue;
    let right = r.right;
    for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      if (clips(p)) right = Math.min(right, p.getBoundingClientRect().right);
    }
    if (right > w + 0.5) wide.push((e.getAttribute('data-testid') || e.tagName) + ' ' + Math.round(right));
  }
  return {scroll: Math.max(0, document.scrollingElement.scrollWidth - w), wide: wide.slice(0, 10)};
}"""


def horizontal_overflow(page: Page) -> dict:
    """``{"scroll": px the page scrolls sideways, "wide": elements sticking out past the screen's right edge}``."""
    return page.evaluate(_OVERFLOW)


# Formulas cut at the screen's edge: KaTeX never breaks a display formula, so one wider than the page runs past
# it (and Streamlit clips it). Each formula's extent is that of its glyph boxes (KaTeX's inline-block ".base"
# spans), not of its block, which is always the column's width.
_FORMULAS = """() => [...document.querySelectorAll('.stApp .katex-display')]
  .filter((d) => !d.closest('[data-testid=stSidebar]') && d.checkVisibility())
  .map((d) => { const boxes = [...d.querySelectorAll('.katex-html .base')].map((b) => b.getBoundingClientRect());
    return {text: d.textContent.slice(0, 40), left: Math.min(...boxes.map((b) => b.left)),
            right: Math.max(...boxes.map((b) => b.right))}; })"""


def formulas_cut(page: Page) -> list[tuple[str, float, float]]:
    """The formulas on the page (outside the sidebar) that do not fit inside the screen: (text, left, right)."""
    width = page.evaluate("() => document.documentElement.clientWidth")
    return [
        (f["text"], f["left"], f["right"])
        for f in page.evaluate(_FORMULAS)
        if f["left"] < -0.5 or f["right"] > width + 0.5
    ]


# Text cut with an ellipsis: every visible element on the page (the sidebar left out: collapsed off screen on a
# projector and a phone) whose text overflows a box that ends it with "…" (a button's label squeezed by its row).
# Left out too: a tour's note line in presenter mode, cut to one line on purpose with the whole note in the popover
# beside it (dashboard/page/presenter.py TOUR_LINE_KEY; tests/e2e/test_tours_on_a_projector.py opens it).
_CUT_TEXT = """() => [...document.querySelectorAll('.stApp *')]
  .filter((e) => !e.closest('[data-testid=stSidebar], .st-key-tour_line')
    && e.checkVisibility({visibilityProperty: true})
    && getComputedStyle(e).textOverflow === 'ellipsis' && e.scrollWidth > e.clientWidth + 1 && e.textContent.trim())
  .map((e) => e.textContent.trim().slice(0, 60))"""


def cut_text(page: Page) -> list[str]:
    """The texts the page shows cut short with an ellipsis (see ``_CUT_TEXT``)."""
    return page.evaluate(_CUT_TEXT)


# What a tour step's figure (``dashboard/classroom/tours.py`` ``Step.figure``) drew, by its key: for charts (one
# chart keyed so, or a grid's container of charts), each chart's heatmap images, its texts and its plot area; for
# anything else (a table, the quiz panel), the element's box and its table rows.
_FIGURE = """(key) => {
  const el = document.querySelector('.st-key-' + key);
  if (!el) return null;
  const box = (e) => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height}; };
  const plots = [...el.querySelectorAll('.js-plotly-plot')]
    .filter((p) => p._fullLayout && p.querySelector('.main-svg'));
  if (!plots.length) return {charts: [], element: box(el), rows: [...el.querySelectorAll('tr')].map(box)};
  return {charts: plots.map((p) => ({
    maps: [...p.querySelectorAll('g.hm')].filter((g) => g.__data__ && g.__data__[0].trace.coloraxis)
      .map((g) => g.querySelector('image')).filter(Boolean).map(box),
    texts: [...p.querySelectorAll('text')].filter((t) => t.textContent.trim() && !t.closest('.hoverlayer'))
      .map((t) => ({text: t.textContent.slice(0, 40), ...box(t)})).filter((t) => t.w > 0 && t.h > 0),
    plot: [...p.querySelectorAll('.draglayer .nsewdrag')].map(box),
  }))};
}"""


def figure_parts(page: Page, key: str, rows: int | None = None) -> list[dict]:
    """The boxes of what figure ``key`` drew, only its first ``rows`` rows if given: a grid's charts stacked in rows
    (by their top), one chart's maps by theirs (MiniLM's overview), a table's header and first rows. Fails when the
    page has no element of that key."""
    drawn = page.evaluate(_FIGURE, key)
    assert drawn is not None, f"no figure {key} on the page"
    if not drawn["charts"]:
        table = drawn["rows"]
        return [drawn["element"]] if rows is None or not table else table[: rows + 1]  # the header, then rows
    charts = drawn["charts"]
    if rows is None:
        return [b for c in charts for b in (*c["maps"], *c["texts"], *c["plot"])]
    if len(charts) > 1:  # a grid: one map per chart, the charts in rows
        tops = sorted({round(c["maps"][0]["y"] if c["maps"] else c["plot"][0]["y"]) for c in charts})[:rows]
        first = [c for c in charts if round(c["maps"][0]["y"] if c["maps"] else c["plot"][0]["y"]) in tops]
        return [b for c in first for b in (*c["maps"], *c["texts"])]
    [chart] = charts
    tops = sorted({round(m["y"]) for m in chart["maps"]})[:rows]
    maps = [m for m in chart["maps"] if round(m["y"]) in tops]
    bottom = max(m["y"] + m["h"] for m in maps)
    return maps + [t for t in chart["texts"] if t["y"] + t["h"] / 2 <= bottom]


def first_map_key(page: Page) -> str:
    """The key of the page's first map: its grid's key when the chart is one of a grid (``<grid>_<n>``)."""
    [first, *_] = [c["key"] for c in charts(page) if c["maps"]]
    grid, _, n = first.rpartition("_")
    return grid if n.isdigit() and page.locator(f".st-key-{grid}").count() else first

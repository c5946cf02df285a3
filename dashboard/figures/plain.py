"""A ``go.Figure`` from plain trace and layout dicts, without Plotly's per-property validation.

Why: ``go.Figure(data, layout)`` validates and coerces every property through
graph objects. For the heads grid that was most of the figure's server CPU: 4 heads
of 10 tokens 4.1 of 5.6 ms (with ``to_dict`` and JSON; 3.8 ms unvalidated), 16 heads
of 64 tokens 23 of ~36 ms (26 ms unvalidated), and 30 students share one GIL.
The builders write dicts whose values are already what the figure JSON needs;
tests/dashboard/test_figures_valid.py rebuilds every grid builder's figure WITH
validation and checks it gives the same JSON, so a wrong property still fails a
test instead of reaching a page.

``_validate`` is Plotly's own per-figure switch (``BaseFigure.__init__``, since
plotly 4.7), not in its documented API: plotly is pinned in requirements.txt; a
version without it rejects the unknown keyword (TypeError: every figure test fails),
and one that ignored it would only cost the time again. ``st.plotly_chart``
turns a ``go.Figure`` into JSON without validating it again (a dict it would).
"""

from __future__ import annotations

import plotly.colors
import plotly.graph_objects as go

from dashboard.compute import bounded_cache
from dashboard.compute.bounded_cache import MB


def plain_figure(data: list[dict], layout: dict) -> go.Figure:
    """``go.Figure(data=data, layout=layout)``, stored as given: no validation, no coercion."""
    return go.Figure(data=data, layout=layout, _validate=False)


def colorscale(name: str) -> list[list]:
    """A named Plotly colour scale (``"Viridis"``, ``"RdBu_r"``) as ``[[position, colour], ...]``.

    Validation used to expand the name; plotly.js knows only some names and not the ``_r`` reversals.
    A fresh list each call (the figure owns it); the lookup itself, ~1 ms, is done once per name.
    """
    return [[position, colour] for position, colour in _named_colorscale(name)]


@bounded_cache.cache(max_bytes=1 * MB)
def _named_colorscale(name: str) -> tuple[tuple[float, str], ...]:
    return tuple((float(position), colour) for position, colour in plotly.colors.get_colorscale(name))

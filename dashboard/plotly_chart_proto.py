"""``st.plotly_chart`` for a figure whose Plotly JSON was made once: every session sends that one string.

Below Streamlit's public API, kept to this module. ``st.plotly_chart`` (``streamlit/elements/plotly_chart.py``,
Streamlit 1.67) turns the figure into its dict, then into a JSON string (``plotly.io.to_json``), the
``PlotlyChart`` proto's ``spec``, on every call: once per chart per session per run. A room's followers all draw
the same figures (``dashboard.shared_figures``: built once per run and mode), so the string is the same for all of
them; here it is made once (``spec_of``) and the element is built as ``st.plotly_chart`` builds it for a chart with
no selections and Streamlit's theme: the same proto fields, the same element id (``compute_and_register_element_id``
with the same arguments), the same width and height, the same ``_enqueue``.

``tests/dashboard/test_plotly_chart_proto.py`` draws one figure both ways and requires the same ``_enqueue`` call,
field for field: it fails when Streamlit changes how it builds the element (then update this module to match, or
drop it and call ``st.plotly_chart``).
"""

from __future__ import annotations

import json
from typing import Any

import plotly.io
from streamlit.delta_generator import DeltaGenerator
from streamlit.delta_generator_singletons import get_dg_singleton_instance
from streamlit.elements.lib import agent_spec
from streamlit.elements.lib.form_utils import current_form_id
from streamlit.elements.lib.layout_utils import LayoutConfig
from streamlit.elements.lib.utils import compute_and_register_element_id
from streamlit.elements.plotly_chart import _plotly_data, _resolve_content_height, _resolve_content_width
from streamlit.proto.PlotlyChart_pb2 import PlotlyChart as PlotlyChartProto

SELECTION_MODES = ("points", "box", "lasso")
"""``st.plotly_chart``'s default ``selection_mode``: part of the element id even with selections off."""
THEME = "streamlit"


def spec_of(figure: dict) -> str:
    """The ``spec`` string ``st.plotly_chart`` makes of a figure's dict (``Figure.to_dict()``)."""
    return plotly.io.to_json(figure, validate=False)


def plotly_chart(
    figure: dict, spec: str, *, width: str | int, key: str, config: dict[str, Any], dg: DeltaGenerator | None = None
) -> None:
    """``dg.plotly_chart(figure, width=width, key=key, config=config)``, sending ``spec`` (``spec_of(figure)``);
    ``dg`` None is ``st`` itself (the container the page is in)."""
    dg = dg if dg is not None else get_dg_singleton_instance().main_dg
    proto = PlotlyChartProto()
    proto.theme = THEME
    proto.form_id = current_form_id(dg)
    proto.spec = spec
    proto.config = json.dumps(config)
    proto.id = compute_and_register_element_id(
        "plotly_chart",
        user_key=key,
        key_as_main_identity=False,
        dg=dg,
        plotly_spec=proto.spec,
        plotly_config=proto.config,
        selection_mode=SELECTION_MODES,
        is_selection_activated=False,
        theme=THEME,
        width=width,
        height="content",
        alt=None,
    )
    width, height = _resolve_content_width(width, figure), _resolve_content_height("content", figure)
    layout = LayoutConfig(width=width, height=height)
    dg._enqueue(
        "plotly_chart",
        proto,
        layout_config=layout,
        agent_props=agent_spec.element("plotly_chart", key=key, data_builder=lambda: _plotly_data(spec), alt=None),
    )

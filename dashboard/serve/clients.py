"""Who is asking, as the server's limits count it: the connection's address, the browser, and whether a tab is open.

A browser tab is a Streamlit session here: random, per tab, gone with the tab. A script can open as many as it
likes, so the limits in ``classroom.rooms`` and ``compute.training_jobs`` also count the browser and the
address.

The browser (``browser``) is Streamlit's own XSRF cookie, ``_streamlit_xsrf``: the one cookie Streamlit sets
(``server.enableXsrfProtection``, on in ``.streamlit/config.toml``), on its health check, which the page calls before
it opens its websocket, so every page's handshake carries it. It holds a random token per browser, kept across
reloads and tabs (masked anew each time it is set, so ``xsrf_token`` unmasks it), and Community Cloud's proxy passes
it through (Streamlit's ``starlette_server_config.py`` says its cookies are on that proxy's allowlist). A script
makes up a new one per socket at will: the address is what bounds a script.

The address (``address``) is the connection's peer unless the deployment names the proxies it trusts. Streamlit
1.67 serves through uvicorn with ``proxy_headers`` on and passes no ``forwarded_allow_ips``, so uvicorn reads
``FORWARDED_ALLOW_IPS`` from the environment and, unset, trusts ``127.0.0.1,::1``: a page opened on the server's
own machine (or through a proxy there) with a forged ``X-Forwarded-For`` was reported from the header's address.
Here the deployment names its proxies by setting ``FORWARDED_ALLOW_IPS`` itself (uvicorn then applies it, and so does
this module); unset, no proxy is trusted, and a connection whose reported address is the one uvicorn took from the
header counts against the address it came from: this machine's (``LOCAL``).

``alive`` reads Streamlit's session manager (``streamlit_runtime.sessions``: private API, contract-tested in
``tests/dashboard/test_streamlit_runtime.py``); a Streamlit that moved it raises there, never reads as "cannot tell".
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Sequence

import streamlit as st

from dashboard.serve import streamlit_runtime

LOCAL = "local"
"""The address of a page opened on this machine (Streamlit reports None for 127.0.0.1 and ::1)."""
FORWARDED_ALLOW_IPS = "FORWARDED_ALLOW_IPS"
"""uvicorn's environment variable: the proxies whose ``X-Forwarded-For`` it believes (addresses, networks, or *)."""
UVICORN_TRUSTS = ("127.0.0.1", "::1")
"""What uvicorn believes the header from when ``FORWARDED_ALLOW_IPS`` is unset (``uvicorn.config.Config``)."""
XSRF_COOKIE = "_streamlit_xsrf"
"""Streamlit's XSRF cookie (``streamlit.web.server.starlette.starlette_server_config.XSRF_COOKIE_NAME``)."""


def address() -> str:
    """The client's IP address as the limits count it (``client_address``), or ``LOCAL``."""
    try:
        ip = st.context.ip_address
        forwarded = st.context.headers.get_all("X-Forwarded-For")
    except RuntimeError:  # outside a script run: no connection to read
        ip, forwarded = None, []
    reported = ip if isinstance(ip, str) and ip else None  # AppTest's connection is a mock, not a text
    forwarded = [v for v in forwarded if isinstance(v, str)] if isinstance(forwarded, list) else []
    return client_address(reported, forwarded, FORWARDED_ALLOW_IPS in os.environ)


def client_address(reported: str | None, forwarded: Sequence[str], proxies_named: bool) -> str:
    """The address a connection counts against: ``reported`` (Streamlit's ``st.context.ip_address``, None for
    loopback) unless uvicorn took it from the ``X-Forwarded-For`` values ``forwarded`` while the deployment named no
    proxy (``proxies_named``: ``FORWARDED_ALLOW_IPS`` is set, and uvicorn's choice is the deployment's). uvicorn
    took it exactly when the header's last address not on loopback (or, all on loopback, its first) is the one
    reported: the peer was then on loopback, so the connection is this machine's, ``LOCAL``.

    A client elsewhere that names its own address in that place of the header also counts as ``LOCAL``: it can
    move itself to this machine's share, never into another client's."""
    if proxies_named or not forwarded:
        return reported or LOCAL
    picked = _uvicorn_pick(", ".join(forwarded))
    took = picked in UVICORN_TRUSTS if reported is None else picked == reported
    return LOCAL if took else reported or LOCAL


def _uvicorn_pick(header: str) -> str:
    """The address uvicorn puts in the peer's place for ``header`` when it trusts the peer and nothing else
    (``uvicorn.middleware.proxy_headers``: from the right, the first host it does not trust; all trusted, the first)."""
    hosts = [_host(item.strip()) for item in header.split(",")]
    return next((h for h in reversed(hosts) if not _loopback(h)), hosts[0])


def _loopback(host: str) -> bool:
    """``host`` is one of ``UVICORN_TRUSTS`` as uvicorn compares them: as IP addresses, so ``::0001`` is ``::1``."""
    try:
        return ipaddress.ip_address(host) in {ipaddress.ip_address(h) for h in UVICORN_TRUSTS}
    except ValueError:
        return False


def _host(value: str) -> str:
    """The host of one ``X-Forwarded-For`` entry without its port, as uvicorn's ``_parse_host_port`` reads it:
    ``[v6]:port``, ``v4:port`` or a bare host; anything else whole."""
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            return value
        rest = value[end + 1 :]
        return value[1:end] if not rest or rest.startswith(":") else value
    if value.count(":") == 1:
        host, port = value.rsplit(":", 1)
        return host if _is_int(port) else value
    return value


def _is_int(text: str) -> bool:
    """``int(text)`` works (uvicorn's test for a port: it takes what Python's ``int`` takes)."""
    try:
        int(text)
    except ValueError:
        return False
    return True


def browser() -> str:
    """This browser's id: the token in Streamlit's XSRF cookie (hex), "" when the page sent none (then its tab
    stands for the browser: ``rooms.Client.browser``)."""
    try:
        cookie = st.context.cookies.get(XSRF_COOKIE)
    except RuntimeError:  # outside a script run
        cookie = None
    return xsrf_token(cookie) if isinstance(cookie, str) else ""


def xsrf_token(cookie: str) -> str:
    """The random token inside an XSRF cookie's value, as hex: ``2|mask|masked token|time`` (each byte of the token
    XORed with the 4-byte mask's, in turn) or the token itself (version 1); "" for anything else."""
    value = cookie.strip("\"'")
    try:
        if value.startswith("2|"):
            _, mask_hex, masked_hex, _time = value.split("|")
            mask, masked = bytes.fromhex(mask_hex), bytes.fromhex(masked_hex)
            if len(mask) != 4:
                return ""
            return bytes(b ^ mask[i % 4] for i, b in enumerate(masked)).hex()
        return bytes.fromhex(value).hex()
    except ValueError:
        return ""


def alive(session_id: str, *, here: bool = False) -> bool | None:
    """True while the tab's websocket is connected to this process, False once it has gone, None when this
    process cannot tell (no runtime, as in AppTest, or a session of another app process).

    ``here``: the session is known to have run on this process, so one the runtime no longer knows at all has gone
    too (False, not None). Streamlit forgets a closed tab's session at once when it cannot be resumed, and keeps
    the others for a reconnect only for a while (at most 128, for ``server.disconnectedSessionTTL``: 2 minutes)."""
    sessions = streamlit_runtime.sessions()
    if sessions is None:  # no server: no runtime, or AppTest's stand-in
        return None
    if sessions.is_active_session(session_id):
        return True
    return False if here or sessions.get_session_info(session_id) is not None else None

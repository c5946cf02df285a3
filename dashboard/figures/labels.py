"""Token text made safe and readable for Plotly labels.

plotly.js interprets a subset of HTML in every label, title, tick and hover
text (``<b>``, ``<br>``, ``<a href>``...), so a token typed as ``<b>x</b>`` must
reach it as ``&lt;b&gt;x&lt;/b&gt;``, which plotly.js draws literally. Every
label is also prefixed with its position, ``"3·river"``: a repeated word keeps
its own row and column, and no label can start with ``$`` (LaTeX in plotly.js).
"""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Sequence

TICK_CHARS = 12
"""Longest tick text; the hover label always carries the full token."""


def escape(text: str) -> str:
    """HTML-escape ``&``, ``<`` and ``>`` in ``text`` for any Plotly string.

    Quotes stay as they are: plotly.js decodes only a few named entities in its labels (amp, lt, gt, nbsp, mu,
    times, plusmn, deg: ``entityToUnicode`` in its ``string_mappings``), so ``&quot;`` would be drawn literally;
    and its labels never sit inside an HTML attribute, where a quote could end one.
    """
    return html.escape(text, quote=False)


def position(i: int) -> str:
    """Position ``i`` as every axis label and every sentence names it: counted from 0, the number before the dot
    of ``"3·river"`` (as the lessons' ``weights[:3, :3]``). A row, a key, a column of a map and a token are named
    by this; heads, layers, steps and blocks are counted from 1, as their titles are."""
    return str(int(i))


def span(first: int, last: int) -> str:
    """Positions ``first`` to ``last`` (both included), each by ``position``: ``"0–2"``, or ``"4"`` for one."""
    return position(first) if first == last else f"{position(first)}–{position(last)}"


def positions(indices: Sequence[int]) -> str:
    """Positions in words, each by ``position``: ``[7, 8, 9] -> "7, 8, 9"``; four or more in a row as a ``span``."""
    indices = [int(i) for i in indices]
    if len(indices) >= 4 and indices == list(range(indices[0], indices[-1] + 1)):
        return span(indices[0], indices[-1])
    return ", ".join(position(i) for i in indices)


def _places(tokens: Sequence[str], first: int, places: Sequence[str] | None) -> list[str]:
    """Each token's position as its label writes it: ``places`` if given, else ``first``, ``first + 1``..."""
    return [position(i) for i in range(first, first + len(tokens))] if places is None else list(places)


def position_labels(tokens: Sequence[str], first: int = 0, places: Sequence[str] | None = None) -> list[str]:
    """Unique, escaped category labels ``"i·token"`` for T tokens at positions ``first``, ``first + 1``...:
    (T,) str -> (T,) str. ``places``: each token's position as text instead (``pair_place``: "2/3")."""
    return [f"{escape(i)}·{escape(t)}" for i, t in zip(_places(tokens, first, places), tokens, strict=True)]


def tick_texts(
    tokens: Sequence[str], max_chars: int = TICK_CHARS, first: int = 0, places: Sequence[str] | None = None
) -> list[str]:
    """Escaped tick texts ``"i·token"``, long tokens cut to ``max_chars`` with an ellipsis (``places``: as for
    ``position_labels``).

    The cut happens before escaping, so an entity such as ``&amp;`` is never split.
    """
    return [
        f"{escape(i)}·{escape(t if len(t) <= max_chars else t[: max_chars - 1] + '…')}"
        for i, t in zip(_places(tokens, first, places), tokens, strict=True)
    ]


def pair_place(i: int, j: int) -> str:
    """Where an aligned pair of tokens stands: ``position(i)`` when both sentences have it at ``i``, else
    ``"i/j"`` (the first sentence's position, then the second's)."""
    return position(i) if i == j else f"{position(i)}/{position(j)}"


def pair_token(a: str, b: str) -> str:
    """An aligned pair's tokens: the token, or ``"a/b"`` where the two sentences differ."""
    return a if a == b else f"{a}/{b}"


def tick_step(n: int, max_ticks: int) -> int:
    """Label every ``step``-th position so that at most ``max_ticks`` labels are drawn."""
    return max(1, -(-n // max(1, max_ticks)))


def one_line(text: str, max_chars: int) -> str:
    """Typed ``text`` as one short line for a title: control and invisible format characters (a bidi override, a
    zero-width space; not the joiner inside an emoji) become spaces, runs of space one, cut to ``max_chars`` with an
    ellipsis. Not escaped: the figure builders escape every title."""
    shown = "".join(" " if unicodedata.category(c) in ("Cc", "Cf") and c != "\u200d" else c for c in text)
    shown = " ".join(shown.split())
    return shown if len(shown) <= max_chars else shown[: max(1, max_chars - 1)] + "…"

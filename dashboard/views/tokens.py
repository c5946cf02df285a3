"""Tokens: what the model actually receives, one row per position.

Shown in ``st.dataframe`` (a canvas grid): token text is drawn as plain text,
never interpreted as Markdown or HTML.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.page import tokens_or_message
from dashboard.settings import Settings


def token_table(tokens: tuple[str, ...]) -> pd.DataFrame:
    """Position, token, its code points, and the earlier position with the same embedding row."""
    first: dict[str, int] = {}
    same = []
    for i, t in enumerate(tokens):
        same.append(str(first[t]) if t in first else "")
        first.setdefault(t, i)
    return pd.DataFrame(
        {
            "position": range(len(tokens)),
            "token": list(tokens),
            "code points": [" ".join(f"U+{ord(c):04X}" for c in t) for t in tokens],
            "same embedding as position": same,
        }
    )


def render(settings: Settings) -> None:
    tokens = tokens_or_message(settings.sentence)
    if tokens is None:
        return
    t, unique = len(tokens), len(set(tokens))
    st.caption(
        f"{t} token{'s' * (t != 1)} ({unique} different). The text is normalised (NFC) and lower-cased; "
        f"words, numbers, punctuation marks and emoji each become one token. Each token becomes one row "
        f"of X, shape ({t}, {settings.config.d_model}); the same token always gets the same row."
    )
    st.dataframe(
        token_table(tokens),
        hide_index=True,
        width="stretch",
        height=min(600, 35 * (len(tokens) + 1) + 3),  # up to 16 rows without scrolling
        column_config={
            "position": st.column_config.NumberColumn("position", help="Row and column index in every heatmap"),
            "token": st.column_config.TextColumn("token", help="Exactly the string the model embeds"),
            "code points": st.column_config.TextColumn("code points", help="The Unicode characters of the token"),
            "same embedding as position": st.column_config.TextColumn(
                "same embedding as position", help="A repeated token reuses the first occurrence's vector"
            ),
        },
    )

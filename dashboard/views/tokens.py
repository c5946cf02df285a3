"""Tokens: what the model actually receives, one row per position.

Shown in ``st.dataframe`` (a canvas grid): token text is drawn as plain text,
never interpreted as Markdown or HTML.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core import MAX_TOKENS
from core.pretrained import Encoding
from dashboard.compute import computations
from dashboard.page.common import shape_text, source_or_message, table_height
from dashboard.state.followed import Controls
from dashboard.state.settings import Settings


def token_table(tokens: tuple[str, ...]) -> pd.DataFrame:
    """Position, token, the earlier position with the same embedding row, and its code points.

    The repeat comes before the code points: a phone shows the first three columns of the grid, and the repeat
    is the view's point (the two "the" share one row of X); the code points are for the curious, a swipe away.
    """
    first: dict[str, int] = {}
    same = []
    for i, t in enumerate(tokens):
        same.append(str(first[t]) if t in first else "")
        first.setdefault(t, i)
    return pd.DataFrame(
        {
            "position": range(len(tokens)),
            "token": list(tokens),
            "same embedding as position": same,
            "code points": [" ".join(f"U+{ord(c):04X}" for c in t) for t in tokens],
        }
    )


def piece_table(encoding: Encoding) -> pd.DataFrame:
    """Position, WordPiece piece, its vocabulary id, and the word it comes from (blank for [CLS] and [SEP])."""
    return pd.DataFrame(
        {
            "position": range(len(encoding.tokens)),
            "piece": list(encoding.tokens),
            "id": list(encoding.ids),
            "word": ["" if w is None else encoding.words[w] for w in encoding.word_ids],
        }
    )


def split_words(encoding: Encoding) -> list[str]:
    """The words WordPiece cut into two or more pieces, each as "word → piece piece ...", in order."""
    pieces: dict[int, list[str]] = {}
    for token, word in zip(encoding.tokens, encoding.word_ids, strict=True):
        if word is not None:
            pieces.setdefault(word, []).append(token)
    return [f"{encoding.words[w]} → {' '.join(p)}" for w, p in pieces.items() if len(p) > 1]


def render_pieces(settings: Settings) -> None:
    """The pretrained model's view of the sentence: WordPiece pieces between [CLS] and [SEP], with their ids."""
    encoding = computations.minilm_encoding(settings.sentence)
    t = len(encoding.tokens)
    st.caption(
        f"{t} pieces, [CLS] and [SEP] included: MiniLM lower-cases the text, strips accents, splits off "
        "punctuation, then cuts each word into the longest pieces its 30,522-piece vocabulary holds "
        "(a piece that continues a word starts with ##). Every map of this model has one row and one column "
        f"per piece. The views show at most {MAX_TOKENS} pieces."
    )
    split = split_words(encoding)
    if split:
        st.text("Words split into pieces:\n" + "\n".join(split))  # st.text: typed words are never Markdown
    else:
        st.caption("No word of this sentence was split: each is one piece of the vocabulary.")
    st.dataframe(
        piece_table(encoding),
        hide_index=True,
        width="stretch",
        height=min(600, table_height(t)),
        column_config={
            "position": st.column_config.NumberColumn("position", help="Row and column index in every heatmap"),
            "piece": st.column_config.TextColumn("piece", help="The WordPiece piece the model embeds"),
            "id": st.column_config.NumberColumn("id", help="Its row in the model's word-embedding table"),
            "word": st.column_config.TextColumn("word", help="The word the piece comes from"),
        },
    )


def render(settings: Settings, controls: Controls) -> None:
    source = source_or_message(settings, controls)
    if source is None:
        return
    seen = source.tokens()
    if seen.word_ids is not None:  # WordPiece pieces: their ids and the words they split
        render_pieces(settings)
        return
    tokens, first = seen.tokens, source.runs()[0]
    t, unique = len(tokens), len(set(tokens))
    st.caption(
        f"The tokens as the model sees them: {seen.label}, {t} token{'s' * (t != 1)} ({unique} different). {seen.how} "
        f"Each token becomes one row of X, shape {shape_text(first.x.shape)}; the same token always gets the same "
        "row."
    )
    st.container(key="token_table").dataframe(
        token_table(tokens),
        hide_index=True,
        width="stretch",
        height=min(600, table_height(len(tokens))),  # up to 16 rows without scrolling
        column_config={
            "position": st.column_config.NumberColumn("position", help="Row and column index in every heatmap"),
            "token": st.column_config.TextColumn("token", help="Exactly the string the model embeds"),
            "same embedding as position": st.column_config.TextColumn(
                "same embedding as position", help="A repeated token reuses the first occurrence's vector"
            ),
            "code points": st.column_config.TextColumn("code points", help="The Unicode characters of the token"),
        },
    )

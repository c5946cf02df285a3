"""What every view shares: settings to core inputs (or a message), a head picker, the scaling note,
shape text, the chart config and "The code behind this".

Views import this module, never each other. Messages shown here are the
dashboard's own text or ``core``'s ``ValueError`` text, which names only numbers
(token counts, limits), never what the user typed.
"""

from __future__ import annotations

import inspect
import math
import re
import zlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from core import AttentionTrace, Run
from core.pipeline import EMBEDDED
from core.sources import MiniLMSource
from dashboard.compute import bounded_cache
from dashboard.compute.bounded_cache import MB
from dashboard.compute.source import (  # noqa: F401  (views import them from here, with the rest of what they share)
    EMPTY_SENTENCE,
    computed_by,
    input_code,
    minilm_ready,
    permutation_code,
    run_call,
    served,
    served_tokens,
    source_or_message,
    tokens_or_message,
)
from dashboard.page.exports import figure_stem, image_options
from dashboard.page.mask_words import sees_order
from dashboard.serve import streamlit_runtime
from dashboard.state.followed import Controls
from dashboard.state.session import SHOWN_SETTINGS, SHOWN_VIEW, set_values
from dashboard.state.settings import Settings

if TYPE_CHECKING:
    from dashboard.serve.streamlit_runtime import ExpanderContainer

PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": "attention", "scale": 2}}
"""Every chart's toolbar: no Plotly logo; the camera button saves a 2x PNG named "attention" (``chart_config``
names it for the view and settings, and makes it an SVG in presenter mode)."""


def chart_config(config: dict, key: str) -> dict:
    """``config`` with the camera button saving the chart as ``<view and settings>_<key>`` (``exports.figure_stem``):
    an SVG in presenter mode, a PNG elsewhere (``exports.image_options`` says why)."""
    settings, view = st.session_state.get(SHOWN_SETTINGS), st.session_state.get(SHOWN_VIEW)
    if settings is None or view is None or config.get("displayModeBar") is False:
        return config
    stem = f"{figure_stem(view, settings.config, settings.weights, settings.layer)}_{key}"
    return config | {"toImageButtonOptions": image_options(stem, settings.presenter)}


ROW_PX = 35
"""Height of one st.dataframe row: shape tables are sized to show every row without scrolling."""
CODE_LABEL = "The code behind this"


def run_or_message(settings: Settings, controls: Controls) -> Run | None:
    """The run of the settings' source at the chosen layer (one layer for random and hand-built weights), or None
    after a message."""
    source = source_or_message(settings, controls)
    return None if source is None else source.run(settings.layer)


def layer_runs_or_message(settings: Settings, controls: Controls) -> tuple[Run, ...] | None:
    """One run per layer of the settings' source, or None after showing a message."""
    source = source_or_message(settings, controls)
    return None if source is None else source.runs()


PRETRAINED_EXAMPLES = MiniLMSource.EXAMPLES
"""(sentence, layer, head, what to look for): a pattern core names the head for, or a token-to-token claim where
the head is specific; each holds on 8 or more of the 10 held-out sentences of tests/core/test_pretrained_heads.py."""


def _open_example(sentence: str, layer: int, head: int) -> None:
    """Button callback: runs before the rerun, so the bound widgets (and the URL) start from the example."""
    set_values(sentence=sentence, layer=layer, head=head)


def pretrained_examples(settings: Settings) -> None:
    """One button per example of the settings' source (MiniLM has some): each opens a sentence, layer and head
    where the model shows a named pattern."""
    examples = settings.kind.EXAMPLES
    if not examples:
        return
    st.caption("Try one: each opens a sentence, layer and head where the pretrained model shows a pattern.")
    with st.container(horizontal=True):
        for i, (sentence, layer, head, what) in enumerate(examples):
            st.button(
                what,
                key=f"example_{i}",
                on_click=_open_example,
                args=(sentence, layer, head),
                help=f"Sentence “{sentence}”, layer {layer}, head {head}.",
            )


def choose_head(
    n_heads: int, controls: Controls, *, key: str, bind: str | None, help: str, container=st, label: str = "Head"
) -> int:
    """A "Head" selector (or ``label``), 1 to ``n_heads``; returns the 0-based head (a following page's
    ``controls``: the teacher's, no selector).

    ``key`` and ``bind`` go to the widget as they are. Callers write both out
    (``bind="query-params"``), so the check that every URL-bound key is listed in
    ``settings.LINK_KEYS`` finds them at the call.
    """
    head = controls.choice(
        key,
        1,
        lambda: container.segmented_control(
            label, list(range(1, n_heads + 1)), default=1, required=True, key=key, bind=bind, help=help
        ),
    )
    return max(1, min(int(head), n_heads)) - 1


def scaled(trace: AttentionTrace) -> bool:
    """True when ``trace``'s scores were divided by √d_k (read from the scale it used, not from the settings)."""
    return math.isclose(trace.scale, 1 / math.sqrt(trace.q.shape[-1]), rel_tol=1e-12)


def unscaled_warning(run: Run, controls: Controls) -> bool:
    """Say so on the page when the run's scores were not divided by √d_k (and return True); nothing when they were.
    The way back names the sidebar's switch only where there is one: a following page has no controls."""
    tr = run.trace
    if scaled(tr):
        return False
    d_k = tr.q.shape[-1]
    back = controls.hint(" Turn “Scale scores by 1/√d_k” back on in the sidebar to compare.")
    st.warning(
        f"Scaling is off: the scores are QKᵀ × {tr.scale:.3g}, not QKᵀ ÷ √d_k = QKᵀ ÷ {math.sqrt(d_k):.3g}. "
        f"Scores √d_k times larger make each softmax row collapse toward one-hot.{back}",
        icon=":material/warning:",
    )
    return True


ADDED_WORDS = {
    "sinusoidal": "the embedding of each token plus its sinusoidal position vector P",
    "learned": "the embedding of each token plus its learned position vector P",
    "rope": "the embedding of each token; RoPE adds nothing here, it rotates Q and K in step 2",
}
"""A first layer's input (``Run.input_from == EMBEDDED``), by how the model gives positions (none: ``input_words``)."""


def _unplaced_words(run: Run) -> str:
    """A first layer's input with no position added: where order enters the run, if anywhere (a mask that hides
    some key, ALiBi's bias), read from the trace."""
    hides = run.trace.mask is not None and sees_order(run.trace.mask)  # not all True, nor each query alone
    biased = run.trace.bias is not None
    if not (hides or biased):
        return "the embedding of each token; with no positional encoding, order is invisible"
    through = " and ".join(["the mask"] * hides + ["ALiBi's bias, added to the scores"] * biased)
    return f"the embedding of each token, with no position added: order enters only through {through}"


def input_words(run: Run) -> str:
    """What the run's attention read, in words, from its provenance (never from the settings); with no position
    added, where order enters instead, read from the trace: its mask, ALiBi's bias on the scores, or nowhere."""
    if run.input_from == EMBEDDED:
        if run.positional == "none":
            return _unplaced_words(run)
        return ADDED_WORDS[run.positional]
    held = "; the positions are already inside it" if run.positional in ("sinusoidal", "learned") else ""
    return f"{run.input_from}{held}"


def shape_text(shape: tuple[int, ...]) -> str:
    """``(64, 4, 16)`` as the text "(64, 4, 16)" (a 1-tuple keeps no trailing comma)."""
    return "(" + ", ".join(map(str, shape)) + ")"


def shape_frame(rows: list[tuple[str, tuple[int, ...], str]]) -> pd.DataFrame:
    """(tensor, shape, formula) rows as the table both shape views show."""
    return pd.DataFrame([(name, shape_text(s), f) for name, s, f in rows], columns=["tensor", "shape", "formula"])


@bounded_cache.cache(max_bytes=2 * MB)
def source_of(function: Callable) -> str:
    """``inspect.getsource(function)``, read once per function: re-parsing the file for every rerun of every page
    was ~8% of a follower's redraw (bench.follower --profile). A changed file is a new module, so new functions."""
    return inspect.getsource(function)


def source_lines(function: Callable, *needles: str) -> str:
    """The lines of ``function``'s source that contain any of ``needles``, in source order, dedented.

    Steps show the one or two lines of core that perform them; reading them from the
    source (never a copy in a string) keeps the page and the code that ran the same.
    Raises ``ValueError`` when a needle matches no line, so a renamed variable fails a test.
    """
    lines = source_of(function).splitlines()
    picked = [line for line in lines if any(n in line for n in needles)]
    missing = [n for n in needles if not any(n in line for line in picked)]
    if missing:
        raise ValueError(f"{function.__qualname__} has no line containing {missing}")
    indent = min(len(line) - len(line.lstrip()) for line in picked)
    return "\n".join(line[indent:] for line in picked)


def opened(label: str, key: str, icon: str) -> ExpanderContainer | None:
    """An expander whose contents are drawn only while it is open: the container to draw them in while it is
    open, None while it is closed (draw nothing; the page sends only its label).

    Streamlit 1.67's stateful expander (``on_change="rerun"``): opening or closing it reruns the page, which keeps
    its place and its settings (a follower keeps following; a push reruns it still open), and ``.open`` says
    which. Every follower of a room reruns its page on each change the teacher makes, and the code and the
    download buttons, drawn closed, were ~17% of a follower's redraw (``python -m bench.follower --profile``).
    ``key`` must be unique on the page and the same on every run, so an open expander stays open.
    """
    box = st.expander(label, key=key, icon=icon, on_change="rerun")
    return box if box.open else None


def code_key(function: Callable, lines: str | None = None) -> str:
    """The key of ``show_code``'s expander: the function it shows (and which of its lines, for a step that shows
    a few), never the call, so a change of the settings leaves it open. Letters, digits and _ only."""
    name = re.sub(r"\W", "_", f"{function.__module__}.{function.__qualname__}")
    return f"code_{name}" if lines is None else f"code_{name}_{zlib.crc32(lines.encode()):08x}"


def show_code(function: Callable, call: str | None = None, *, lines: str | None = None) -> None:
    """An expander under a figure: the core function that computed it, and the call with this page's settings,
    drawn only while it is open (``opened``, keyed by ``code_key``).

    ``lines`` (from ``source_lines``) shows only the lines of ``function`` that perform one step.
    """
    where = f"{function.__module__}.{function.__qualname__}"
    if (box := opened(CODE_LABEL, code_key(function, lines), ":material/code:")) is None:
        return
    with box:
        if call is not None:
            st.caption("The call, with this page's settings:")
            st.code(call, language="python")
        st.caption(f"`{where}`, the code that ran:" if lines is None else f"The lines of `{where}` that do this step:")
        st.code(source_of(function) if lines is None else lines, language="python")


EQUATION_GAP = "medium"
"""Space between the parts of one equation drawn side by side: Streamlit's "medium", 2 rem, about the ``\\qquad``
that separated a formula from its shapes when they were one formula."""


def show_equation(*parts: str, gap: str | None = EQUATION_GAP) -> None:
    """One equation in ``parts`` of LaTeX (a formula, then its shapes): side by side, centred, where the page is
    wide enough, and each on its own line where it is not. KaTeX never breaks a display formula, so one wide
    formula is cut at the edge of a 390 px phone ("score = 0.25 ×" and the rest hidden); its parts wrap instead.
    ``gap=None``: the parts are one line of text cut at its spaces (each starts with its own space).
    """
    if len(parts) == 1:
        st.latex(parts[0])
        return
    with st.container(horizontal=True, horizontal_alignment="center", gap=gap):
        for part in parts:
            st.latex(part, width="content")


def session_id() -> str:
    """Streamlit's id of this browser tab's session: random, anonymous, gone with the tab."""
    return streamlit_runtime.session_id() or "no-session"


def table_height(rows: int) -> int:
    """Pixels for an ``st.dataframe`` of ``rows`` rows and its header, so every row shows without scrolling."""
    return ROW_PX * (rows + 1) + 3


MARKDOWN_MARKS = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$:=^&])")
"""Every character that can start Markdown (or a Streamlit directive: ``:red[...]``, ``$x$``) in a table cell."""


def plain_cell(value: object) -> str:
    """``value`` as Markdown that shows exactly its text: each mark backslash-escaped (CommonMark lets any ASCII
    punctuation be escaped so), ``"W_Q, W_K"`` -> ``"W\\_Q, W\\_K"``."""
    return MARKDOWN_MARKS.sub(r"\\\1", str(value))


def show_frame(
    table: pd.DataFrame,
    *,
    presenter: bool,
    formats: Mapping[str, str] | None = None,
    na: str = "",
    key: str | None = None,
    **grid,
) -> None:
    """A table of the page's own words and numbers, never a typed token, with every row visible.

    On a laptop or a phone, ``st.dataframe``'s grid (a phone swipes it sideways; ``grid``: its other arguments).
    On a projector, ``st.table``: the grid draws on a canvas at 13 px whatever the page's style sheet says,
    st.table is page text, 20 px there (``dashboard/page/presenter.py``). st.table reads its cells as Markdown, so each
    is escaped (``plain_cell``). ``formats``: a printf-style number format per column (``"%.3f"``), which the grid
    applies in the browser (a pandas Styler did the same on the server, ~6 ms per table and per student following a
    room); ``na``: the text for a missing number. ``key``: the table sits in a container of that key
    (``.st-key-<key>`` finds it in the browser).
    """
    if key is not None:
        with st.container(key=key):
            show_frame(table, presenter=presenter, formats=formats, na=na, **grid)
        return
    formats = formats or {}
    if presenter:
        shown = table.copy()
        for column, form in formats.items():
            shown[column] = [na if pd.isna(v) else form % v for v in shown[column]]
        st.table(shown.map(plain_cell).rename(columns=plain_cell), hide_index=True)
    else:
        numbers = {column: st.column_config.NumberColumn(format=form) for column, form in formats.items()}
        st.dataframe(
            table,
            hide_index=True,
            width="stretch",
            height=table_height(len(table)),
            column_config=numbers | grid.pop("column_config", {}),
            placeholder=na or None,  # the grid draws a missing value as "None" otherwise
            **grid,
        )


def byte_size(n_bytes: int) -> str:
    """A byte count in binary units, one decimal: ``1536 -> "1.5 KiB"``, ``2**30 -> "1.0 GiB"``."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= size:
            return f"{n_bytes / size:,.1f} {unit}"
    return f"{n_bytes} B"

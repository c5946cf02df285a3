"""What every view shares: settings to core inputs (or a message), a head picker, the scaling note,
shape text, the chart config and "The code behind this".

Views import this module, never each other. Messages shown here are the
dashboard's own text or ``core``'s ``ValueError`` text, which names only numbers
(token counts, limits), never what the user typed.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import replace

import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from core import LEARNED_WEIGHTS, Run
from core.pretrained import FIX_COMMAND
from dashboard import compute, training_jobs
from dashboard.settings import Settings

EMPTY_SENTENCE = "Type a sentence in the sidebar to see its attention maps."
PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": "attention", "scale": 2}}
"""Every chart's toolbar: no Plotly logo; the camera button saves a 2x PNG named "attention"."""
ROW_PX = 35
"""Height of one st.dataframe row: shape tables are sized to show every row without scrolling."""
CODE_LABEL = "The code behind this"


def random_stand_in(settings: Settings, what: str) -> Settings:
    """Settings with random weights for a view that needs to change what a learned model fixes (``what`` says so).

    The positions, cross and scaling views vary the encoding, the key sentence or the scaling; a learned
    model was trained with one choice of each, so these views keep its shape and use random weights.
    """
    if settings.config.weights not in LEARNED_WEIGHTS:
        return settings
    st.info(
        f"This view {what}, which the {settings.config.weights} model's weights fix: it uses random weights of "
        f"the same shape (d_model = {settings.config.d_model}, {settings.config.n_heads} heads) instead.",
        icon=":material/shuffle:",
    )
    return replace(settings, config=replace(settings.config, weights="random"))


def tokens_or_message(sentence: str, empty: str = EMPTY_SENTENCE) -> tuple[str, ...] | None:
    """The tokens of ``sentence``, or None after showing why there are none (``empty`` when it is blank)."""
    if not sentence.strip():
        st.info(empty)
        return None
    try:
        return compute.tokens_of(sentence)
    except ValueError as err:
        st.error(str(err))
        return None


def run_or_message(settings: Settings) -> Run | None:
    """The attention run for ``settings`` (for a learned model, its chosen layer's), or None after a message."""
    runs = layer_runs_or_message(settings)
    return None if runs is None else runs[min(settings.layer, len(runs)) - 1]


def layer_runs_or_message(settings: Settings) -> tuple[Run, ...] | None:
    """One run per layer (random and hand-built weights have one layer), or None after showing a message."""
    if settings.config.weights == "trained":  # the task's fixed example, not the sentence
        try:
            return training_jobs.trained_runs_or_message(settings.training)
        except ValueError as err:
            st.error(str(err))
            return None
    tokens = tokens_or_message(settings.sentence)
    if tokens is None:
        return None
    try:
        if settings.config.weights == "minilm":
            if not minilm_ready():
                return None
            return compute.minilm_runs(settings.sentence, settings.config.causal)
        return (compute.attention_run(tokens, settings.config),)
    except ValueError as err:
        st.error(str(err))
        return None


PRETRAINED_EXAMPLES = (
    ("The bank of the river.", 1, 3, "layer 1, head 3 looks at the previous piece"),
    ("The bank of the river.", 2, 9, "layer 2, head 9 looks at the next piece"),
    ("the cat sat on the mat because it was tired", 6, 12, "layer 6, head 12 sends “it” to “cat”"),
    ("the cat sat on the mat because it was tired", 3, 8, "layer 3, head 8 parks its weight on [CLS]"),
)
"""(sentence, layer, head, what to look for): heads the summary view's metrics name, checked in tests/core."""


def _open_example(sentence: str, layer: int, head: int) -> None:
    """Button callback: runs before the rerun, so the bound widgets (and the URL) start from the example."""
    st.session_state.update(sentence=sentence, layer=layer, head=head)


def pretrained_examples() -> None:
    """One button per example: each opens a sentence, layer and head where MiniLM shows a named pattern."""
    st.caption("Try one: each opens a sentence, layer and head where the pretrained model shows a pattern.")
    with st.container(horizontal=True):
        for i, (sentence, layer, head, what) in enumerate(PRETRAINED_EXAMPLES):
            st.button(
                what,
                key=f"example_{i}",
                on_click=_open_example,
                args=(sentence, layer, head),
                help=f"Sentence “{sentence}”, layer {layer}, head {head}.",
            )


def minilm_ready() -> bool:
    """True when the pretrained model is loaded; otherwise say why on the page, with the fix and a retry."""
    model = compute.minilm()
    if not isinstance(model, str):
        return True
    st.error(model, icon=":material/cloud_off:")
    st.caption("On this server, install the model's files with (no other packages; the rest of the app works):")
    st.code(FIX_COMMAND, language="bash")
    st.button("Try again", key="minilm_retry", on_click=compute.minilm.clear, icon=":material/refresh:")
    return False


def choose_head(n_heads: int, *, key: str, bind: str | None, help: str, container=st) -> int:
    """A "Head" selector, 1 to ``n_heads``; returns the 0-based head.

    ``key`` and ``bind`` go to the widget as they are. Callers write both out
    (``bind="query-params"``), so the check that every URL-bound key is listed in
    ``settings.LINK_KEYS`` finds them at the call.
    """
    head = container.segmented_control(
        "Head", list(range(1, n_heads + 1)), default=1, required=True, key=key, bind=bind, help=help
    )
    return int(head) - 1


def unscaled_warning(settings: Settings) -> None:
    """Say so on the page when the sidebar's scaling toggle is off; nothing when it is on."""
    if not settings.config.scaled:
        st.warning(
            f"Scaling is off: the scores are QKᵀ, not QKᵀ ÷ √d_k = QKᵀ ÷ {math.sqrt(settings.config.d_k):.3g}. "
            "Scores √d_k times larger make each softmax row collapse toward one-hot. "
            "Turn “Scale scores by 1/√d_k” back on in the sidebar to compare.",
            icon=":material/warning:",
        )


def shape_text(shape: tuple[int, ...]) -> str:
    """``(64, 4, 16)`` as the text "(64, 4, 16)" (a 1-tuple keeps no trailing comma)."""
    return "(" + ", ".join(map(str, shape)) + ")"


def shape_frame(rows: list[tuple[str, tuple[int, ...], str]]) -> pd.DataFrame:
    """(tensor, shape, formula) rows as the table both shape views show."""
    return pd.DataFrame([(name, shape_text(s), f) for name, s, f in rows], columns=["tensor", "shape", "formula"])


def run_call(settings: Settings, source: tuple[str, ...] | None = None) -> str:
    """The lines that computed this page's trace, with its settings (the sentence as a Python literal)."""
    c = settings.config
    if c.weights == "minilm":  # bert_forward runs multi_head_attention once per layer
        return (
            f"runs = layer_runs(load_minilm(), {settings.sentence!r}, causal={c.causal})  # one Run per layer\n"
            f"result = runs[{settings.layer - 1}]  # layer {settings.layer}"
        )
    if c.weights == "trained":  # the model's forward runs multi_head_attention once per layer
        return (
            f"trained = train({settings.training!r})  # pre-trained file for a task's recommendation\n"
            f"result = runs_of(trained, trained.fixed_example.inputs[0])[{settings.layer - 1}]"
        )
    source_arg = "" if source is None else f", source={source!r}"
    return f"result = run(tokenize({settings.sentence!r}), {c!r}{source_arg})"


def source_lines(function: Callable, *needles: str) -> str:
    """The lines of ``function``'s source that contain any of ``needles``, in source order, dedented.

    Steps show the one or two lines of core that perform them; reading them from the
    source (never a copy in a string) keeps the page and the code that ran the same.
    Raises ``ValueError`` when a needle matches no line, so a renamed variable fails a test.
    """
    lines = inspect.getsource(function).splitlines()
    picked = [line for line in lines if any(n in line for n in needles)]
    missing = [n for n in needles if not any(n in line for line in picked)]
    if missing:
        raise ValueError(f"{function.__qualname__} has no line containing {missing}")
    indent = min(len(line) - len(line.lstrip()) for line in picked)
    return "\n".join(line[indent:] for line in picked)


def show_code(function: Callable, call: str | None = None, *, lines: str | None = None) -> None:
    """An expander under a figure: the core function that computed it, and the call with this page's settings.

    ``lines`` (from ``source_lines``) shows only the lines of ``function`` that perform one step.
    """
    where = f"{function.__module__}.{function.__qualname__}"
    with st.expander(CODE_LABEL, icon=":material/code:"):
        if call is not None:
            st.caption("The call, with this page's settings:")
            st.code(call, language="python")
        st.caption(f"`{where}`, the code that ran:" if lines is None else f"The lines of `{where}` that do this step:")
        st.code(inspect.getsource(function) if lines is None else lines, language="python")


def session_id() -> str:
    """Streamlit's id of this browser tab's session: random, anonymous, gone with the tab."""
    ctx = get_script_run_ctx()
    return "no-session" if ctx is None else ctx.session_id


def table_height(rows: int) -> int:
    """Pixels for an ``st.dataframe`` of ``rows`` rows and its header, so every row shows without scrolling."""
    return ROW_PX * (rows + 1) + 3

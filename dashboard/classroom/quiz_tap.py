"""Predict by tapping a word: "In head h, which word does 'X' look at most?", every token of the sentence a choice.

Pure: a ``core.Run`` in, ``Question`` (``dashboard.classroom.quiz``) out; no Streamlit. The choices are the
sentence's keys in reading order (``"i·token"``, as the map's axes), so a phone shows them as a row of words to tap.
The answer is the argmax of the real row, asked only where it beats the runner-up by ``quiz.CLEAR_MARGIN`` and the
row may look at ``quiz.MIN_KEYS`` keys or more (one right answer, visibly so).

Asked only where a student can reason the answer out (``asks_taps``): learned weights (MiniLM, trained) and the
hand-built ``identity`` and ``previous`` weights. On random weights the quiz keeps the mechanics questions.
"""

from __future__ import annotations

import numpy as np

from core import Run
from dashboard.classroom.quiz import CLEAR_MARGIN, MIN_KEYS, Question, axis_label, head_where, seeded_order
from dashboard.figures.labels import position

KIND = "tap"
HAND_BUILT = ("identity", "previous")
"""Hand-built weights whose rows a student can predict from how they were built."""


def asks_taps(weights: str, learned: bool) -> bool:
    """Whether the quiz asks a tap question on these weights (the weights control's value)."""
    return learned or weights in HAND_BUILT


def tap_question(run: Run, *, layered: bool = False, context: str = "") -> Question | None:
    """The first (head, row) in an order seeded by ``context`` whose largest weight is a clear answer; None if none
    is. ``run.trace.weights (h, T_q, T_k)``. Where the run knows its words (``run.word_ids``: MiniLM), the answer
    is a word's piece, never ``[CLS]`` or ``[SEP]``: a row that parks its weight there (most of MiniLM's) is right
    but cannot be reasoned out from the sentence."""
    weights = np.asarray(run.trace.weights, dtype=np.float64)  # (h, T_q, T_k)
    h, t_q, t_k = weights.shape
    mask = run.trace.mask
    candidates = [(k, q) for k in range(h) for q in range(t_q)]
    for i in seeded_order(len(candidates), f"{context}|{KIND}"):
        head, row = candidates[int(i)]
        w = weights[head, row]  # (T_k,)
        allowed = np.ones(t_k, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)[row]
        if allowed.sum() < MIN_KEYS:
            continue
        order = np.argsort(-w, kind="stable")  # every key, most weight first
        best, second = int(order[0]), int(order[1])
        if w[best] - w[second] < CLEAR_MARGIN or (run.word_ids is not None and run.word_ids[best] is None):
            continue
        where = head_where(run.layer, head, layered)
        word = run.tokens[row]
        return Question(
            kind=KIND,
            text=f"In {where}, which word does “{word}” ({axis_label(run.tokens, row)}) look at most?",
            choices=tuple(axis_label(run.tokens, j) for j in range(t_k)),
            answer=best,
            explanation=(
                f"Row {position(row)} of {where} puts {w[best]:.2f} of its weight on {axis_label(run.tokens, best)}, "
                f"the largest in the row; the next is {axis_label(run.tokens, second)} with {w[second]:.2f}."
            ),
            layer=run.layer,
            head=head,
            options=tuple(range(t_k)),
            values=tuple(float(x) for x in w),
            row=row,
            context=context,
        )
    return None

"""Predict, then reveal: questions with one right answer, computed from the run's own numbers.

Pure: weights, mask and tokens in, ``Question`` out; no Streamlit, so every answer is testable
without a server. Two kinds of question, both about one layer's heads ``weights (h, T, T)``:

- ``word``: "In head k, which token does row q attend to most?" The answer is the argmax of
  ``weights[k, q]``, asked only when it beats the runner-up by ``CLEAR_MARGIN`` (one right answer,
  visibly so on the map) and the row may look at ``MIN_KEYS`` keys or more.
- ``pattern``: "Which head is the previous-token head?" The answer is the head that
  ``core.name_patterns`` names with that pattern (``core.PATTERNS``: one metric of
  ``core.head_summary`` and one threshold each), asked only when exactly one head of the layer has it.

These are the questions for learned weights (a pattern there was learned); on weights nobody trained the quiz asks
what the mechanics decide instead (``dashboard.classroom.quiz_mechanics``, whose ``questions_for`` chooses).

Nothing is hard-coded: a question exists only where this run's numbers give it a unique answer.
``question_id`` names a question stably (same settings and question, same id, in any process), so a
room can count the class's guesses per question; the id does not reveal the answer.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core import PATTERNS, head_summary, name_patterns
from core.head_summary import NAMED_SHARE
from dashboard.figures.labels import position

CLEAR_MARGIN = 0.1
"""The right key outweighs the runner-up by at least a tenth of the 0-1 colour scale: a different colour
on the revealed map, so the answer is one key, not a near tie decided in the third decimal."""
MIN_KEYS = 3
"""A row that may look at only one or two keys (the causal mask's first rows) is no question."""
MAX_CHOICES = 6
"""Longer rows offer the six keys with the most weight, in sentence order: the argmax is always among them."""
MAX_WORD_QUESTIONS = 24
"""Enough to keep a class busy; a 64-token MiniLM layer would otherwise offer hundreds."""
METRIC_WORDS = {
    "previous_weight": "on the token just before it",
    "next_weight": "on the token just after it",
    "first_weight": "on the first token",
    "self_weight": "on its own position",
    "same_word_weight": "on the other pieces of its own word",
}
"""Each pattern metric of core.head_summary in words, for the question and its explanation."""


@dataclass(frozen=True)
class Question:
    """One question about one layer of one run, with its one right answer and why."""

    kind: str
    """``"word"`` (which key does a row attend to most), ``"pattern"`` (which head has a named pattern), or one of
    ``quiz_mechanics.KINDS`` (what the mechanics decide, on weights nobody trained)."""
    text: str
    """The question, plain text (it may quote a token: show it as text, never as Markdown)."""
    choices: tuple[str, ...]
    """What the student picks from: ``"i·token"`` keys (as the map's axis labels) or ``"head k"``."""
    answer: int
    """Index into ``choices`` of the right answer."""
    explanation: str
    """Why, from the numbers: the answer's weight or metric, the threshold, the runner-up."""
    layer: int
    """1-based layer the question is about."""
    head: int
    """0-based head whose map the reveal shows (the answer's head for a pattern question)."""
    options: tuple[int, ...]
    """What each choice stands for: a key position (word) or a 0-based head (pattern)."""
    values: tuple[float, ...]
    """The number behind each choice: the row's weight on that key, or the head's pattern metric."""
    row: int | None = None
    """Word questions: the query position asked about."""
    pattern: str | None = None
    """Pattern questions: the pattern's name in ``core.PATTERNS``."""
    threshold: float | None = None
    """Pattern questions: core's threshold for the pattern."""
    context: str = ""
    """What the question was computed from (the page's settings), so equal questions on other settings differ."""


def question_id(question: Question) -> str:
    """A short stable id: a SHA-256 of the question and its settings, not of the answer (a hash of four
    choices' answers could be tried one by one). Python's ``hash()`` is salted per process: not used."""
    what = [question.context, question.kind, question.text, list(question.choices), question.layer, question.head]
    return hashlib.sha256(json.dumps(what, ensure_ascii=True).encode()).hexdigest()[:16]


def head_where(layer: int, head: int, layered: bool) -> str:
    """``"head 2"``, or ``"layer 6, head 12"`` for a model with layers."""
    return f"layer {layer}, head {head + 1}" if layered else f"head {head + 1}"


def axis_label(tokens: Sequence[str], i: int) -> str:
    """A key as the map's axis shows it: ``"4·river"`` (its position by ``labels.position``, the axes' own)."""
    return f"{position(i)}·{tokens[i]}"


def word_question(
    weights: np.ndarray,
    allowed: np.ndarray | None,
    tokens: Sequence[str],
    head: int,
    row: int,
    *,
    layer: int = 1,
    layered: bool = False,
    context: str = "",
) -> Question | None:
    """Which key does ``row`` attend to most in ``head``? ``weights (h, T, T)``, ``allowed (T, T)`` or None.

    None when the question has no one clear answer: fewer than ``MIN_KEYS`` allowed keys, or the largest
    weight less than ``CLEAR_MARGIN`` above the next.
    """
    w = np.asarray(weights[head, row], dtype=np.float64)  # (T,) this row's weights
    keys = np.flatnonzero(np.ones_like(w, dtype=bool) if allowed is None else allowed[row])  # (n,) allowed keys
    if len(keys) < MIN_KEYS:
        return None
    order = keys[np.argsort(-w[keys], kind="stable")]  # allowed keys, most weight first
    best, second = int(order[0]), int(order[1])
    if w[best] - w[second] < CLEAR_MARGIN:
        return None
    shown = sorted(int(k) for k in order[:MAX_CHOICES])  # sentence order: the order gives nothing away
    where = head_where(layer, head, layered)
    query = axis_label(tokens, row)
    return Question(
        kind="word",
        text=f"In {where}, which token does {query} (the query in row {position(row)}) attend to most?",
        choices=tuple(axis_label(tokens, k) for k in shown),
        answer=shown.index(best),
        explanation=(
            f"Row {position(row)} of {where} puts {w[best]:.2f} of its weight on {axis_label(tokens, best)}, the "
            f"largest in the row; the next is {axis_label(tokens, second)} with {w[second]:.2f}. The row sums to 1."
        ),
        layer=layer,
        head=head,
        options=tuple(shown),
        values=tuple(float(w[k]) for k in shown),
        row=row,
        context=context,
    )


def pattern_questions(
    weights: np.ndarray,
    allowed: np.ndarray | None,
    word_ids: Sequence[int | None] | None = None,
    *,
    layer: int = 1,
    layered: bool = False,
    context: str = "",
) -> list[Question]:
    """One question per pattern of ``core.PATTERNS`` that exactly one head of ``weights (h, T, T)`` has."""
    h = weights.shape[0]
    if h < 2:
        return []
    summary = head_summary(weights, allowed, word_ids)
    names = name_patterns(summary)  # (h,) tuples: core's thresholds decide, not this module
    where = f"layer {layer}" if layered else "this layer"
    out = []
    for p in PATTERNS:
        having = [k for k in range(h) if p.name in names[k]]
        if len(having) != 1:
            continue
        [best] = having
        values = np.asarray(summary.shares[p.metric], dtype=np.float64)  # (h,): each head's share of rows
        others = [k for k in range(h) if k != best and np.isfinite(values[k])]
        runner = max(others, key=lambda k: values[k]) if others else None
        words = METRIC_WORDS.get(p.metric, p.metric)
        rows = f"more than {p.threshold:g} of their weight {words}"
        then = f" The next is head {runner + 1}, in {values[runner]:.0%} of its rows." if runner is not None else ""
        out.append(
            Question(
                kind="pattern",
                text=f"Which head of {where} is the {p.name} head? In more than {NAMED_SHARE:.0%} of its rows, "
                f"a query puts more than {p.threshold:g} of its weight {words}.",
                choices=tuple(f"head {k + 1}" for k in range(h)),
                answer=best,
                explanation=(
                    f"Head {best + 1}: {values[best]:.0%} of its rows put {rows} (shares in core.head_summary); "
                    f"core names a head {p.name} when more than {NAMED_SHARE:.0%} of its rows do, and no other head "
                    f"of {where} does.{then}"
                ),
                layer=layer,
                head=best,
                options=tuple(range(h)),
                values=tuple(float(v) for v in values),
                pattern=p.name,
                threshold=NAMED_SHARE,
                context=context,
            )
        )
    return out


def seeded_order(n: int, context: str) -> np.ndarray:
    """A shuffle of ``range(n)`` seeded by ``context``: the same order for everyone on the same settings."""
    seed = int.from_bytes(hashlib.sha256(context.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).permutation(n)


def questions(
    weights: np.ndarray,
    allowed: np.ndarray | None,
    tokens: Sequence[str],
    word_ids: Sequence[int | None] | None = None,
    *,
    layer: int = 1,
    layered: bool = False,
    context: str = "",
) -> list[Question]:
    """Every question this layer's ``weights (h, T, T)`` answer uniquely: pattern questions first, then
    up to ``MAX_WORD_QUESTIONS`` word questions in an order seeded by ``context``; answers on a word before
    answers on [CLS] or [SEP] (``word_ids`` None), which are right but say less."""
    where = dict(layer=layer, layered=layered, context=context)
    asked = pattern_questions(weights, allowed, word_ids, **where)
    h, t = weights.shape[0], weights.shape[-1]
    candidates = [(k, q) for k in range(h) for q in range(t)]
    words = []
    for i in seeded_order(len(candidates), context):
        k, q = candidates[i]
        if (found := word_question(weights, allowed, tokens, k, q, **where)) is not None:
            words.append(found)
    if word_ids is not None:
        words.sort(key=lambda w: word_ids[w.options[w.answer]] is None)  # stable: the shuffle stays within
    return asked + words[:MAX_WORD_QUESTIONS]


def verdict(question: Question, pick: int) -> str:
    """One line for the student's pick (an index into ``choices``), with the numbers of both (a mechanics question,
    ``dashboard.classroom.quiz_mechanics``: the two choices; its explanation has the numbers)."""
    if question.kind not in ("word", "pattern", "tap"):
        if pick == question.answer:
            return f"Right: {question.choices[pick]}."
        mine, right = question.choices[pick], question.choices[question.answer]
        return f"Not this time: your pick was “{mine}”; the run gives “{right}”."
    mine, right = question.values[pick], question.values[question.answer]
    if question.kind in ("word", "tap"):
        mine_text, right_text = f"{mine:.2f}", f"{right:.2f} weight"
    else:  # a pattern question's values are shares of rows
        mine_text, right_text = f"{mine:.0%} of its rows", f"{right:.0%} of its rows"
    if pick == question.answer:
        return f"Right: {question.choices[pick]} ({right_text})."
    return (
        f"Not this time: your pick, {question.choices[pick]}, has {mine_text}; "
        f"the answer, {question.choices[question.answer]}, has {right_text.removesuffix(' weight')}."
    )

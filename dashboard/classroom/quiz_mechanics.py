"""Quiz questions the mechanics answer: for weights nobody trained (random or hand-built), where "which key does this
query look at most?" is chance a student cannot reason out.

Pure: a ``core.Run`` in, ``Question`` out (the type of ``dashboard.classroom.quiz``); no Streamlit. Five kinds, one
question each, in the order a lesson meets them:

- ``zero``: which cells of a head's map are exactly 0 (the mask's, read from the weights: ``== 0``);
- ``row-sum``: what one row of weights adds up to (the row's own sum);
- ``d_k``: how many numbers each head's queries have (``trace.q.shape[-1]``);
- ``reorder``: the map of the same tokens reversed (recomputed from the run's own input and projections), moved
  back to the original order: equal to rounding, or not;
- ``width``: two unscaled maps from the run's queries and keys, a sixteenth of their numbers and all of them: which
  has the larger largest weight, on average over rows.

Every answer is computed from the run's arrays, never from the settings, and the choices partition what the run
can show (distinct sets of cells, distinct numbers, or "A larger / B larger / about the same"), so exactly one is
right. ``questions_for(run, learned=...)`` is what the quiz asks about a run: these on weights nobody trained,
``quiz.questions`` (named patterns, the key a row looks at most) on learned ones.
"""

from __future__ import annotations

import numpy as np

from core import Run
from core.attention import masked_softmax
from core.multihead import multi_head_attention
from core.pipeline import realign
from dashboard.classroom.quiz import Question, axis_label, questions, seeded_order
from dashboard.classroom.quiz_tap import tap_question
from dashboard.figures.labels import position
from dashboard.page.mask_words import sees_order

KINDS = ("zero", "row-sum", "d_k", "reorder", "width")
"""The mechanics questions' kinds, in the order they are asked."""
SUM_TOLERANCE = 1e-4
"""A row's sum matches a choice within this (float32 sums of 64 weights are off by about 1e-6)."""
ROUNDING = 1e-6
"""Two maps are "equal to rounding" when no weight differs by more than this (float64 runs differ by ~1e-15)."""
NARROW = 16
"""Map A of the width question keeps 1/16 of the numbers (4 of 64): on 8 tokens a quarter was too close to call."""
ABOUT_THE_SAME = 0.05
"""Two mean largest weights within this are "about the same": a twentieth of the 0-1 colour scale."""


def _pick(n: int, context: str, salt: str) -> int:
    """One of ``range(n)`` chosen by the settings (``context``): the same for everyone, different per question."""
    return int(seeded_order(n, f"{context}|{salt}")[0])


# -- which cells are exactly 0 ----------------------------------------------------------------------------------------
def _regions(t_q: int, t_k: int, mask: np.ndarray | None) -> list[tuple[str, np.ndarray]]:
    """Candidate sets of cells ``(T_q, T_k)`` bool, each with its words; distinct sets only, in a fixed order."""
    i, j = np.indices((t_q, t_k))  # (T_q, T_k) query and key position of each cell
    candidates = [
        ("above the diagonal: a key after its query", j > i),
        ("below the diagonal: a key before its query", j < i),
        ("the diagonal: each query's own key", j == i),
    ]
    if mask is not None:
        candidates.append(("the cells the mask hides, only those", ~np.asarray(mask, dtype=bool)))
    candidates.append(("none: every weight is above 0", np.zeros((t_q, t_k), dtype=bool)))
    out: list[tuple[str, np.ndarray]] = []
    for words, cells in candidates:
        if not any(np.array_equal(cells, seen) for _, seen in out):
            out.append((words, cells))
    return out


def zero_question(run: Run, *, context: str = "") -> Question | None:
    """Which cells of one head's map are exactly 0? None when the zeros are none of the candidate sets (a weight
    that underflowed to 0 outside the mask: no rule a student could know decides it)."""
    weights = run.trace.weights  # (h, T_q, T_k)
    h, t_q, t_k = weights.shape
    if t_q * t_k < 2:
        return None
    head = _pick(h, context, "zero")
    zeros = weights[head] == 0  # (T_q, T_k): the cells the run put exactly 0 in
    regions = _regions(t_q, t_k, run.trace.mask)
    found = [n for n, (_, cells) in enumerate(regions) if np.array_equal(cells, zeros)]
    if len(found) != 1:
        return None
    [answer] = found
    where = f"head {head + 1}"
    allowed = weights[head][~zeros]  # the weights above 0
    smallest = f"; the smallest weight above 0 is {allowed.min():.2g}" if allowed.size else ""
    if zeros.any():
        why = (
            f"In {where}, {int(zeros.sum())} weights are exactly 0 ({regions[answer][0]}): the mask sets those "
            f"scores to -inf before the softmax, and exp(-inf) = 0{smallest}."
        )
    else:
        why = f"No weight of {where} is exactly 0: exp of a finite score is above 0{smallest}."
    return Question(
        kind="zero",
        text=f"In {where}, which cells of the {t_q}×{t_k} map hold a weight of exactly 0?",
        choices=tuple(words for words, _ in regions),
        answer=answer,
        explanation=why,
        layer=run.layer,
        head=head,
        options=tuple(range(len(regions))),
        values=tuple(float(cells.sum()) for _, cells in regions),  # cells in each candidate set
        context=context,
    )


# -- what a row sums to -----------------------------------------------------------------------------------------------
def row_sum_question(run: Run, *, context: str = "") -> Question | None:
    """What do the weights of one row add up to? Choices: 0, 1, the keys the row may see, all the keys (distinct
    numbers); the answer is the one the row's sum matches."""
    weights = run.trace.weights  # (h, T_q, T_k)
    h, t_q, t_k = weights.shape
    mask = np.ones((t_q, t_k), dtype=bool) if run.trace.mask is None else np.asarray(run.trace.mask, dtype=bool)
    seen = mask.sum(axis=-1)  # (T_q,) keys each query may see
    rows = [q for q in range(t_q) if seen[q] not in (0, 1, t_k)] or list(range(t_q))  # a row with a distinct count
    row = rows[_pick(len(rows), context, "row-sum")]
    head = _pick(h, context, "row-sum head")
    total = float(np.sum(weights[head, row], dtype=np.float64))  # the row's own sum
    candidates = [
        (0.0, "0"),
        (1.0, "1"),
        (float(seen[row]), f"{int(seen[row])} (the keys it may see)"),
        (float(t_k), f"{t_k} (all the keys)"),
    ]
    values, choices = [], []
    for value, words in candidates:
        if value not in values:
            values.append(value)
            choices.append(words)
    found = [n for n, v in enumerate(values) if abs(total - v) <= SUM_TOLERANCE]
    if len(found) != 1:
        return None
    [answer] = found
    where = f"head {head + 1}"
    query = axis_label(run.tokens, row)
    why = (
        f"Row {position(row)} of {where} adds up to {total:.6f}: softmax divides each exp(score) by the sum of the "
        f"row's exps, so the {int(seen[row])} weights it may give share exactly 1"
        if values[answer] == 1
        else f"Row {position(row)} of {where} adds up to {total:.6f}"
    )
    return Question(
        kind="row-sum",
        text=f"In {where}, what do the {t_k} weights of row {position(row)} (the query {query}) add up to?",
        choices=tuple(choices),
        answer=answer,
        explanation=why + ".",
        layer=run.layer,
        head=head,
        options=tuple(range(len(choices))),
        values=tuple(values),
        row=row,
        context=context,
    )


# -- what d_k is ------------------------------------------------------------------------------------------------------
def d_k_question(run: Run, *, context: str = "") -> Question:
    """How many numbers does each head's query have? Read from the run: ``q (h, T, d_k)``, ``x (T, d_model)``."""
    h, t, d_k = run.trace.q.shape[-3:]
    d_model = run.x.shape[-1]
    candidates = [d_k, d_model, h, d_model * h, t]  # the answer, then what it is mistaken for
    values = sorted(dict.fromkeys(candidates))  # distinct, in increasing order: the order gives nothing away
    heads = f"{h} head{'s' * (h != 1)}"
    scale = run.trace.scale
    divide = (
        f"; the scores are multiplied by {scale:.4g} = 1/√{d_k}"
        if np.isclose(scale, 1 / np.sqrt(d_k))
        else f"; this run multiplies the scores by {scale:g}, not by 1/√{d_k}"
    )
    return Question(
        kind="d_k",
        text=f"This run has d_model = {d_model} and {heads}. How many numbers are in each head's query vector (d_k)?",
        choices=tuple(str(v) for v in values),
        answer=values.index(d_k),
        explanation=f"q has shape {tuple(run.trace.q.shape)} = (h, T, d_k): each head works on d_k = d_model / h = "
        f"{d_model} / {h} = {d_k} columns of Q{divide}.",
        layer=run.layer,
        head=0,
        options=tuple(values),
        values=tuple(float(v) for v in values),
        context=context,
    )


# -- the words reordered ----------------------------------------------------------------------------------------------
def reordering(tokens: tuple[str, ...]) -> np.ndarray | None:
    """``(T,)`` the reversal of the tokens, or a rotation by one if reversing changes nothing; None if neither does."""
    t = len(tokens)
    for perm in (np.arange(t)[::-1], np.roll(np.arange(t), -1)):
        if [tokens[p] for p in perm] != list(tokens):
            return perm
    return None


def reordered_weights(run: Run, perm: np.ndarray) -> np.ndarray:
    """``(h, T, T)`` the run's attention on its tokens reordered by ``perm``: the same embeddings in the new order,
    the same position table, mask, scale, bias and projections (as ``core.run`` would compute for the reordered
    sentence)."""
    trace = run.trace
    rope = trace.q_unrotated is not None
    t = len(run.tokens)
    positions = np.arange(run.start, run.start + t) if rope else None
    return multi_head_attention(
        run.x[perm] + run.positions,  # (T, d_model): the words move, the positions stay where they are
        run.projections,
        trace.n_heads,
        mask=trace.mask,
        scale=trace.scale,
        bias=trace.bias,
        q_positions=positions,
        k_positions=positions,
    ).weights


def _input_words(run: Run) -> str:
    """What the run gives attention about order, from its arrays: positions, a mask, a bias."""
    parts = []
    if run.positional == "rope":
        parts.append("RoPE (q and k rotated by position)")
    elif np.any(run.positions):
        parts.append("a position table added to x")
    else:
        parts.append("no positions")
    parts.append("no mask" if run.trace.mask is None else "a mask")
    if run.trace.bias is not None:
        parts.append("ALiBi's bias")
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


def reorder_question(run: Run, *, context: str = "") -> Question | None:
    """Reverse the tokens and recompute: is the map the same, moved with its words? None when no reordering
    changes the sentence, or when the map also stays the same cell for cell (two choices would be right)."""
    if run.projections is None or run.source_tokens is not None:
        return None
    perm = reordering(run.tokens)
    if perm is None:
        return None
    weights = run.trace.weights  # (h, T, T)
    permuted = reordered_weights(run, perm)  # (h, T, T) in the reordered sentence's own order
    moved_back = float(np.max(np.abs(weights - realign(permuted, perm))))
    in_place = float(np.max(np.abs(weights - permuted)))
    if in_place <= ROUNDING:
        return None
    answer = 0 if moved_back <= ROUNDING else 2
    how = "reversed" if np.array_equal(perm, np.arange(len(perm))[::-1]) else "rotated by one"
    pairs = (("ALiBi's bias", run.trace.bias), ("the mask", run.trace.mask))
    seers = [name for name, p in pairs if p is not None and sees_order(p)]  # what reads positions, and kept them
    if answer == 0 and seers:
        why = (
            f"Moved back to the original order, the reordered map differs by at most {moved_back:.1e} (rounding), "
            f"yet this run sees relative order: {' and '.join(seers)} read{'s' * (len(seers) == 1)} only the distance "
            "|i − j| between two words, and this reordering keeps every distance. A shuffle would change the map."
        )
    elif answer == 0:
        why = (
            f"Moved back to the original order, the reordered map differs by at most {moved_back:.1e} (rounding): "
            "each weight depends only on its two words, so it moves with them. Attention alone sees a bag of words."
        )
    else:
        why = (
            f"Moved back to the original order, the reordered map differs by up to {moved_back:.2f}: this run has "
            f"{_input_words(run)}, so a weight depends on where its words are, not only on which words they are."
        )
    return Question(
        kind="reorder",
        text=f"This run has {_input_words(run)}. Put its {len(perm)} tokens in another order ({how}: "
        f"{' '.join(run.tokens[p] for p in perm)}) and compute the map again with the same weights. What happens "
        "to the map?",
        choices=(
            "the same weights, moved with their words",
            "the same map, cell for cell, nothing moved",
            "some weights change, even moved back",
        ),
        answer=answer,
        explanation=why,
        layer=run.layer,
        head=0,
        options=(0, 1, 2),
        values=(moved_back, in_place, moved_back),  # the largest difference each claim is about
        context=context,
    )


# -- d_k grows without scaling ----------------------------------------------------------------------------------------
def width_maps(run: Run) -> tuple[int, int, np.ndarray, np.ndarray]:
    """(narrow width, full width, map A (T_q, T_k), map B (T_q, T_k)): softmax of raw ``q·k`` (no ÷√d_k, no bias;
    the run's mask) over the first ``1/NARROW`` of the run's query and key numbers, and over all of them."""
    q = np.concatenate(list(run.trace.q), axis=-1)  # (h, T_q, d_k) -> (T_q, h * d_k): every head's query numbers
    k = np.concatenate(list(run.trace.keys_per_head), axis=-1)  # (h, T_k, d_k) -> (T_k, h * d_k)
    wide = q.shape[-1]
    narrow = max(1, wide // NARROW)
    maps = [masked_softmax(q[:, :n] @ k[:, :n].T, run.trace.mask) for n in (narrow, wide)]  # (T_q, T_k) each
    return narrow, wide, maps[0], maps[1]


def width_question(run: Run, *, context: str = "") -> Question | None:
    """Two unscaled maps, of a sixteenth of the numbers and of all of them: which has the larger largest weight?"""
    if run.trace.weights.shape[-1] < 2:
        return None
    narrow, wide, a, b = width_maps(run)
    peak_a, peak_b = float(a.max(axis=-1).mean()), float(b.max(axis=-1).mean())  # mean over rows of the largest
    larger = 0 if peak_a > peak_b else 1  # map A or map B
    answer = 2 if abs(peak_a - peak_b) <= ABOUT_THE_SAME else larger
    return Question(
        kind="width",
        text=f"Take this run's queries and keys ({wide} numbers each, all heads side by side). Map A uses only their "
        f"first {narrow} numbers (d_k = {narrow}), map B all {wide} (d_k = {wide}); neither divides the scores by "
        "√d_k. On average over the rows, which map has the larger largest weight?",
        choices=(
            f"map A (d_k = {narrow})",
            f"map B (d_k = {wide})",
            f"about the same (±{ABOUT_THE_SAME:g})",
        ),
        answer=answer,
        explanation=(
            f"The largest weight of a row is {peak_a:.3f} on average in map A and {peak_b:.3f} in map B. A score "
            f"q·k is a sum of d_k products, so without ÷√d_k it spreads wider as d_k grows (√{wide}/√{narrow} = "
            f"{np.sqrt(wide / narrow):.1f} times for numbers of one size), and softmax of wider scores is closer to "
            "one-hot."
        ),
        layer=run.layer,
        head=0,
        options=(0, 1, 2),
        values=(peak_a, peak_b, abs(peak_a - peak_b)),
        context=context,
    )


def mechanics_questions(run: Run, *, context: str = "") -> list[Question]:
    """Every mechanics question this run answers, in ``KINDS`` order (a kind is left out where it has no answer)."""
    made = (
        zero_question(run, context=context),
        row_sum_question(run, context=context),
        d_k_question(run, context=context),
        reorder_question(run, context=context),
        width_question(run, context=context),
    )
    return [q for q in made if q is not None]


def questions_for(
    run: Run, *, learned: bool, layered: bool = False, context: str = "", tap: bool = False
) -> list[Question]:
    """What the quiz asks about ``run``: on learned weights, ``quiz.questions`` (which head has a named pattern, by
    core's per-row evidence, and where a row looks most); on weights nobody trained, what the mechanics decide.
    With ``tap`` (``quiz_tap.asks_taps``: learned or hand-built weights), the tap question last, where it has one."""
    if not learned:
        asked = mechanics_questions(run, context=context)
    else:
        trace = run.trace
        asked = questions(
            trace.weights, trace.mask, run.tokens, run.word_ids, layer=run.layer, layered=layered, context=context
        )
    tapped = tap_question(run, layered=layered, context=context) if tap else None
    return asked + ([tapped] if tapped is not None else [])

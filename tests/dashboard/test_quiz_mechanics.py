"""The quiz on weights nobody trained: every mechanics question has exactly one true choice, checked here by
computing each choice's claim independently of dashboard.classroom.quiz_mechanics, over many settings."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import AttentionConfig, permutation_experiment, run, tokenize
from core.sources import MiniLMSource, TrainedSource
from dashboard.classroom import quiz_mechanics
from dashboard.classroom.quiz import question_id, questions, verdict
from dashboard.classroom.quiz_mechanics import (
    ABOUT_THE_SAME,
    KINDS,
    NARROW,
    mechanics_questions,
    questions_for,
    reordering,
)
from dashboard.state.settings import DEFAULT_CONFIG
from tests.conftest import require_minilm
from tests.dashboard.conftest import keyed_figures, make_app, no_exception

SENTENCES = (
    "The bank of the river gave a loan",
    "dog bites man",
    "the the the",
    "a b",
    "the robot opens the door and the robot closes it again",
)


@st.composite
def configs(draw) -> AttentionConfig:
    """Random and hand-built settings the sidebar can reach, variants included."""
    weights = draw(st.sampled_from(("random", "identity", "previous")))
    d_model = draw(st.sampled_from((8, 16, 64, 256)))
    positional = draw(st.sampled_from(("none", "sinusoidal", "learned", "rope")))
    heads = [h for h in (1, 2, 4, 8) if d_model % h == 0 and (positional != "rope" or (d_model // h) % 2 == 0)]
    if weights == "previous":
        heads = [h for h in heads if d_model // h >= 4]
    causal = draw(st.booleans())
    return AttentionConfig(
        d_model=d_model,
        n_heads=draw(st.sampled_from(heads)),
        causal=causal,
        positional=positional,
        seed=draw(st.integers(0, 99_999)),
        scaled=draw(st.booleans()),
        weights=weights,
        window=draw(st.sampled_from((0, 0, 2, 3))),
        prefix=draw(st.sampled_from((0, 2))) if causal else 0,
        alibi=draw(st.booleans()) if weights == "random" else False,
    )


# -- each claim, computed here ----------------------------------------------------------------------------------------
def _zero_claims(q, r) -> list[bool]:
    """For each choice of a zero question: is the set of cells it names the set of exact zeros?"""
    w = r.trace.weights[q.head]  # (T_q, T_k)
    t_q, t_k = w.shape
    zeros = {(i, j) for i in range(t_q) for j in range(t_k) if w[i, j] == 0.0}
    mask = r.trace.mask
    named = {
        "above the diagonal: a key after its query": {(i, j) for i in range(t_q) for j in range(t_k) if j > i},
        "below the diagonal: a key before its query": {(i, j) for i in range(t_q) for j in range(t_k) if j < i},
        "the diagonal: each query's own key": {(i, i) for i in range(min(t_q, t_k))},
        "the cells the mask hides, only those": set()
        if mask is None
        else {(i, j) for i in range(t_q) for j in range(t_k) if not mask[i, j]},
        "none: every weight is above 0": set(),
    }
    return [named[c] == zeros for c in q.choices]


def _row_sum_claims(q, r) -> list[bool]:
    total = math.fsum(float(v) for v in r.trace.weights[q.head, q.row])
    return [abs(total - float(c.split()[0])) <= 1e-4 for c in q.choices]


def _d_k_claims(q, r, config: AttentionConfig) -> list[bool]:
    return [int(c) == config.d_model // config.n_heads for c in q.choices]


def _reorder_claims(q, r, config: AttentionConfig) -> list[bool]:
    perm = reordering(r.tokens)
    result = permutation_experiment(r.tokens, perm, config)  # core.run on the reordered sentence itself
    moved_back = float(np.max(np.abs(result.weights - result.realigned)))
    in_place = float(np.max(np.abs(result.weights - result.permuted_weights)))
    return [moved_back <= 1e-6, in_place <= 1e-6, moved_back > 1e-6]


def _plain_softmax_peak(scores: np.ndarray, mask: np.ndarray | None) -> float:
    """Mean over rows of the largest softmax weight, by plain loops over allowed keys."""
    peaks = []
    for i, row in enumerate(scores):
        keys = [j for j in range(len(row)) if mask is None or mask[i, j]]
        top = max(row[j] for j in keys)
        peaks.append(1 / math.fsum(math.exp(row[j] - top) for j in keys))
    return math.fsum(peaks) / len(peaks)


def _width_claims(q, r) -> list[bool]:
    wide = r.trace.q.shape[-3] * r.trace.q.shape[-1]
    narrow = max(1, wide // NARROW)
    q_all = np.concatenate(list(r.trace.q), axis=-1)  # (T, d_model)
    k_all = np.concatenate(list(r.trace.keys_per_head), axis=-1)
    a = _plain_softmax_peak(q_all[:, :narrow] @ k_all[:, :narrow].T, r.trace.mask)
    b = _plain_softmax_peak(q_all @ k_all.T, r.trace.mask)
    return [a > b + ABOUT_THE_SAME, b > a + ABOUT_THE_SAME, abs(a - b) <= ABOUT_THE_SAME]


def check(q, r, config: AttentionConfig) -> None:
    """Exactly one choice is true, and it is the answer; a room can store it as one integer."""
    claims = {
        "zero": lambda: _zero_claims(q, r),
        "row-sum": lambda: _row_sum_claims(q, r),
        "d_k": lambda: _d_k_claims(q, r, config),
        "reorder": lambda: _reorder_claims(q, r, config),
        "width": lambda: _width_claims(q, r),
    }[q.kind]()
    assert claims.count(True) == 1, (q.kind, q.choices, claims)
    assert claims.index(True) == q.answer and isinstance(q.answer, int)
    assert len(set(q.choices)) == len(q.choices) == len(q.options) == len(q.values)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs(), sentence=st.sampled_from(SENTENCES))
def test_every_mechanics_question_has_exactly_one_true_choice(config, sentence):
    r = run(tuple(tokenize(sentence)), config)
    found = mechanics_questions(r, context=repr(config))
    kinds = [q.kind for q in found]
    assert kinds == [k for k in KINDS if k in kinds]  # in the lesson's order, one each
    assert "d_k" in kinds  # always answerable
    for q in found:
        check(q, r, config)
    assert len({question_id(q) for q in found}) == len(found)


GRID = [
    AttentionConfig(),
    AttentionConfig(causal=True),
    AttentionConfig(positional="sinusoidal"),
    AttentionConfig(weights="identity"),
    AttentionConfig(weights="previous", positional="learned"),
    AttentionConfig(d_model=512, n_heads=1, scaled=False),
    AttentionConfig(causal=True, window=2, prefix=2, positional="rope"),
    AttentionConfig(kv_heads=2, alibi=True, causal=True),
]


@pytest.mark.parametrize("config", GRID, ids=repr)
def test_the_settings_grid_asks_all_five_where_they_have_answers(config):
    r = run(tuple(tokenize(SENTENCES[0])), config)
    found = mechanics_questions(r, context=repr(config))
    assert {q.kind for q in found} >= {"row-sum", "d_k", "reorder", "width"}
    for q in found:
        check(q, r, config)


def test_the_answers_follow_the_run_not_the_settings():
    """The same settings' words, two runs: no mask and no positions keep the bag of words; the mask breaks it."""
    tokens = tuple(tokenize(SENTENCES[0]))
    bag = {q.kind: q for q in mechanics_questions(run(tokens, AttentionConfig()))}
    masked = {q.kind: q for q in mechanics_questions(run(tokens, AttentionConfig(causal=True)))}
    assert bag["zero"].choices[bag["zero"].answer] == "none: every weight is above 0"
    assert masked["zero"].choices[masked["zero"].answer].startswith("above the diagonal")
    assert bag["reorder"].answer == 0 and masked["reorder"].answer == 2
    assert "no positions and no mask" in bag["reorder"].text and "a mask" in masked["reorder"].text
    [width] = [q for q in mechanics_questions(run(tokens, DEFAULT_CONFIG)) if q.kind == "width"]
    assert width.choices[width.answer] == "map B (d_k = 64)"  # the page's defaults: 4 numbers against 64


@pytest.mark.parametrize("config", [AttentionConfig(alibi=True), AttentionConfig(window=2)])
def test_a_reversal_alibi_or_a_window_both_ways_cannot_tell_is_not_called_a_bag_of_words(config):
    """ALiBi's bias and a window without the causal mask read only |i − j|, which a reversal keeps: the weights
    move with their words, yet the run sees relative order (it said "Attention alone sees a bag of words")."""
    tokens = tuple(tokenize(SENTENCES[0]))
    r = run(tokens, config)
    [q] = [q for q in mechanics_questions(r) if q.kind == "reorder"]
    moved = permutation_experiment(tokens, reordering(tokens), config).max_abs_diff  # computed here, on core
    assert q.answer == 0 and moved < 1e-12
    assert "bag of words" not in q.explanation and "sees relative order" in q.explanation
    shuffled = permutation_experiment(tokens, (0, 2, 1, *range(3, len(tokens))), config).max_abs_diff
    assert shuffled > 1e-3  # as the explanation says: a reordering that changes distances changes the map


def test_a_zero_that_no_rule_explains_is_no_question():
    r = run(tuple(tokenize(SENTENCES[0])), AttentionConfig())
    w = np.array(r.trace.weights)  # (h, T, T)
    w[:, 2, 5] = 0.0  # an underflow outside any mask
    broken = type(r)(**{**r.__dict__, "trace": type(r.trace)(**{**r.trace.__dict__, "weights": w})})
    assert quiz_mechanics.zero_question(broken) is None


def test_a_sentence_no_reordering_changes_asks_nothing_about_it():
    r = run(tuple(tokenize("the the the")), AttentionConfig())
    assert reordering(r.tokens) is None
    assert "reorder" not in {q.kind for q in mechanics_questions(r)}


def test_verdict_of_a_mechanics_question_names_both_choices():
    r = run(tuple(tokenize(SENTENCES[0])), AttentionConfig())
    [q] = [q for q in mechanics_questions(r) if q.kind == "d_k"]
    wrong = (q.answer + 1) % len(q.choices)
    assert verdict(q, q.answer) == f"Right: {q.choices[q.answer]}."
    assert q.choices[wrong] in verdict(q, wrong) and q.choices[q.answer] in verdict(q, wrong)


def test_learned_weights_keep_the_pattern_and_row_questions():
    require_minilm()
    from core.pretrained import load_minilm

    source = MiniLMSource.of(load_minilm(), "the cat sat on the mat because it was tired")
    assert source.LEARNED and TrainedSource.LEARNED
    for r in source.runs():
        found = questions_for(r, learned=True, layered=True, context="minilm")
        assert found == questions(
            r.trace.weights, r.trace.mask, r.tokens, r.word_ids, layer=r.layer, layered=True, context="minilm"
        )
        assert {q.kind for q in found} <= {"word", "pattern"}
    r = run(tuple(tokenize(SENTENCES[0])), AttentionConfig())
    assert {q.kind for q in questions_for(r, learned=False)} <= set(KINDS)


# -- on the page ------------------------------------------------------------------------------------------------------
def _current(at):
    return at.session_state["quiz_current"]


@pytest.mark.parametrize("query", [dict(), dict(causal="true", weights="identity")], ids=["random", "identity"])
def test_each_mechanics_question_reveals_the_maps_its_answer_was_read_from(query):
    at = make_app(quiz="true", **query).run()
    no_exception(at)
    assert not {"heads_chart"} & set(keyed_figures(at))
    seen = []
    for number in range(1, 6):
        at.number_input(key="quiz_question").set_value(number).run()
        q = _current(at)
        seen.append(q.kind)
        [box] = [s for s in at.selectbox if s.key and s.key.startswith("quiz_pick_")]
        box.select_index(q.answer).run()
        at.button(key="quiz_reveal").click().run()
        no_exception(at)
        texts = [t.value for t in at.text]
        assert texts[0] == q.text and texts[1] == f"Right: {q.choices[q.answer]}." and texts[2] == q.explanation
        shown = keyed_figures(at)
        if q.kind in ("zero", "row-sum"):
            assert "quiz_map" in shown
        elif q.kind in ("reorder", "width"):
            assert "quiz_maps" in shown
        assert "heads_chart" in shown  # revealed: the view's maps are back
    assert seen == list(KINDS)

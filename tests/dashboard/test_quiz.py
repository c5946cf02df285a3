"""Predict, then reveal: every answer is derived from the run's numbers, and the page shows exactly those numbers."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest

from core import PATTERNS, head_summary, run, tokenize
from core.head_summary import NAMED_SHARE, ROW_WEIGHT
from dashboard.classroom.quiz import (
    CLEAR_MARGIN,
    MIN_KEYS,
    Question,
    pattern_questions,
    question_id,
    questions,
    verdict,
    word_question,
)
from dashboard.state.settings import DEFAULT_CONFIG
from tests.conftest import ROOT, require_minilm
from tests.dashboard.conftest import array, heatmaps, keyed_figures, make_app, no_exception

SENTENCE = "The bank of the river gave a loan"
CONFIGS = [
    DEFAULT_CONFIG,
    dataclasses.replace(DEFAULT_CONFIG, causal=True),
    dataclasses.replace(DEFAULT_CONFIG, seed=7, positional="sinusoidal", n_heads=8),
    dataclasses.replace(DEFAULT_CONFIG, weights="identity"),
    dataclasses.replace(DEFAULT_CONFIG, weights="previous", positional="learned"),
    dataclasses.replace(DEFAULT_CONFIG, d_model=512, n_heads=1, scaled=False),
]


def _check_word(q: Question, weights: np.ndarray, allowed: np.ndarray | None) -> None:
    """The answer is the argmax of the asked row over the allowed keys, clear of the runner-up."""
    row = weights[q.head, q.row].astype(np.float64)  # (T,)
    keys = np.ones_like(row, dtype=bool) if allowed is None else allowed[q.row]
    masked = np.where(keys, row, -np.inf)
    best = int(np.argmax(masked))
    assert q.options[q.answer] == best
    assert keys.sum() >= MIN_KEYS
    assert masked[best] - np.sort(masked)[-2] >= CLEAR_MARGIN
    assert all(keys[k] for k in q.options)  # a masked key is never offered
    assert np.allclose(q.values, row[list(q.options)])


def _row_shares(weights: np.ndarray, metric: str) -> np.ndarray:
    """Each head's share of rows with more than ROW_WEIGHT on the metric's key, by plain loops: ``(h,)``."""
    h, t, _ = weights.shape
    key_of = {
        "previous_weight": lambda i: i - 1 if i >= 1 else None,
        "self_weight": lambda i: i,
        "first_weight": lambda i: 0,
        "next_weight": lambda i: i + 1 if i + 1 < t else None,
    }[metric]
    shares = np.full(h, np.nan)
    for k in range(h):
        rows = [i for i in range(t) if key_of(i) is not None and weights[k, i].sum() > 0]  # a fully masked row: none
        if rows:
            shares[k] = sum(weights[k, i, key_of(i)] > ROW_WEIGHT for i in rows) / len(rows)
    return shares


def _check_pattern(q: Question, weights: np.ndarray, allowed: np.ndarray | None, word_ids=None) -> None:
    """The answer's rows meet the pattern in more than NAMED_SHARE of cases, and it is the only head that does."""
    [p] = [p for p in PATTERNS if p.name == q.pattern]
    if p.metric == "same_word_weight":  # needs the word ids' pieces: read core's own shares
        shares = np.asarray(head_summary(weights, allowed, word_ids).shares[p.metric], dtype=np.float64)
    else:
        shares = _row_shares(weights, p.metric)
    meets = [k for k in range(weights.shape[0]) if shares[k] > NAMED_SHARE]
    assert meets == [q.head] == [q.options[q.answer]]
    assert q.threshold == NAMED_SHARE
    assert np.allclose(q.values, shares, equal_nan=True)
    assert f"{shares[q.head]:.0%} of its rows" in q.explanation


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.weights}-{c.n_heads}h-causal{c.causal}-{c.positional}")
def test_every_answer_is_derived_from_the_weights(config):
    r = run(tuple(tokenize(SENTENCE)), config)
    found = questions(r.trace.weights, r.trace.mask, r.tokens, context=repr(config))
    for q in found:
        assert 0 <= q.answer < len(q.choices) == len(q.options) == len(q.values)
        if q.kind == "word":
            _check_word(q, r.trace.weights, r.trace.mask)
        else:
            _check_pattern(q, r.trace.weights, r.trace.mask)
    assert len({question_id(q) for q in found}) == len(found)


def test_the_hand_built_previous_head_is_asked_about_only_when_alone():
    config = dataclasses.replace(DEFAULT_CONFIG, weights="previous", positional="learned", n_heads=4)
    r = run(tuple(tokenize(SENTENCE)), config)
    w = r.trace.weights  # (4, T, T): every head is a previous-token head
    assert pattern_questions(w, r.trace.mask) == []  # four heads have it: no unique answer
    mixed = np.stack([w[0], np.full_like(w[0], 1 / w.shape[-1]), np.full_like(w[0], 1 / w.shape[-1])])
    [q] = [q for q in pattern_questions(mixed, None) if q.pattern == "previous-token"]
    _check_pattern(q, mixed, None)
    assert q.choices[q.answer] == "head 1"


def test_minilm_questions_follow_core(minilm_runs):
    sentence, runs = minilm_runs
    for layer, r in enumerate(runs, 1):
        found = questions(
            r.trace.weights, r.trace.mask, r.tokens, r.word_ids, layer=layer, layered=True, context=sentence
        )
        assert found
        for q in found:
            assert f"layer {layer}" in q.text
            if q.kind == "word":
                _check_word(q, r.trace.weights, r.trace.mask)
            else:
                _check_pattern(q, r.trace.weights, r.trace.mask, r.word_ids)


@pytest.fixture(scope="module")
def minilm_runs():
    require_minilm()
    from core.pretrained import load_minilm
    from core.pretrained.runs import layer_runs

    sentence = "the cat sat on the mat because it was tired"
    return sentence, layer_runs(load_minilm(), sentence, causal=False)


def test_no_question_without_a_clear_answer():
    flat = np.full((2, 5, 5), 0.2)
    assert questions(flat, None, list("abcde")) == []
    nearly = flat.copy()
    nearly[0, 1] = [0.25, 0.15 + CLEAR_MARGIN / 2, 0.2, 0.2, 0.2 - CLEAR_MARGIN / 2]  # best beats next by 0.05
    assert word_question(nearly, None, list("abcde"), 0, 1) is None
    causal = np.tril(np.ones((5, 5), bool))
    one_hot = np.tile(np.eye(5), (2, 1, 1))
    assert word_question(one_hot, causal, list("abcde"), 0, 1) is None  # row 1 may look at 2 keys only
    assert word_question(one_hot, causal, list("abcde"), 0, 2) is not None
    assert pattern_questions(one_hot[:1], None) == []  # one head: "which head" is no question


def test_long_rows_offer_six_choices_with_the_argmax_among_them():
    t = 20
    w = np.full((1, t, t), 0.5 / (t - 1))
    w[0, 3, 17] = 0.5  # row 3's argmax; the rest share the other half
    q = word_question(w, None, [f"w{i}" for i in range(t)], 0, 3)
    assert q is not None and len(q.choices) == 6
    assert q.options[q.answer] == 17 and list(q.options) == sorted(q.options)


def test_question_id_is_stable_and_does_not_hold_the_answer():
    r = run(tuple(tokenize(SENTENCE)), DEFAULT_CONFIG)
    q = questions(r.trace.weights, r.trace.mask, r.tokens, context="ctx")[0]
    assert question_id(q) == question_id(dataclasses.replace(q, answer=(q.answer + 1) % len(q.choices)))
    assert question_id(q) != question_id(dataclasses.replace(q, context="other settings"))
    code = (
        "from core import run, tokenize; from dashboard.state.settings import DEFAULT_CONFIG; "
        "from dashboard.classroom.quiz import questions, question_id; "
        f"r = run(tuple(tokenize({SENTENCE!r})), DEFAULT_CONFIG); "
        "print(question_id(questions(r.trace.weights, r.trace.mask, r.tokens, context='ctx')[0]))"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")  # another process, another str hash salt
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == question_id(q)


def test_verdict_names_both_numbers():
    q = Question("word", "?", ("0·a", "1·b"), 1, "why", 1, 0, (0, 1), (0.2, 0.8), row=2)
    assert verdict(q, 1).startswith("Right")
    assert "0.20" in verdict(q, 0) and "0.80" in verdict(q, 0)
    shares = dataclasses.replace(q, kind="pattern", pattern="previous-token", values=(0.25, 0.875))
    assert verdict(shares, 1) == "Right: 1·b (88% of its rows)."  # a pattern's values are shares of rows
    assert "25% of its rows" in verdict(shares, 0) and "88% of its rows" in verdict(shares, 0)


# -- on the page ----------------------------------------------------------------------------------------------------
def _pick_box(at):
    [box] = [s for s in at.selectbox if s.key and s.key.startswith("quiz_pick_")]
    return box


def _reveal(at, pick: int):
    _pick_box(at).select_index(pick).run()
    at.button(key="quiz_reveal").click().run()
    no_exception(at)
    return at


def _revealed_row(at) -> tuple[np.ndarray, list[str]]:
    fig = keyed_figures(at)["quiz_map"]
    [trace] = [t for t in heatmaps(fig) if t.get("name") != "masked"]
    return array(trace["z"]), fig["layout"].get("shapes", [])


QUIZ_PAGES = [  # learned weights: random and hand-built ones ask what the mechanics decide (test_quiz_mechanics.py)
    dict(view="model", weights="minilm", sentence="the cat sat on the mat because it was tired", layer="6"),
    dict(view="heads", weights="minilm", sentence="the cat sat on the mat because it was tired", causal="true"),
    dict(view="heads", weights="trained", task="shift"),
]


@pytest.mark.parametrize("query", QUIZ_PAGES, ids=lambda q: "-".join(q.values()) or "defaults")
def test_the_map_stays_hidden_until_reveal_and_shows_the_answer_as_its_argmax(query):
    if query.get("weights") == "minilm":
        require_minilm()
    at = make_app(quiz="true", **query).run()
    no_exception(at)
    assert "quiz_map" not in keyed_figures(at)
    assert not {"heads_chart", "model_chart", "model_head_chart"} & set(keyed_figures(at))  # nothing gives it away
    reveal = at.button(key="quiz_reveal")
    assert reveal.disabled  # pick first
    for number in range(1, 4):  # the first three questions of this run
        at.number_input(key="quiz_question").set_value(number).run()
        [text] = [t.value for t in at.text]
        box = _pick_box(at)
        at = _reveal(at, 0)
        explanation = [t.value for t in at.text]
        assert text in explanation[0] and len(explanation) == 3  # question, verdict, why
        if "which token" not in text:  # a pattern question: the bars and the answer head's map
            assert "quiz_bars" in keyed_figures(at)
            continue
        z, shapes = _revealed_row(at)
        row = int(text.split("row ")[1].split(")")[0])
        answer_box = shapes[-1]  # drawn last, on top
        answer_col = round(answer_box["x0"] + 0.5)
        assert round(answer_box["y0"] + 0.5) == row
        assert answer_col == int(np.nanargmax(z[row]))  # the highlighted cell is the row's largest shown weight
        assert f"{answer_col}·" in explanation[2] and f"{np.nanmax(z[row]):.2f}" in explanation[2]
        picked = box.options[0].split("·")[0]
        assert ("Right" in explanation[1]) == (picked == str(answer_col))
        assert at.selectbox(key=box.key).disabled  # the pick is locked once revealed


def test_typed_text_in_a_question_is_never_markdown():
    sentence = "**bold** <b>x</b> [a](http://e.x) :red[y] $z$"
    at = make_app(quiz="true", sentence=sentence, causal="true", n_heads="1", quiz_question="4").run()
    no_exception(at)
    shown = " ".join(m.value for m in (*at.markdown, *at.caption, *at.info, *at.warning))
    for token in ("**", "<b>", "](", ":red[", "$z$"):
        assert token not in shown
    [question] = [t.value for t in at.text]
    assert at.session_state["quiz_current"].kind == "reorder" and "* * bold" in question  # the tokens, as text


def test_no_question_says_so_and_draws_no_map(monkeypatch):
    from dashboard.classroom import quiz_panel

    monkeypatch.setattr(quiz_panel, "questions_for", lambda *args, **kwargs: [])  # a run with no unique answer
    at = make_app(quiz="true").run()
    no_exception(at)
    assert any("No question has one clear answer" in i.value for i in at.info)
    assert not keyed_figures(at)


def test_quiz_off_is_the_ordinary_view():
    at = make_app(quiz="false").run()
    no_exception(at)
    assert "heads_chart" in keyed_figures(at)
    assert at.toggle(key="quiz").value is False

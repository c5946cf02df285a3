"""One head across many sentences (core.across): the pooled evidence against a row-by-row loop, and per sentence
the same names as ``named_shares``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import causal_mask, head_summary, name_patterns
from core.across import OneMap, pooled_patterns
from core.head_summary import NAMED_SHARE, PATTERNS, ROW_WEIGHT, row_evidence


def loop_rows(weights: np.ndarray, mask: np.ndarray | None, word_ids) -> dict[str, tuple[int, int]]:
    """Per metric, (rows showing, rows measured) of one ``(T, T)`` map, one row at a time (nothing from core)."""
    t = weights.shape[0]
    counts = {p.metric: [0, 0] for p in PATTERNS}
    for i in range(t):
        if mask is not None and not any(bool(mask[i, j]) for j in range(t)):
            continue  # no key allowed: not a distribution
        keys = {"self_weight": i, "first_weight": 0}
        if i >= 1:
            keys["previous_weight"] = i - 1
        if i < t - 1:
            keys["next_weight"] = i + 1
        for metric, j in keys.items():
            counts[metric][1] += 1
            counts[metric][0] += float(weights[i, j]) > ROW_WEIGHT
        if word_ids is not None and word_ids[i] is not None:
            siblings = [j for j in range(t) if j != i and word_ids[j] == word_ids[i]]
            if siblings:
                counts["same_word_weight"][1] += 1
                counts["same_word_weight"][0] += math.fsum(float(weights[i, j]) for j in siblings) > ROW_WEIGHT
    return {m: (s, n) for m, (s, n) in counts.items()}


@st.composite
def one_map(draw) -> OneMap:
    """A random attention map of 1 to 7 tokens, perhaps causal, perhaps WordPiece pieces with words."""
    t = draw(st.integers(1, 7))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sharp = draw(st.sampled_from([0.5, 3.0, 8.0]))  # flat to nearly one-hot rows
    logits = rng.normal(size=(t, t)) * sharp
    mask = causal_mask(t) if draw(st.booleans()) else None
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    words = None
    if draw(st.booleans()):  # [CLS], pieces of words numbered in order, [SEP]
        ids = sorted(rng.integers(0, max(1, t - 1), size=max(0, t - 2)).tolist())
        words = (None, *ids, None)[:t] if t >= 2 else (None,)
    return OneMap(weights, mask, words)


@settings(max_examples=80, deadline=None)
@given(st.lists(one_map(), min_size=1, max_size=6))
def test_pooled_counts_are_every_rows_evidence_added_up(maps):
    pooled = {p.name: p for p in pooled_patterns(maps)}
    for pattern in PATTERNS:
        got = pooled[pattern.name]
        want = [loop_rows(m.weights, m.mask, m.word_ids)[pattern.metric] for m in maps]
        assert got.showing == tuple(s for s, _ in want), pattern.name
        assert got.measured == tuple(n for _, n in want), pattern.name
        showing, measured = sum(s for s, _ in want), sum(n for _, n in want)
        assert got.rows_showing == showing and got.rows_measured == measured
        assert got.sentences == sum(n > 0 for _, n in want)
        if measured:
            assert got.share == showing / measured
            assert got.named == (showing / measured > NAMED_SHARE)
        else:
            assert math.isnan(got.share) and not got.named


@settings(max_examples=80, deadline=None)
@given(st.lists(one_map(), min_size=1, max_size=6))
def test_named_on_a_sentence_is_what_the_summary_names_it_there(maps):
    """One rule: a head is named on one sentence exactly when ``named_shares`` names it for that sentence."""
    names = [name_patterns(head_summary(m.weights[None], m.mask, m.word_ids))[0] for m in maps]
    for p in pooled_patterns(maps):
        assert p.named_on == tuple(i for i, named in enumerate(names) if p.name in named), p.name


def previous_head(t: int) -> np.ndarray:
    """Every row on the key before it; row 0 on itself."""
    w = np.eye(t, k=-1)
    w[0, 0] = 1.0
    return w


def test_a_previous_token_head_on_every_sentence_is_named_across_them_with_its_rows_counted():
    maps = [OneMap(previous_head(t), causal_mask(t)) for t in (3, 5, 8)]
    by_name = {p.name: p for p in pooled_patterns(maps)}
    previous = by_name["previous-token"]
    assert (previous.rows_showing, previous.rows_measured, previous.sentences) == (2 + 4 + 7, 2 + 4 + 7, 3)
    assert previous.named and previous.named_on == (0, 1, 2) and previous.share == 1.0
    assert not by_name["self"].named and by_name["self"].rows_showing == 3  # row 0 of each sentence


def test_a_head_named_on_one_sentence_need_not_be_named_across_them():
    """One token looks at itself, whatever the head: named "self" there, not across the longer sentences."""
    uniform = [OneMap(np.full((t, t), 1 / t)) for t in (6, 7, 8)]
    maps = [OneMap(np.ones((1, 1))), *uniform]
    self_ = {p.name: p for p in pooled_patterns(maps)}["self"]
    assert self_.named_on == (0,)
    assert self_.rows_showing == 1 and self_.rows_measured == 1 + 6 + 7 + 8 and not self_.named


def test_row_evidence_is_what_the_summary_averages():
    rng = np.random.default_rng(7)
    w = rng.dirichlet(np.ones(6), size=(3, 6))  # (h, T, T)
    mask = causal_mask(6)
    w = np.where(mask, w, 0.0)
    w /= w.sum(axis=-1, keepdims=True)
    summary = head_summary(w, mask)
    for metric, evidence in row_evidence(w, mask).items():
        if metric == "same_word_weight":
            assert not evidence.measured.any()
            continue
        np.testing.assert_array_equal(evidence.shows & ~evidence.measured, False)
        shares = evidence.shows.sum(axis=-1) / evidence.measured.sum(axis=-1)
        np.testing.assert_allclose(shares, summary.shares[metric], rtol=0, atol=1e-15)


def test_no_sentence_pools_to_nothing():
    pooled = pooled_patterns([])
    assert [p.name for p in pooled] == [p.name for p in PATTERNS]
    assert all(p.rows_measured == 0 and math.isnan(p.share) and not p.named for p in pooled)


@pytest.mark.parametrize("t", [1, 2])
def test_short_sentences_have_no_previous_or_next_row_to_measure(t):
    [p] = [p for p in pooled_patterns([OneMap(np.full((t, t), 1 / t))]) if p.name == "next-token"]
    assert p.rows_measured == t - 1

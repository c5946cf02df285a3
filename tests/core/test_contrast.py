"""Minimal pairs (core.contrast): the alignment, the change per row against a loop over the union of keys, the
difference, and the reference read against direct indexing."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.contrast import Reference, align, difference, mean_change, read_reference, row_change
from core.head_summary import SPECIFIC


def test_equal_lengths_pair_position_by_position_whatever_the_words():
    a = align(["dog", "bites", "man"], ["man", "bites", "dog"])
    assert a.pairs == ((0, 0), (1, 1), (2, 2)) and a.by_position and not a.first_only and not a.second_only


def test_a_word_added_has_no_partner_and_the_rest_keep_theirs():
    a = align(["the", "cat", "sat", "on", "the", "mat"], ["the", "black", "cat", "sat", "on", "the", "mat"])
    assert a.pairs == ((0, 0), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6))
    assert a.second_only == (1,) and a.first_only == () and not a.by_position


def test_a_run_replaced_by_as_many_is_paired_and_by_a_different_number_is_not():
    same = align(["a", "b", "c", "d", "e"], ["a", "x", "c", "d"])  # b -> x (one for one), e deleted
    assert same.pairs == ((0, 0), (1, 1), (2, 2), (3, 3)) and same.first_only == (4,)
    other = align(["a", "b", "c", "d"], ["a", "x", "y", "z", "d"])  # b c -> x y z
    assert other.pairs == ((0, 0), (3, 4)) and other.first_only == (1, 2) and other.second_only == (1, 2, 3)


WORDS = st.lists(st.sampled_from("abcde"), min_size=0, max_size=9)


@settings(max_examples=200, deadline=None)
@given(WORDS, WORDS)
def test_an_alignment_pairs_in_order_and_accounts_for_every_token(first, second):
    a = align(first, second)
    i, j = a.first.tolist(), a.second.tolist()
    assert i == sorted(set(i)) and j == sorted(set(j))  # in reading order, each token at most once
    assert sorted(i + list(a.first_only)) == list(range(len(first)))
    assert sorted(j + list(a.second_only)) == list(range(len(second)))
    if len(first) != len(second):  # by content: a pair of different tokens sits in a run replaced by as many
        equal = [(-1, -1), *((p, q) for p, q in a.pairs if first[p] == second[q]), (len(first), len(second))]
        for p, q in a.pairs:
            if first[p] != second[q]:
                before = max(e for e in equal if e[0] < p)
                after = min(e for e in equal if e[0] > p)
                assert before[1] < q < after[1]
                assert after[0] - before[0] == after[1] - before[1], (first, second, a.pairs)


def loop_total_variation(p: list[float], q: list[float], pairs: list[tuple[int, int]]) -> float:
    """½ Σ |p − q| over the union of keys: a paired key compares its two weights, a key without a partner counts
    its own weight (nothing from core)."""
    paired_p, paired_q = {i for i, _ in pairs}, {j for _, j in pairs}
    terms = [abs(q[j] - p[i]) for i, j in pairs]
    terms += [p[i] for i in range(len(p)) if i not in paired_p]
    terms += [q[j] for j in range(len(q)) if j not in paired_q]
    return 0.5 * math.fsum(terms)


def random_rows(rng: np.random.Generator, lead: tuple[int, ...], t: int) -> np.ndarray:
    return rng.dirichlet(np.ones(t) * 0.7, size=(*lead, t))  # (..., T, T), rows sum to 1


@settings(max_examples=60, deadline=None)
@given(WORDS.filter(bool), WORDS.filter(bool), st.integers(0, 2**32 - 1))
def test_row_change_is_the_total_variation_over_the_union_of_keys(first, second, seed):
    rng = np.random.default_rng(seed)
    w_a, w_b = random_rows(rng, (2, 3), len(first)), random_rows(rng, (2, 3), len(second))  # (L, h, T, T)
    a = align(first, second)
    got = row_change(w_a, w_b, a)  # (L, h, n)
    assert got.shape == (2, 3, len(a.pairs))
    for layer in range(2):
        for head in range(3):
            for k, (i, j) in enumerate(a.pairs):
                want = loop_total_variation(list(w_a[layer, head, i]), list(w_b[layer, head, j]), list(a.pairs))
                assert got[layer, head, k] == pytest.approx(want, abs=1e-12)
    assert np.all((got >= -1e-12) & (got <= 1 + 1e-12))
    means = mean_change(w_a, w_b, a)
    if a.pairs:
        np.testing.assert_allclose(means, got.mean(axis=-1), rtol=0, atol=1e-15)
    else:
        assert np.isnan(means).all()
    swapped = align(second, first)
    if len(first) == len(second) or swapped.pairs == tuple((j, i) for i, j in a.pairs):
        back = row_change(w_b, w_a, swapped)
        np.testing.assert_allclose(back, got, rtol=0, atol=1e-12)  # the distance is symmetric


def test_the_same_maps_change_by_nothing_and_disjoint_rows_by_one():
    w = random_rows(np.random.default_rng(1), (), 5)
    same = align(list("abcde"), list("abcde"))
    np.testing.assert_array_equal(row_change(w, w, same), 0.0)
    on_first, on_last = np.zeros((2, 2)), np.zeros((2, 2))
    on_first[:, 0], on_last[:, 1] = 1.0, 1.0
    np.testing.assert_allclose(row_change(on_first, on_last, align("ab", "ab")), [1.0, 1.0])


def test_difference_is_second_minus_first_on_the_aligned_cells():
    rng = np.random.default_rng(3)
    first, second = list("abcd"), list("axbcd")
    w_a, w_b = random_rows(rng, (2,), 4), random_rows(rng, (2,), 5)
    a = align(first, second)
    got = difference(w_a, w_b, a)
    assert got.shape == (2, len(a.pairs), len(a.pairs))
    for k, (i, j) in enumerate(a.pairs):
        for m, (p, q) in enumerate(a.pairs):
            assert got[:, k, m].tolist() == (w_b[:, j, q] - w_a[:, i, p]).tolist()


ANIMAL = ["the", "animal", "didn't", "cross", "the", "street", "because", "it", "was", "too", "tired"]
STREET = [*ANIMAL[:-1], "wide"]
IT, AN, ST = ANIMAL.index("it"), ANIMAL.index("animal"), ANIMAL.index("street")


def maps_where(it_first: dict[int, float], it_second: dict[int, float], base: float = 0.0) -> tuple:
    """Two (T, T) maps of the pair: every row uniform but for ``base`` on "animal", and the row of "it" as given."""
    t = len(ANIMAL)
    out = []
    for it_row in (it_first, it_second):
        w = np.full((t, t), (1 - base) / (t - 1))
        w[:, AN] = base
        row = np.zeros(t)
        for key, value in it_row.items():
            row[key] = value
        row[row == 0] = (1 - row.sum()) / (t - len(it_row))
        w[IT] = row
        out.append(w)
    return tuple(out)


def test_a_head_that_sends_it_to_each_sentences_noun_resolves_the_reference():
    first, second = maps_where({AN: 0.8, ST: 0.05}, {AN: 0.05, ST: 0.8})
    r = read_reference(Reference("it", "animal", "street"), ANIMAL, STREET, first, second)
    assert r.query == (IT, IT) and r.nouns_first == (AN, ST) and r.nouns_second == (AN, ST)
    assert (r.first_on_first, r.first_on_second, r.second_on_first, r.second_on_second) == (0.8, 0.05, 0.05, 0.8)
    assert r.shift == pytest.approx((0.8 - 0.05) - (0.05 - 0.8))
    assert r.specific_first >= SPECIFIC and r.specific_second >= SPECIFIC and r.resolves


def test_a_column_every_row_reads_is_not_resolving_even_when_the_order_flips():
    """Every row gives "animal" 0.6: "it" giving it 0.62 then 0.1 flips the order but is not specific to "it"."""
    first, second = maps_where({AN: 0.62, ST: 0.3}, {AN: 0.1, ST: 0.5}, base=0.6)
    r = read_reference(Reference("it", "animal", "street"), ANIMAL, STREET, first, second)
    assert r.first_on_first > r.first_on_second and r.second_on_second > r.second_on_first
    assert r.specific_first < SPECIFIC and not r.resolves


def test_a_head_that_keeps_it_on_the_animal_does_not_resolve_it():
    first, second = maps_where({AN: 0.8, ST: 0.05}, {AN: 0.5, ST: 0.2})
    r = read_reference(Reference("it", "animal", "street"), ANIMAL, STREET, first, second)
    assert r.shift > 0 and not r.resolves  # it moved towards "street", and still prefers "animal"


def test_the_reference_reads_every_head_at_once():
    heads = [maps_where({AN: 0.8, ST: 0.05}, {AN: 0.05, ST: 0.8}), maps_where({AN: 0.5, ST: 0.2}, {AN: 0.5, ST: 0.2})]
    first, second = np.stack([h[0] for h in heads]), np.stack([h[1] for h in heads])  # (2, T, T)
    r = read_reference(Reference("it", "animal", "street"), ANIMAL, STREET, first, second)
    assert r.resolves.tolist() == [True, False] and r.shift.shape == (2,)


@pytest.mark.parametrize(
    "second", [[*ANIMAL[:-1], "it"], [w for w in ANIMAL if w != "street"]], ids=["word twice", "noun missing"]
)
def test_no_reading_unless_each_word_is_there_once(second):
    t_a, t_b = len(ANIMAL), len(second)
    reading = read_reference(Reference("it", "animal", "street"), ANIMAL, second, np.eye(t_a), np.eye(t_b))
    assert reading is None

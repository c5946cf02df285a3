"""embed and positional_encoding: stable across processes, position-free rows, Vaswani's formula."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from core import POSITIONAL_KINDS, Projections, embed, positional_encoding
from tests.conftest import ROOT

TOKENS = ["the", "bank", "of", "the", "river", "caf\u00e9", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "!"]

# Prints the hex of every array the dashboard derives from a seed; run under two hash seeds.
CHILD = """
import numpy as np
from core import Projections, embed, positional_encoding
tokens = {tokens!r}
arrays = [embed(tokens, 24, seed=3), positional_encoding("learned", 9, 24, seed=3)]
p = Projections.random(24, seed=3)
arrays += [p.w_q, p.w_k, p.w_v, p.w_o]
print(" ".join(np.ascontiguousarray(a, dtype="<f8").tobytes().hex() for a in arrays))
"""


def child_arrays(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(tokens=TOKENS)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


def test_arrays_identical_across_processes_with_different_hash_seeds():
    a = child_arrays("1")
    b = child_arrays("4242")
    assert len(a.split()) == 6
    assert a == b
    # and equal to this process, whatever its own hash seed is
    here = [embed(TOKENS, 24, seed=3), positional_encoding("learned", 9, 24, seed=3)]
    p = Projections.random(24, seed=3)
    here += [p.w_q, p.w_k, p.w_v, p.w_o]
    assert a.split() == [np.ascontiguousarray(x, dtype="<f8").tobytes().hex() for x in here]


# --- embed ----------------------------------------------------------------------------


def test_embed_shape_and_dtype():
    x = embed(TOKENS, 16)
    assert x.shape == (len(TOKENS), 16)
    assert x.dtype == np.float64
    assert embed(TOKENS, 16, dtype=np.float32).dtype == np.float32


def test_same_token_same_row_in_any_position_or_sentence():
    a = embed(["the", "bank", "of", "the", "river"], 32, seed=1)
    b = embed(["river", "the"], 32, seed=1)
    np.testing.assert_array_equal(a[0], a[3])
    np.testing.assert_array_equal(a[0], b[1])
    np.testing.assert_array_equal(a[4], b[0])
    assert not np.array_equal(a[0], a[1])  # different words, different rows


def test_row_depends_on_seed_and_d_model():
    base = embed(["word"], 32, seed=0)[0]
    assert not np.array_equal(base, embed(["word"], 32, seed=1)[0])
    assert not np.allclose(base[:16], embed(["word"], 16, seed=0)[0])


def test_embed_keys_on_the_exact_string():
    # tokenize lower-cases and normalises; embed itself keys on the exact string
    assert not np.array_equal(embed(["The"], 8), embed(["the"], 8))


def test_embed_entries_are_standard_normal():
    # 1000 distinct tokens x 64 = 64 000 entries: mean and std within ~4 standard errors
    x = embed([f"w{i}" for i in range(1000)], 64)
    assert abs(x.mean()) < 4 / math.sqrt(x.size)
    assert abs(x.std() - 1) < 4 / math.sqrt(2 * x.size)


# --- positional_encoding --------------------------------------------------------------


def vaswani(pos: int, col: int, d_model: int) -> float:
    """PE(pos, 2i) = sin(pos / 10000^(2i / d_model)), PE(pos, 2i + 1) = cos(same angle)."""
    i = col // 2
    angle = pos / 10000 ** (2 * i / d_model)
    return math.sin(angle) if col % 2 == 0 else math.cos(angle)


@pytest.mark.parametrize("d_model", [4, 7, 64])
def test_sinusoidal_matches_vaswani(d_model):
    t = 50
    pe = positional_encoding("sinusoidal", t, d_model)
    assert pe.shape == (t, d_model)
    for pos in (0, 1, 7, 49):
        for col in sorted({0, 1, d_model // 2, d_model - 2, d_model - 1}):
            assert pe[pos, col] == pytest.approx(vaswani(pos, col, d_model), abs=1e-12), (pos, col)


def test_sinusoidal_position_zero_is_sin0_cos0():
    pe = positional_encoding("sinusoidal", 3, 6)
    np.testing.assert_array_equal(pe[0], [0, 1, 0, 1, 0, 1])


def test_learned_is_prefix_stable_in_t_and_seeded():
    short = positional_encoding("learned", 5, 16, seed=2)
    long = positional_encoding("learned", 40, 16, seed=2)
    np.testing.assert_array_equal(long[:5], short)
    assert not np.array_equal(short, positional_encoding("learned", 5, 16, seed=3))
    assert np.unique(long, axis=0).shape[0] == 40  # every position its own row


def test_none_is_zeros():
    pe = positional_encoding("none", 6, 8)
    assert pe.shape == (6, 8)
    np.testing.assert_array_equal(pe, 0.0)


@pytest.mark.parametrize("kind", POSITIONAL_KINDS)
def test_every_kind_has_shape_t_by_d_model(kind):
    assert positional_encoding(kind, 3, 10).shape == (3, 10)


@pytest.mark.parametrize("kind", ["rotary", "", "Sinusoidal"])
def test_unknown_kind_raises(kind):
    with pytest.raises(ValueError, match="none, sinusoidal, learned"):
        positional_encoding(kind, 3, 8)

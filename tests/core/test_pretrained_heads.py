"""Named head patterns: the metrics on hand-built weights, then the real model's heads, checked in float32.

The model claims are properties of its numbers (which head, which pattern, above
which share), as read by hand once; the thresholds are those of ``core.head_summary``.
"""

from __future__ import annotations

import numpy as np
import pytest

from core.head_summary import PATTERNS, HeadSummary, head_summary, name_patterns
from core.pretrained import MiniLM, load_minilm
from tests.conftest import require_minilm


def _one_hot(targets: list[int], t: int) -> np.ndarray:
    """(T, T) weights: row i puts all its weight on key targets[i]."""
    w = np.zeros((t, t))
    w[np.arange(t), targets] = 1.0
    return w


def test_next_weight_and_its_name() -> None:
    w = _one_hot([1, 2, 3, 3], 4)[None]  # (1, 4, 4): rows 0-2 look one ahead, the last row at itself
    s = head_summary(w)
    assert s.next_weight.tolist() == [1.0]  # the last row has no next key and is left out
    assert name_patterns(s) == [("next-token",)]


def test_same_word_weight_counts_the_other_pieces_of_the_word_only() -> None:
    # [CLS] un ##aff ##able cat [SEP]: word ids None 0 0 0 1 None
    word_ids = [None, 0, 0, 0, 1, None]
    w = _one_hot([0, 2, 3, 1, 4, 5], 6)[None]  # pieces of word 0 look at each other, the rest at themselves
    s = head_summary(w, word_ids=word_ids)
    assert s.same_word_weight.tolist() == [1.0]  # mean over the 3 rows of word 0 only
    assert "same-word" in name_patterns(s)[0]
    assert np.isnan(head_summary(w).same_word_weight).all()  # no word ids, no number
    assert name_patterns(head_summary(np.eye(6)[None]))[0] == ("self",)


def test_every_pattern_has_a_metric_of_head_summary_and_a_reason() -> None:
    fields = HeadSummary.__dataclass_fields__
    assert len({p.name for p in PATTERNS}) == len(PATTERNS) == 5
    for p in PATTERNS:
        assert p.metric in fields and 0 < p.threshold < 1 and len(p.reason) > 40


def test_nan_and_missing_metrics_name_nothing() -> None:
    s = head_summary(np.ones((2, 1, 1)))  # one token: previous and next are NaN
    assert np.isnan(s.previous_weight).all()
    names = name_patterns(s)
    assert all("previous-token" not in n and "next-token" not in n for n in names)
    old_style = HeadSummary(*(np.array([0.9]),) * 5)  # built without the new fields
    assert [set(n) for n in name_patterns(old_style)] == [{"first-token sink", "previous-token", "self"}]


@pytest.fixture(scope="module")
def model() -> MiniLM:
    require_minilm()
    return load_minilm(dtype=np.float32)


def _summaries(model: MiniLM, text: str) -> list[HeadSummary]:
    run = model.run(text)
    return [head_summary(t.weights, t.mask, run.encoding.word_ids) for t in run.output.traces]


def test_layer1_head3_is_a_previous_token_head(model: MiniLM) -> None:
    s = _summaries(model, "The bank of the river.")[0]  # layer 1
    assert s.previous_weight[2] > 0.95  # head 3 (1-based): ~1.0 on every row
    assert "previous-token" in name_patterns(s)[2]
    assert np.sum(s.previous_weight > 0.5) == 1, "layer 1 has exactly one previous-token head"


def test_layer2_head9_is_a_next_token_head(model: MiniLM) -> None:
    s = _summaries(model, "The bank of the river.")[1]  # layer 2
    assert s.next_weight[8] > 0.5 and int(np.argmax(s.next_weight)) == 8
    assert "next-token" in name_patterns(s)[8]


@pytest.mark.parametrize("text", ["The bank of the river.", "the cat sat on the mat because it was tired"])
def test_middle_layers_put_more_than_half_their_weight_on_cls(model: MiniLM, text: str) -> None:
    summaries = _summaries(model, text)
    for layer in (2, 3, 4, 5):
        mean = float(summaries[layer - 1].first_weight.mean())
        assert mean > 0.5, f"layer {layer}: {mean:.2f} of its weight on [CLS]"
    assert float(summaries[0].first_weight.mean()) < 0.5  # layer 1 still reads the sentence


def test_layer6_head12_sends_it_to_cat(model: MiniLM) -> None:
    run = model.run("the cat sat on the mat because it was tired")
    tokens = run.encoding.tokens
    row = run.output.traces[5].weights[11, tokens.index("it")]  # layer 6, head 12, the query "it"
    assert tokens[int(np.argmax(row))] == "cat"
    assert row[tokens.index("cat")] > 0.5 > row[tokens.index("mat")]


def test_same_word_pieces_attend_to_each_other_somewhere(model: MiniLM) -> None:
    """Some head of layer 1 keeps most of a split word's weight inside the word (the same-word pattern)."""
    summaries = _summaries(model, "unaffable strawberries hyperparameters tokenization")
    assert "same-word" in name_patterns(summaries[0])[2]  # layer 1 head 3 (previous-token) also joins pieces

"""The head summary view (AppTest): the table is core.head_summary's numbers, NaN shows as n/a, words fit."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from core import head_summary, run, tokenize
from dashboard.state.settings import DEFAULTS
from dashboard.views.summary import COLUMNS
from tests.conftest import require_minilm
from tests.dashboard.charts import charts, shown_table
from tests.dashboard.conftest import array, make_app, no_exception


def summary(**query: str):
    at = make_app(view="summary", **query).run()
    no_exception(at)
    return at


def expected(sentence: str = DEFAULTS.sentence, **changes):
    tr = run(tokenize(sentence), replace(DEFAULTS.config, **changes)).trace
    return head_summary(tr.weights, tr.mask)


@pytest.mark.parametrize("query", [{}, dict(causal="true", positional="rope", n_heads="8")], ids=["default", "causal"])
def test_the_table_holds_core_head_summary(query):
    at = summary(**query)
    changes = dict(causal=True, positional="rope", n_heads=8) if query else {}
    want = expected(**changes)
    df = at.dataframe[0].value
    assert list(df["head"]) == list(range(1, want.entropy.shape[0] + 1))
    for field, column in COLUMNS.items():
        if field == "same_word_weight":  # only WordPiece pieces can split a word: no column for these tokens
            assert column not in df
            continue
        np.testing.assert_array_equal(df[column].to_numpy(), getattr(want, field))
    shown = shown_table(at)
    assert shown[COLUMNS["entropy"]].iloc[0] == f"{want.entropy[0]:.3f}"


def test_the_bars_are_the_same_numbers():
    at = summary()
    want = expected()
    bars = {t["name"]: array(t["y"]) for t in charts(at)["summary_chart"]["data"]}
    np.testing.assert_allclose(bars["on itself"], want.self_weight)
    np.testing.assert_allclose(bars["on the previous token"], want.previous_weight)
    np.testing.assert_allclose(bars["on the first token"], want.first_weight)
    np.testing.assert_allclose(bars["spread (entropy ÷ log keys)"], want.normalized_entropy)


def test_one_token_shows_n_a_where_core_has_no_number():
    at = summary(sentence="word")
    df = at.dataframe[0].value
    assert df[COLUMNS["previous_weight"]].isna().all()
    assert df[COLUMNS["normalized_entropy"]].isna().all()
    np.testing.assert_array_equal(df[COLUMNS["self_weight"]], 1.0)
    shown = shown_table(at)
    assert set(shown[COLUMNS["previous_weight"]]) == {"n/a"}
    assert set(shown[COLUMNS["self_weight"]]) == {"1.000"}
    for trace in charts(at)["summary_chart"]["data"]:
        if trace["name"] == "on the previous token":
            assert trace["text"] == ["n/a"] * 4
    assert list(df["in words"]) == ["in 100% of its rows, most weight on itself: a self head"] * 4
    assert at.dataframe[0].proto.placeholder == "n/a"  # what the grid draws for a missing number


def test_a_hand_built_previous_token_head_reads_as_one():
    at = summary(weights="previous", positional="learned")
    df = at.dataframe[0].value
    assert (df[COLUMNS["previous_weight"]] > 0.9).all()
    assert all(
        w == "in 100% of its rows, most weight on the previous token: a previous-token head" for w in df["in words"]
    )


def test_identity_weights_look_at_themselves():
    at = summary(weights="identity", sentence="alpha beta gamma delta")
    df = at.dataframe[0].value
    identity = run(tokenize("alpha beta gamma delta"), replace(DEFAULTS.config, weights="identity")).trace.weights
    rows_on_self = [float(np.mean(w.diagonal() > 0.5)) for w in identity]  # (h,): each head's rows on themselves
    assert [w.split(":")[0] for w in df["in words"]] == [
        f"in {r:.0%} of its rows, most weight on itself" for r in rows_on_self
    ]


def test_64_tokens_16_heads():
    sentence = " ".join(f"w{i}" for i in range(64))
    at = summary(sentence=sentence, d_model="512", n_heads="16", causal="true")
    df = at.dataframe[0].value
    assert len(df) == 16
    np.testing.assert_array_equal(
        df[COLUMNS["first_weight"]], expected(sentence, d_model=512, n_heads=16, causal=True).first_weight
    )
    assert all(len(t["x"]) == 16 for t in charts(at)["summary_chart"]["data"])


def test_minilm_names_its_known_heads_from_the_numbers():
    """Layer 1 head 3 of the pretrained model is a previous-token head (core's metric and threshold)."""
    require_minilm()
    at = summary(weights="minilm", layer="1", sentence="The bank of the river.")
    df = at.dataframe[0].value
    assert len(df) == 12
    assert df["in words"][2].endswith("of its rows, most weight on the previous token: a previous-token head")
    assert df[COLUMNS["previous_weight"]][2] > 0.9
    assert COLUMNS["same_word_weight"] in df  # WordPiece pieces: the same-word column is shown


def test_the_model_view_states_a_heads_name_with_its_share_of_rows():
    """The opened head's name comes with its evidence: the share of rows that meet the pattern."""
    at = make_app(view="model", weights="previous", positional="learned", sentence="a b c d e").run()
    no_exception(at)
    weights = run(
        tokenize("a b c d e"), replace(DEFAULTS.config, weights="previous", positional="learned")
    ).trace.weights
    share = float(np.mean([weights[0, i, i - 1] > 0.5 for i in range(1, 5)]))  # rows 1..4 have a previous token
    [line] = [m.value for m in at.markdown if m.value.startswith("**Layer 1, head 1**")]
    assert f"previous-token ({share:.0%} of rows)" in line


@pytest.mark.parametrize(
    ("sentence", "rows"),
    [
        ("The bank of the river gave a loan", ("over all rows 0–7", "previous token over rows 1–7", "over rows 0–6")),
        ("bank loan", ("over all rows 0–1", "previous token over row 1 ", "next token over row 0 ")),
        ("hello", ("first token (column 0) over row 0;", "previous token over no row", "next token over no row")),
    ],
)
def test_the_caption_names_the_rows_each_column_averages(sentence, rows):
    """One token read "over rows 1–0" and "rows 0–-1", and named a row 1 that does not exist."""
    at = make_app(view="summary", sentence=sentence).run()
    no_exception(at)
    [caption] = [c.value for c in at.caption if c.value.startswith("Each column is a mean")]
    for words in rows:
        assert words in caption, (words, caption)
    assert "–-" not in caption and "1–0" not in caption
    assert ("row 1's previous token" in caption) is (len(sentence.split()) > 1)


@pytest.mark.parametrize("weights", ["trained", "minilm"])
def test_learned_weights_name_the_first_token_by_position_never_by_its_text(weights):
    # the notes are Markdown: MiniLM's first token is [CLS] (a link's brackets) and a trained task's is its symbol
    if weights == "minilm":
        require_minilm()
    at = summary(weights=weights, sentence="the cat sat")
    notes = [m.value for m in at.markdown if "they learned" in m.value]
    assert len(notes) == 1 and "parks its weight on position 0, the first token" in notes[0]
    assert "[CLS]" not in notes[0]

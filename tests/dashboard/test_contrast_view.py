"""The contrast view: a minimal pair's maps, their difference, every head ranked by its change, and the reference.

Expected numbers come from core's runs (``core.run``, ``layer_runs``) and loops written here; the alignment and the
total variation are checked against their own loops in tests/core/test_contrast.py.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core import run, tokenize
from core.head_summary import SPECIFIC, specificity
from dashboard.state.settings import DEFAULT_CONFIG, DEFAULTS
from dashboard.views.contrast import DEFAULT_SECOND, EMPTY_SECOND, PAIRS
from tests.conftest import require_minilm
from tests.dashboard.conftest import array, heatmaps, make_app, no_exception
from tests.dashboard.test_hostile_app import CANARY, MARKUP, user_text_leaks

TIRED, WIDE = PAIRS[0].first, PAIRS[0].second


def charts(at: AppTest) -> dict[str, dict]:
    """The view's three maps by key: contrast_chart_1 (first), _2 (second), _3 (second − first)."""
    out = {}
    for chart in at.get("plotly_chart"):
        key = chart.proto.id.rsplit("-", 1)[-1]
        if re.fullmatch(r"contrast_chart_\d", key):
            out[key] = json.loads(chart.proto.spec)
    return out


def trace_of(fig: dict) -> dict:
    return next(t for t in heatmaps(fig) if t.get("name") != "masked")


def z_of(fig: dict) -> np.ndarray:
    return array(trace_of(fig)["z"]).astype(float)


def text(at: AppTest) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption])


def open_contrast(**query: str) -> AppTest:
    at = make_app(view="contrast", **query).run()
    no_exception(at)
    return at


def loop_change(p: np.ndarray, q: np.ndarray, pairs: list[tuple[int, int]]) -> float:
    """The mean over aligned rows of ½ Σ|p − q| over the union of keys (a key with no partner counts whole)."""
    firsts, seconds = {i for i, _ in pairs}, {j for _, j in pairs}
    rows = []
    for i, j in pairs:
        terms = [abs(q[j, b] - p[i, a]) for a, b in pairs]
        terms += [p[i, a] for a in range(p.shape[1]) if a not in firsts]
        terms += [q[j, b] for b in range(q.shape[1]) if b not in seconds]
        rows.append(0.5 * math.fsum(terms))
    return math.fsum(rows) / len(rows)


def test_the_default_pair_is_drawn_position_by_position_with_its_difference():
    at = open_contrast(contrast_head="3")
    a = run(tokenize(DEFAULTS.sentence), DEFAULT_CONFIG).trace.weights  # (h, T, T)
    b = run(tokenize(DEFAULT_SECOND), DEFAULT_CONFIG).trace.weights
    drawn = charts(at)
    np.testing.assert_allclose(z_of(drawn["contrast_chart_1"]), a[2], atol=1e-6)
    np.testing.assert_allclose(z_of(drawn["contrast_chart_2"]), b[2], atol=1e-6)
    np.testing.assert_allclose(z_of(drawn["contrast_chart_3"]), b[2] - a[2], atol=1e-6)
    labels = trace_of(drawn["contrast_chart_3"])["x"]
    assert labels[4] == "4·river/city" and labels[0] == "0·the"  # the changed word carries both
    coloraxis = drawn["contrast_chart_3"]["layout"]["coloraxis"]
    assert coloraxis["cmin"] == -coloraxis["cmax"] and coloraxis["cmax"] == pytest.approx(np.abs(b[2] - a[2]).max())
    assert "Both sentences have 8 tokens: aligned position by position." in text(at)


def test_every_head_is_ranked_by_the_mean_total_variation_over_aligned_rows():
    at = open_contrast()
    a = run(tokenize(DEFAULTS.sentence), DEFAULT_CONFIG).trace.weights
    b = run(tokenize(DEFAULT_SECOND), DEFAULT_CONFIG).trace.weights
    pairs = [(i, i) for i in range(a.shape[-1])]
    change = [loop_change(a[k], b[k], pairs) for k in range(a.shape[0])]
    table = at.dataframe[0].value
    assert list(table["rank"]) == [1, 2, 3, 4]
    np.testing.assert_allclose(list(table["mean change"]), sorted(change, reverse=True), atol=1e-12)
    for head, value in zip(table["head"], table["mean change"], strict=True):
        assert value == pytest.approx(change[head - 1], abs=1e-12)
    rank = list(table["head"]).index(1) + 1
    assert f"Head 1, drawn above, ranks {rank} of 4: a mean change of {change[0]:.3f}." in text(at)
    assert "total variation" in text(at) and "mean over those rows" in text(at)


def test_a_word_added_is_said_and_the_rest_aligned_by_their_tokens():
    pair = PAIRS[3]
    at = open_contrast(sentence=pair.first, second=pair.second)
    said = text(at)
    assert "The first sentence has 6 tokens, the second 7" in said and "No partner: position 1 of the second." in said
    diff = charts(at)["contrast_chart_3"]
    assert trace_of(diff)["x"] == ["0·the", "1/2·cat", "2/3·sat", "3/4·on", "4/5·the", "5/6·mat"]
    a = run(tokenize(pair.first), DEFAULT_CONFIG).trace.weights[0]
    b = run(tokenize(pair.second), DEFAULT_CONFIG).trace.weights[0]
    pairs = [(0, 0), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)]
    want = np.array([[b[j, q] - a[i, p] for p, q in pairs] for i, j in pairs])
    np.testing.assert_allclose(z_of(diff), want, atol=1e-6)
    table = at.dataframe[0].value
    assert table.loc[table["head"] == 1, "mean change"].item() == pytest.approx(loop_change(a, b, pairs), abs=1e-12)


def test_under_the_causal_mask_the_difference_hides_what_either_sentence_hides():
    at = open_contrast(causal="true")
    diff = charts(at)["contrast_chart_3"]
    z = z_of(diff)
    assert np.isnan(z[np.triu_indices(8, 1)]).all() and not np.isnan(z[np.tril_indices(8)]).any()


# -- the reference: "it" between the animal and the street ---------------------------------------------------------


def minilm_weights(sentence: str) -> tuple[tuple[str, ...], np.ndarray]:
    from core.pretrained import load_minilm
    from core.pretrained.runs import layer_runs

    runs = layer_runs(load_minilm(), sentence)
    return runs[0].tokens, np.stack([r.trace.weights for r in runs])  # (L, h, T, T)


def test_the_animal_and_the_street_with_minilm_say_what_the_weights_of_it_show():
    require_minilm()
    at = open_contrast(weights="minilm", sentence=TIRED, second=WIDE, layer="4", contrast_head="2")
    tokens, a = minilm_weights(TIRED)
    _, b = minilm_weights(WIDE)
    it, animal, street = tokens.index("it"), tokens.index("animal"), tokens.index("street")
    a1, a2, b1, b2 = a[..., it, animal], a[..., it, street], b[..., it, animal], b[..., it, street]  # (L, h)
    spec_a = np.array([[specificity(a[l_, h], it, animal) for h in range(12)] for l_ in range(6)])
    spec_b = np.array([[specificity(b[l_, h], it, street) for h in range(12)] for l_ in range(6)])
    order = (a1 > a2) & (b2 > b1)
    resolves = order & (spec_a >= SPECIFIC) & (spec_b >= SPECIFIC)
    shift = (a1 - a2) - (b1 - b2)
    said = "\n".join(m.value for m in at.markdown)
    assert not resolves.any()  # what the README says of MiniLM on this pair
    assert "No head of the 72 resolves the reference by this rule." in said
    best = np.unravel_index(np.argmax(shift), shift.shape)
    assert best == (3, 1) and b2[best] < b1[best]  # the README: layer 4, head 2, still more on "animal"
    name = f"layer {best[0] + 1}, head {best[1] + 1}"
    assert f"The largest shift, {shift[best]:+.2f}, is {name}'s" in said
    assert f"gives “animal” {a1[best]:.2f} and “street” {a2[best]:.2f} in the first sentence" in said
    assert f"{b1[best]:.2f} and {b2[best]:.2f} in the second" in said
    assert (b2[best] <= b1[best]) == ("still gives “animal” at least as much as “street”" in said)
    flips = order & ~resolves
    if flips.any():
        assert f"{int(flips.sum())} heads give “animal” more of the weight of “it” than “street”" in said
    # every head the text names is one these numbers single out: the drawn one, the best, a flip or a resolver
    named = {(int(m[0]), int(m[1])) for m in re.findall(r"\blayer (\d+), head (\d+)", said, flags=re.IGNORECASE)}
    allowed = {(4, 2), (best[0] + 1, best[1] + 1)} | {(int(l_) + 1, int(h) + 1) for l_, h in np.argwhere(order)}
    assert named and named <= allowed, named - allowed
    table = at.dataframe[1].value  # the reference's table, the largest shift first
    assert list(table["shift"])[:3] == pytest.approx(sorted(shift.ravel(), reverse=True)[:3], abs=1e-6)
    assert set(table["resolves"]) <= {"yes", "no"} and (table["resolves"] == "yes").sum() == resolves.sum()


def test_the_reference_is_measured_only_for_a_pair_that_carries_one():
    at = open_contrast(sentence=TIRED, second=WIDE)
    assert any("Where “it” looks" in s.value for s in at.subheader)
    assert any("These weights are random" in c.value for c in at.caption)
    other = open_contrast(sentence=TIRED, second=WIDE.replace("wide", "slow"))
    assert not any("Where “it” looks" in s.value for s in other.subheader)


# -- what a student may type as the second sentence -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("second", "kind", "words"),
    [
        ("", "info", EMPTY_SECOND),
        ("  \t ", "info", EMPTY_SECOND),
        ("\x00\x1b", "error", "nothing to analyse"),
        (" ".join(["w"] * 65), "error", "limit is 64"),
        ("x" * 100_000, "error", "characters"),
    ],
    ids=["empty", "blank", "control", "65 tokens", "100k"],
)
def test_a_second_sentence_that_cannot_be_read_says_why_and_draws_nothing(second, kind, words):
    at = open_contrast(second=second)
    assert any(words in m.value for m in getattr(at, kind)), [m.value for m in getattr(at, kind)]
    assert not charts(at)


def test_markup_emoji_and_right_to_left_in_the_second_sentence_are_drawn_as_text():
    second = f"The bank of the {CANARY} {MARKUP['bold']} {MARKUP['md-link']} :red[hi] 👩‍👩‍👧 שלום \u202eright loan"
    at = open_contrast(second=second)
    assert not at.error
    assert not user_text_leaks(at, CANARY)
    for raw in MARKUP.values():
        assert not user_text_leaks(at, raw), raw
    tokens = tokenize(second)
    labels = trace_of(charts(at)["contrast_chart_2"])["x"]
    assert labels == [
        f"{i}·{t.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')}" for i, t in enumerate(tokens)
    ]
    for fig in charts(at).values():
        for trace in heatmaps(fig):
            for label in trace["x"]:
                assert "<" not in label and ">" not in label


def test_a_trained_model_compares_with_random_weights_of_its_shape_and_says_so():
    at = open_contrast(weights="trained", task="shift")
    assert any("random weights of the same shape" in i.value for i in at.info)
    assert charts(at)


# -- the pairs, and a second sentence from elsewhere (a student's, later): one argument --------------------------------


def test_a_pair_button_sets_both_sentences_and_the_address():
    at = open_contrast()
    at.button(key="contrast_pair_0").click().run()
    no_exception(at)
    assert at.text_input(key="sentence").value == TIRED and at.text_input(key="second").value == WIDE
    address = dict(at.query_params)
    assert address["sentence"] == TIRED and address["second"] == WIDE
    opened = make_app(**address).run()
    np.testing.assert_array_equal(z_of(charts(opened)["contrast_chart_3"]), z_of(charts(at)["contrast_chart_3"]))


def _contrast_with_a_student():
    from dashboard.state.followed import OWN
    from dashboard.state.settings import Settings
    from dashboard.views.contrast import show_contrast

    show_contrast(Settings(), OWN, "The bank of the sea gave a loan")


def test_a_second_sentence_passed_in_is_used_instead_of_the_box():
    at = AppTest.from_function(_contrast_with_a_student, default_timeout=30).run()
    no_exception(at)
    assert not [t for t in at.text_input if t.key == "second"]
    b = run(tokenize("The bank of the sea gave a loan"), DEFAULT_CONFIG).trace.weights[0]
    np.testing.assert_allclose(z_of(charts(at)["contrast_chart_2"]), b, atol=1e-6)


def test_two_sentences_with_no_token_in_common_are_drawn_and_nothing_is_measured():
    at = open_contrast(second="dogs bark loudly")
    assert any("No token of one sentence is paired" in w.value for w in at.warning)
    assert sorted(charts(at)) == ["contrast_chart_1", "contrast_chart_2"] and not at.dataframe


def test_the_verdict_names_a_resolving_head_and_says_what_the_others_lack():
    """A made-up reading of two layers of two heads: (1, 1) resolves, (1, 2) flips without being specific, (2, 1)
    keeps "it" on the animal, (2, 2) moves nothing."""
    from core.contrast import Reference, ReferenceReading
    from dashboard.views.contrast import reference_verdict

    def grid(*values):
        return np.array(values, dtype=float).reshape(2, 2)

    reading = ReferenceReading(
        query=(7, 7),
        nouns_first=(1, 5),
        nouns_second=(1, 5),
        first_on_first=grid(0.8, 0.3, 0.6, 0.2),
        first_on_second=grid(0.1, 0.2, 0.1, 0.2),
        second_on_first=grid(0.1, 0.1, 0.5, 0.2),
        second_on_second=grid(0.7, 0.3, 0.2, 0.2),
        specific_first=grid(0.5, 0.1, 0.4, 0.0),
        specific_second=grid(0.4, 0.2, 0.0, 0.0),
    )
    lines = reference_verdict(reading, Reference("it", "animal", "street"))
    assert lines[0] == "1 of the 4 heads resolves the reference by this rule: layer 1, head 1."
    assert lines[1].startswith("1 head gives “animal” more of the weight of “it” than “street”")
    assert "(layer 1, head 2)" in lines[1] and "0.10 and 0.20" in lines[1]
    assert lines[2].startswith("The largest shift, +1.30, is layer 1, head 1's") and lines[2].endswith("second.")

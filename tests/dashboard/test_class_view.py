"""The class view: one head on every sentence of a list, and its patterns with the rows of all of them pooled.

Every expected number is computed here from core's runs (``core.run``, ``layer_runs``, the trained model's held-out
set), never read from the page; the pooling itself is checked against a row loop in tests/core/test_across.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core import run, tokenize
from core.across import OneMap, pooled_patterns
from core.training import load_trained
from core.training.probes import probe_set
from core.training.runs import runs_of
from dashboard.state.settings import DEFAULT_CONFIG
from dashboard.views.class_heads import BUILT_IN, DEFAULT_TEXT, MAX_SENTENCES
from tests.conftest import require_minilm
from tests.dashboard.conftest import array, heatmaps, make_app, no_exception
from tests.dashboard.test_hostile_app import CANARY, FAMILY, MARKUP, user_text_leaks


def class_charts(at: AppTest) -> list[dict]:
    """The class view's maps, one figure each, in page order (keys ``class_chart_1``...)."""
    found = {}
    for chart in at.get("plotly_chart"):
        key = chart.proto.id.rsplit("-", 1)[-1]
        if re.fullmatch(r"class_chart_\d+", key):
            found[int(key.rsplit("_", 1)[1])] = json.loads(chart.proto.spec)
    return [found[k] for k in sorted(found)]


def z_of(fig: dict) -> np.ndarray:
    [trace] = [t for t in heatmaps(fig) if t.get("name") != "masked"]
    return array(trace["z"]).astype(float)


def title_of(fig: dict) -> str:
    [title] = [a["text"] for a in fig["layout"]["annotations"] if a.get("name") == "title"]
    return title


def verdict(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def open_class(**query: str) -> AppTest:
    at = make_app(view="class", **query).run()
    no_exception(at)
    return at


def config_maps(sentences, config=DEFAULT_CONFIG, head: int = 0) -> list[OneMap]:
    out = []
    for s in sentences:
        tr = run(tokenize(s), config).trace
        out.append(OneMap(tr.weights[head], tr.mask))
    return out


def test_the_built_in_sentences_are_drawn_with_the_chosen_head_and_pooled():
    at = open_class(class_head="2")
    maps = config_maps(BUILT_IN, head=1)
    drawn = class_charts(at)
    assert len(drawn) == len(BUILT_IN) == 12
    for fig, m, (n, sentence) in zip(drawn, maps, enumerate(BUILT_IN, 1), strict=True):
        np.testing.assert_allclose(z_of(fig), m.weights, rtol=0, atol=1e-6)  # float32 on the wire
        assert title_of(fig).startswith(f"{n} · {sentence[:10]}")
    said = verdict(at)
    assert "**Head 2** across 12 sentences" in said
    for p in pooled_patterns(maps):
        if p.named:
            assert f"**{p.name}**: {p.share:.0%} of {p.rows_measured} rows, over 12 sentences" in said
    if not any(p.named for p in pooled_patterns(maps)):
        assert "No pattern across the sentences" in said
    assert any("These weights are random" in c.value for c in at.caption)


def test_the_hand_built_previous_head_is_named_across_the_sentences_with_its_rows_counted():
    at = open_class(weights="previous", positional="learned")
    maps = config_maps(BUILT_IN, replace(DEFAULT_CONFIG, weights="previous", positional="learned"))
    [previous] = [p for p in pooled_patterns(maps) if p.name == "previous-token"]
    rows = sum(len(tokenize(s)) - 1 for s in BUILT_IN)  # every row but the first has a previous token
    assert previous.named and previous.rows_measured == rows
    assert f"**previous-token**: {previous.share:.0%} of {rows} rows, over 12 sentences" in verdict(at)
    assert not any("These weights are random" in c.value for c in at.caption)


def test_a_head_named_on_one_sentence_but_not_across_them_says_so():
    """One token can only look at itself: on it every head is a "self" head, and across the list it is not."""
    text = "cat\n" + "\n".join(BUILT_IN[:3])
    at = open_class(class_text=text)
    maps = config_maps(["cat", *BUILT_IN[:3]])
    [self_] = [p for p in pooled_patterns(maps) if p.name == "self"]
    assert self_.named_on == (0,) and not self_.named  # computed here: the case this test is about
    said = verdict(at)
    assert (
        f"**self** on sentence 1 (1 of 4), but not across them: {self_.share:.0%} of {self_.rows_measured} rows" in said
    )
    assert "it is not that head across the class" in said


def test_minilm_s_previous_piece_head_is_named_on_every_sentence():
    require_minilm()
    from core.pretrained import load_minilm

    model = load_minilm()
    at = open_class(weights="minilm", layer="1", class_head="3")
    rows = sum(len(model.encode(s).ids) - 1 for s in BUILT_IN)  # [CLS] and [SEP] included, row 0 has no previous
    assert rows == 125  # the README quotes this line
    assert f"**previous-token**: 100% of {rows} rows, over 12 sentences." in verdict(at)
    assert "**Layer 1, head 3** across 12 sentences" in verdict(at)


def test_a_trained_model_shows_its_held_out_sequences():
    at = open_class(weights="trained", task="shift")
    result = load_trained("shift")
    sequences = probe_set(result).inputs[:12]
    drawn = class_charts(at)
    assert len(drawn) == 12
    maps = []
    for fig, tokens in zip(drawn, sequences, strict=True):
        first = runs_of(result, tokens)[0]
        np.testing.assert_allclose(z_of(fig)[first.trace.mask], first.trace.weights[0][first.trace.mask], atol=1e-6)
        maps.append(OneMap(first.trace.weights[0], first.trace.mask))
    [previous] = [p for p in pooled_patterns(maps) if p.name == "previous-token"]
    said = verdict(at)
    assert f"{previous.share:.0%} of {previous.rows_measured} rows, over 12 sequences" in said
    assert any("12 sequences of its held-out set" in c.value for c in at.caption)
    assert not at.text_area  # no typed list: the model reads none


# -- what a teacher may type ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n\t\n  "], ids=["empty", "blank lines"])
def test_no_sentence_says_how_to_give_one_and_draws_nothing(text):
    at = open_class(class_text=text)
    assert any("No sentence" in i.value for i in at.info)
    assert not class_charts(at)


def test_the_box_cleared_by_hand_says_so_and_the_button_brings_the_examples_back():
    at = open_class()
    at.text_area(key="class_text").input("").run()
    no_exception(at)
    assert any("No sentence" in i.value for i in at.info) and not class_charts(at)
    at.button(key="class_examples").click().run()
    no_exception(at)
    assert at.text_area(key="class_text").value == DEFAULT_TEXT and len(class_charts(at)) == 12


def test_a_sentence_the_weights_cannot_read_is_left_out_by_number_and_the_rest_are_drawn():
    too_long = " ".join(f"w{i}" for i in range(65))
    text = "\n".join([BUILT_IN[0], "\x00\x1b", too_long, BUILT_IN[1]])
    at = open_class(class_text=text)
    warned = [w.value for w in at.warning]
    assert any(w.startswith("Sentence 2 is left out:") and "nothing to analyse" in w for w in warned), warned
    assert any(w.startswith("Sentence 3 is left out:") and "65" in w for w in warned), warned
    drawn = class_charts(at)
    assert [title_of(f)[:2] for f in drawn] == ["1 ", "4 "]  # numbered as listed: 2 and 3 are missing
    assert "across 2 sentences" in verdict(at)
    assert not any("w64" in w for w in warned)  # the page names numbers, never the text


def test_past_the_limit_the_lines_are_counted_not_read():
    text = "\n".join(f"sentence number {i} is here" for i in range(MAX_SENTENCES + 5))
    at = open_class(class_text=text)
    assert any(f"Only the first {MAX_SENTENCES} sentences are read: 5 left out." in w.value for w in at.warning)
    assert f"across {MAX_SENTENCES} sentences" in verdict(at)
    assert len(class_charts(at)) == 12  # the first 12 drawn; every one counted
    assert any(f"The first 12 of {MAX_SENTENCES} sentences are drawn" in c.value for c in at.caption)


def test_a_list_longer_than_the_box_takes_is_cut_to_it_without_an_error():
    at = open_class(class_text="word " * 3000)  # 15,000 characters in a link
    assert len(at.text_area(key="class_text").value) <= 4000
    assert not at.error


HOSTILE_LINES = [
    f"{CANARY} {MARKUP['bold']} and {MARKUP['img']}",
    f"{CANARY} {MARKUP['md-link']} {MARKUP['st-color']}",
    f"{CANARY} {MARKUP['latex-href']}",
    f"{CANARY} {FAMILY} family שלום עולם مرحبا",
    f"{CANARY} left \u202eright zero\u200bwidth",
]


def test_markup_emoji_and_right_to_left_lines_are_drawn_as_text_and_never_rendered():
    at = open_class(class_text="\n".join(HOSTILE_LINES))
    assert not at.error and not at.warning
    drawn = class_charts(at)
    assert len(drawn) == len(HOSTILE_LINES)
    assert not user_text_leaks(at, CANARY)  # no Markdown, alert or label carries the typed text
    for raw in MARKUP.values():
        assert not user_text_leaks(at, raw), raw
    for fig, line in zip(drawn, HOSTILE_LINES, strict=True):
        title = title_of(fig)
        assert "<" not in title.replace("&lt;", "") and ">" not in title.replace("&gt;", "")
        assert "\u202e" not in title and "\u200b" not in title  # invisible direction and width marks: spaces
        tokens = tokenize(line)
        trace = next(t for t in heatmaps(fig) if t.get("name") != "masked")
        assert trace["x"] == [
            f"{i}·{t.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')}" for i, t in enumerate(tokens)
        ]
    assert FAMILY in title_of(drawn[3])  # the emoji keeps its joiners


# -- on a projector -------------------------------------------------------------------------------------------------


def test_on_a_projector_the_maps_are_small_multiples_with_their_tokens_in_the_hover():
    at = open_class(presenter="true")
    drawn = class_charts(at)
    assert len(drawn) == 12
    for fig in drawn:
        layout = fig["layout"]
        assert not layout["xaxis"]["showticklabels"] and not layout["yaxis"]["showticklabels"]
        trace = next(t for t in heatmaps(fig) if t.get("name") != "masked")
        assert "%{x}" in trace["hovertemplate"] and "%{y}" in trace["hovertemplate"]


# -- a list from elsewhere (a room's sentences, later): one argument ---------------------------------------------------


def _class_of_a_room():
    from dataclasses import replace

    from dashboard.state.followed import OWN
    from dashboard.state.settings import Settings
    from dashboard.views.class_heads import show_class

    config = replace(Settings().config, weights="previous", positional="learned")
    show_class(Settings(weights="previous", config=config), OWN, ["a b c d", "e f"])


def test_a_list_passed_in_is_drawn_instead_of_the_box():
    at = AppTest.from_function(_class_of_a_room, default_timeout=30).run()
    no_exception(at)
    assert not at.text_area  # nothing to type: the list came with the call
    drawn = class_charts(at)
    assert [len(z_of(f)) for f in drawn] == [4, 2]
    config = replace(DEFAULT_CONFIG, weights="previous", positional="learned")
    [previous] = [p for p in pooled_patterns(config_maps(["a b c d", "e f"], config)) if p.name == "previous-token"]
    assert f"**previous-token**: {previous.share:.0%} of 4 rows, over 2 sentences" in verdict(at)

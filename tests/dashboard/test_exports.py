"""Exports: the weights CSV reads back to the trace's weights exactly, every array survives the .npz,
token cells cannot run as spreadsheet formulas, and the page offers both files and keeps Plotly's PNG button."""

from __future__ import annotations

import ast
import csv
import dataclasses
import io
import json

import numpy as np
import pandas as pd
import pytest

from core import AttentionConfig, AttentionTrace, run, tokenize
from dashboard.page.exports import (
    CSV_COLUMNS,
    FORMULA_STARTS,
    cell_from_token,
    csv_bytes,
    figure_stem,
    file_stem,
    token_from_cell,
    trace_arrays,
    trace_npz,
    weights_csv,
    weights_frame,
)
from dashboard.state.settings import DEFAULTS
from tests.conftest import ROOT
from tests.dashboard.conftest import make_app, no_exception

RUNS = {
    "self": (tokenize("The bank of the river gave a loan"), None, AttentionConfig()),
    "causal-learned": (
        tokenize("a b c a"),
        None,
        AttentionConfig(d_model=32, n_heads=8, causal=True, positional="learned"),
    ),
    "cross-rope-causal": (
        tokenize("the cat sat"),
        tokenize("le chat est assis sur le tapis"),
        AttentionConfig(d_model=16, n_heads=2, causal=True, positional="rope"),
    ),
    "one-token": (["x"], None, AttentionConfig(d_model=8, n_heads=1)),
}


def read_back(data: bytes) -> pd.DataFrame:
    """The CSV as a student's pandas reads it: tokens kept as text ("nan", "1" stay strings)."""
    return pd.read_csv(
        io.BytesIO(data),
        encoding="utf-8-sig",
        dtype={"query_token": str, "key_token": str},
        keep_default_na=False,
    )


@pytest.mark.parametrize("name", RUNS)
def test_csv_reads_back_to_the_traces_weights_exactly(name):
    tokens, source, config = RUNS[name]
    r = run(tokens, config, source=source)
    w = r.trace.weights  # (h, T_q, T_k) float64
    back = read_back(weights_csv(r))
    assert tuple(back.columns) == CSV_COLUMNS
    assert len(back) == w.size
    # each row names its cell: look the weight up by (head, query, key), independent of row order
    head = back["head"].to_numpy() - 1  # heads count from 1, as in the figure titles
    q, k = back["query_position"].to_numpy(), back["key_position"].to_numpy()
    assert back["weight"].dtype == np.float64
    np.testing.assert_array_equal(back["weight"].to_numpy(), w[head, q, k])  # bit for bit, no tolerance
    assert set(zip(head, q, k, strict=True)) == {tuple(i) for i in np.ndindex(w.shape)}  # every cell once
    keys = r.key_tokens
    assert [token_from_cell(c) for c in back["query_token"]] == [tokens[i] for i in q]
    assert [token_from_cell(c) for c in back["key_token"]] == [keys[j] for j in k]
    mask = np.ones(w.shape, dtype=bool) if r.trace.mask is None else np.broadcast_to(r.trace.mask, w.shape)
    np.testing.assert_array_equal(back["masked"].to_numpy(), ~mask[head, q, k])
    assert (back.loc[back["masked"], "weight"] == 0).all()


def test_csv_float_text_round_trips_hard_values():
    """Values whose shortest text needs 17 digits, subnormals and exact 0 and 1 survive the text form."""
    hard = np.array([[[1 / 3, 0.1, 2 / 3], [5e-324, 1e-300, 1 - 2**-53], [0.0, 1.0, np.nextafter(0.5, 1)]]])
    back = read_back(csv_bytes(weights_frame(hard, ["a", "b", "c"])))
    np.testing.assert_array_equal(back["weight"].to_numpy(), hard.ravel())


def test_words_pandas_would_read_as_missing_or_numbers_stay_text():
    r = run(tokenize("nan null 1 2.5"), AttentionConfig(d_model=8, n_heads=1))
    data = weights_csv(r)
    assert list(read_back(data)["query_token"][:: len(r.tokens)]) == ["nan", "null", "1", "2.5"]
    assert pd.read_csv(io.BytesIO(data))["query_token"].isna().any()  # why read_back passes dtype and NA options


FORMULAS = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1:A2)", "\t=1", "\r=1", '=HYPERLINK("x")']


def raw_cells(data: bytes) -> list[list[str]]:
    """The CSV's cells exactly as written (the csv module does no type guessing)."""
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))


def test_formula_tokens_are_written_as_text_and_come_back_exactly():
    tokens = [*FORMULAS, "'already quoted", "plain", "−1"]  # U+2212 minus is not a formula start
    w = np.full((1, len(tokens), len(tokens)), 1 / len(tokens))
    data = csv_bytes(weights_frame(w, tokens))
    rows = raw_cells(data)[1:]
    for row in rows:
        for cell in row:  # no cell of any column starts like a formula (weights are never negative)
            assert not cell.startswith(FORMULA_STARTS), row
    query_cells = [row[2] for row in rows[:: len(tokens)]]
    assert query_cells[: len(FORMULAS)] == ["'" + f for f in FORMULAS]
    assert query_cells[len(FORMULAS) :] == ["''already quoted", "plain", "−1"]
    assert [token_from_cell(c) for c in query_cells] == tokens


def test_formula_characters_typed_in_a_sentence_are_quoted():
    tokens = tokenize("=1+2 @home -x")
    assert {"=", "+", "@", "-"} <= set(tokens)  # the tokenizer makes them tokens of their own
    r = run(tokens, AttentionConfig(d_model=8, n_heads=2, causal=True))
    cells = {row[2] for row in raw_cells(weights_csv(r))[1:]}
    assert {"'=", "'+", "'@", "'-"} <= cells and "=" not in cells


@pytest.mark.parametrize("token", ["", "a", "=", "'", "''", "'=", "==", "-", "+x", "@", "\t", "é", "👨‍👩‍👧"])
def test_cell_from_token_is_invertible(token):
    cell = cell_from_token(token)
    assert token_from_cell(cell) == token
    assert not cell.startswith(FORMULA_STARTS)


def test_weights_frame_refuses_mismatched_tokens():
    with pytest.raises(ValueError):
        weights_frame(np.ones((1, 2, 3)), ["a", "b"])  # 3 keys, no key tokens given


RENAMED = {"x": "x_embedded", "positions": "positions", "source_x": "source_x_embedded", "scores": "scores_scaled"}
"""Run and trace fields the .npz names for what they are (the others keep their field names)."""


@pytest.mark.parametrize("name", RUNS)
def test_npz_round_trips_every_array(name):
    tokens, source, config = RUNS[name]
    r = run(tokens, config, source=source)
    with np.load(io.BytesIO(trace_npz(r)), allow_pickle=False) as npz:
        loaded = {key: npz[key] for key in npz.files}
    expected = {f.name: getattr(r.trace, f.name) for f in dataclasses.fields(AttentionTrace)}
    expected |= {f.name: getattr(r, f.name) for f in dataclasses.fields(r) if f.name not in ("tokens", "trace")}
    expected |= {f.name: getattr(r.projections, f.name) for f in dataclasses.fields(r.projections)}
    expected = {RENAMED.get(k, k): v for k, v in expected.items() if isinstance(v, np.ndarray | float)}
    expected["x_input"] = r.x + r.positions
    expected["scores_masked"] = (
        r.trace.scores if r.trace.mask is None else np.where(r.trace.mask, r.trace.scores, -np.inf)
    )
    if source is not None:
        expected["source_x_input"] = r.source_x + r.source_positions
    assert set(expected) | {"tokens", "key_tokens", "settings"} == set(loaded)
    for key, value in expected.items():
        value = np.asarray(value)
        assert loaded[key].dtype == value.dtype, key
        np.testing.assert_array_equal(loaded[key], value, err_msg=key)  # exact
    assert list(loaded["tokens"]) == list(tokens)
    assert list(loaded["key_tokens"]) == list(source or tokens)
    if source is not None:
        assert loaded["weights"].shape == (config.n_heads, len(tokens), len(source))
        assert {"source_x_embedded", "source_positions", "mask", "q_unrotated", "k_unrotated"} <= set(loaded)


def test_trace_arrays_names_each_array_for_what_it_is():
    r = run(tokenize("a b"), AttentionConfig(d_model=8, n_heads=2, causal=True))
    names = set(trace_arrays(r))
    assert {"x_embedded", "positions", "x_input", "q", "k", "v", "weights", "context", "concat", "output"} <= names
    assert {"scores_scaled", "scores_masked", "scale", "settings", "mask"} <= names
    assert not {"x", "scores"} & names  # no bare name a student must guess the meaning of
    assert {"w_q", "w_k", "w_v", "w_o"} <= names and "b_q" not in names  # random weights have no biases
    assert "source_x_embedded" not in names  # no source: nothing to save
    masked = trace_arrays(r)["scores_masked"]
    assert np.isneginf(masked[:, 0, 1]).all() and np.isfinite(masked[:, 1, :]).all()  # the mask's -inf, where it is


def test_a_later_layer_has_no_embedding_of_its_own():
    """Layer 2 reads layer 1's output: the file gives x_input, and no x_embedded that would not be one."""
    r = dataclasses.replace(
        run(tokenize("a b c"), AttentionConfig(d_model=8, n_heads=2)), layer=2, input_from="layer 1's output"
    )
    arrays = trace_arrays(r)
    assert "x_embedded" not in arrays and "positions" not in arrays
    np.testing.assert_array_equal(arrays["x_input"], r.x + r.positions)
    assert json.loads(str(arrays["settings"]))["input_from"] == "layer 1's output"


def test_file_names_carry_the_short_settings_never_the_sentence():
    r = run(tokenize("secret words here"), AttentionConfig(d_model=32, n_heads=8, causal=True, seed=7))
    assert file_stem("heads", r, 7) == "heads_d32_h8_causal_seed7"
    assert file_stem("cross", r, None) == "cross_d32_h8_causal"  # weights that take no seed: none in the name
    later = dataclasses.replace(r, layer=3, input_from="layer 2's output")
    assert file_stem("heads", later, None) == "heads_d32_h8_causal_layer3"


def test_exports_module_is_pure():
    """No Streamlit in the builders: they are testable (and reusable) without a server."""
    tree = ast.parse((ROOT / "dashboard" / "page" / "exports.py").read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(name and name.startswith("streamlit") for name in imported)


@pytest.mark.parametrize(("view", "stem"), [("heads", "heads"), ("cross", "cross")])
def test_views_offer_both_downloads_and_a_png_button_named_for_the_settings(view, stem):
    at = make_app(view=view).run()
    at.session_state[f"{stem}_downloads"] = True  # their expander, opened: it draws them only while open
    at.run()
    no_exception(at)
    buttons = {b.proto.id.rsplit("-", 1)[-1]: b.proto for b in at.get("download_button")}
    assert set(buttons) == {f"{stem}_csv", f"{stem}_npz"}
    assert all(b.ignore_rerun and b.deferred_file_id for b in buttons.values())  # built on click, no rerun
    for chart in at.get("plotly_chart"):
        if chart.proto.id.endswith("_bar"):  # a map grid's colour bar: a key to the maps, not a chart to save
            continue
        config = json.loads(chart.proto.config)
        assert config.get("displayModeBar", True) is not False
        assert "toImage" not in config.get("modeBarButtonsToRemove", [])
        options = config["toImageButtonOptions"]
        assert options["format"] == "png" and options["scale"] == 2  # a laptop's or phone's chart: a PNG
        key = chart.proto.id.rsplit("-", 1)[-1]
        assert (
            options["filename"]
            == f"{view}_d{DEFAULTS.config.d_model}_h{DEFAULTS.config.n_heads}_full_seed{DEFAULTS.config.seed}_{key}"
        )


@pytest.mark.parametrize("view", ["heads", "steps", "permutation", "cross", "model", "scaling", "summary", "flash"])
def test_in_presenter_mode_every_chart_saves_an_svg_at_its_drawn_size_named_for_view_and_settings(view):
    """A lecturer's slides: the camera button of every chart with a toolbar saves SVG (plotly.js renders it in the
    browser) at the size drawn on the projector (no width or height of its own), its name the view, the settings
    and the chart; the sentence never in it."""
    at = make_app(view=view, presenter="true", d_model="128", n_heads="8", causal="true", seed="7").run()
    no_exception(at)
    charts = [c for c in at.get("plotly_chart") if json.loads(c.proto.config).get("displayModeBar", True)]
    assert charts, f"the {view} view drew no chart with a toolbar"
    for chart in charts:
        options = json.loads(chart.proto.config)["toImageButtonOptions"]
        key = chart.proto.id.rsplit("-", 1)[-1]
        assert options["format"] == "svg" and options["width"] is None and options["height"] is None
        assert options["filename"].startswith(f"{view}_d128_h8_causal_seed7_")
        assert options["filename"].endswith(key) and "bank" not in options["filename"]


def test_figure_stems_name_every_setting_that_changes_the_maps():
    base = AttentionConfig(d_model=64, n_heads=4, seed=3)
    assert figure_stem("heads", base) == "heads_d64_h4_full_seed3"
    varied = dataclasses.replace(base, causal=True, kv_heads=2, window=3, prefix=2, alibi=True, positional="rope")
    assert figure_stem("steps", varied, layer=2) == "steps_d64_h4_kv2_causal_window3_prefix2_alibi_rope_layer2_seed3"
    assert figure_stem("heads", base, weights="identity") == "heads_d64_h4_full_identity_seed3"
    assert figure_stem("model", base, weights="minilm", layer=3) == "model_minilm_layer3"
    stems = {
        figure_stem("heads", dataclasses.replace(base, **{k: v}))
        for k, v in [
            ("d_model", 128),
            ("n_heads", 8),
            ("causal", True),
            ("seed", 4),
            ("alibi", True),
            ("scaled", False),
            ("positional", "sinusoidal"),
            ("window", 2),
            ("prefix", 1),
            ("kv_heads", 1),
            ("weights", "previous"),
        ]
    }
    assert len(stems) == 11 and figure_stem("heads", base) not in stems  # each setting shows in the name

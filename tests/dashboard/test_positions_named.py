"""Positions named in words are the positions the maps label: counted from 0, as the axes' ``i·token``.

Every tour note and every view sentence that names a row, a key or a position is read as the page shows it (AppTest
runs the app) and compared with the labels of the map drawn beside it (the figure JSON, read through
``tests/dashboard/conftest.py``): each number must be a label the map carries, and the one the claim is about (the
last query is the last row, the keys a query sees are the cells its row leaves unmasked, the row a cache step adds
is the last row decoded). Heads, layers, steps and blocks are counted from 1, as their titles are.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from dashboard.classroom.tours import load_tours
from tests.dashboard.charts import charts, grids, masked
from tests.dashboard.conftest import heatmaps, make_app, no_exception

TOURS = load_tours()
STEPS = [(slug, n) for slug, tour in TOURS.items() for n in range(1, len(tour.steps) + 1)]
MAPS = {
    "heads": "heads_chart",
    "steps": "step_weights_chart",
    "kv_cache": "cache_rows_chart",
    "flash": "flash_block_chart",
    "permutation": "permutation_chart",
    "cross": "cross_chart",
}
"""The map a view's positions are about, by view: its weights (the steps view's softmax step)."""
NUMBERS = r"(\d+(?:(?:, | to |–| and )\d+)*)"
MENTION = re.compile(rf"\b(?:[Rr]ows?|[Pp]ositions?|[Kk]eys?)\s+{NUMBERS}")
"""A row, a position or a key named by number: "row 0", "keys 7, 8, 9", "positions 0 to 4", "keys 0–2"."""


def numbers(text: str) -> list[int]:
    """Every number of a mention, a range by its two ends."""
    return [int(n) for n in re.findall(r"\d+", text)]


def index(label: str) -> int:
    """The position a map label carries: ``"3·river" -> 3``."""
    head, dot, _ = label.partition("·")
    assert dot and head.isdigit(), label
    return int(head)


def labelled(at, view: str) -> tuple[list[str], list[str]]:
    """(row labels, key labels) of the view's map; for the tokens view (no map), its table's positions."""
    if view == "tokens":
        table = at.dataframe[0].value
        labels = [f"{p}·{t}" for p, t in zip(table["position"], table["token"], strict=True)]
        return labels, labels
    first = heatmaps(charts(at)[MAPS[view]])[0]
    return list(first["y"]), list(first["x"])


def shown_note(at, note: str) -> str:
    """The note as the page shows it: the page's string that holds the note's text up to its first fact."""
    start = note.split("{", 1)[0][:60]
    found = [s for s in (*(m.value for m in at.markdown), *(c.value for c in at.caption)) if start in s]
    assert found, start
    return max(found, key=len)


def visible(fig: dict, panel: int = 0) -> np.ndarray:
    """True where the map's panel draws a cell: not covered by the masked overlay."""
    z = grids(fig)[panel]
    hidden = masked(fig)
    return ~hidden[panel] if hidden else np.ones_like(z, dtype=bool)


# What each kind of sentence is about, checked on the drawn map: (pattern, check(match, at, rows, keys)).
def _row_token(m, at, rows, keys):
    assert f"{m[1]}·{m[2]}" in rows, (m[0], rows)


def _token_at(m, at, rows, keys):
    assert f"{m[2]}·{m[1]}" in keys, (m[0], keys)


def _all_positions(m, at, rows, keys):
    assert list(range(int(m[1]), int(m[2]) + 1)) == [index(label) for label in rows], (m[0], rows)


def _last_query_sees(m, at, rows, keys):
    assert int(m[1]) == index(rows[-1]), (m[0], rows[-1])  # the last query is the last row
    seen = visible(charts(at)[MAPS["steps"]])[-1]  # (T_k,) the keys the drawn last row leaves unmasked
    assert numbers(m[2]) == [index(keys[j]) for j in np.flatnonzero(seen)], m[0]


def _cache_step_row(m, at, rows, keys):
    step, row = int(m[1]), int(m[2])
    assert row == step - 1, m[0]  # steps from 1, positions from 0
    assert index(rows[row]) == row
    drawn = visible(charts(at)[MAPS["kv_cache"]]).any(axis=-1)  # (T,) rows with a drawn cell
    assert drawn[row] and not drawn[row + 1 :].any(), m[0]  # the last row decoded so far


def _only_weight(m, at, rows, keys):
    row = int(m[1])
    assert index(rows[row]) == row and visible(charts(at)[MAPS["heads"]])[row].sum() == 1, m[0]


ABOUT = [
    (re.compile(r"\b[Rr]ow (\d+), “([^”]+)”"), _row_token),
    (re.compile(r"“([^”]+)” at position (\d+)"), _token_at),
    (re.compile(r"positions (\d+) to (\d+)"), _all_positions),
    (re.compile(rf"last query, at position (\d+), sees only keys {NUMBERS}"), _last_query_sees),
    (re.compile(r"step (\d+) adds the row of position (\d+)"), _cache_step_row),
    (re.compile(r"row (\d+)'s only weight"), _only_weight),
]


@pytest.mark.parametrize(("slug", "number"), STEPS, ids=[f"{s}-{n}" for s, n in STEPS])
def test_every_position_a_tour_note_names_is_a_label_of_its_map_and_the_one_meant(slug, number):
    step = TOURS[slug].steps[number - 1]
    mentions = MENTION.findall(step.note) + re.findall(r"\{(last_query|last_sees|cache_position)\}", step.note)
    if not mentions:
        return  # nothing to check: the note names no position
    at = make_app(tour=slug, tour_step=str(number)).run()
    no_exception(at)
    note = shown_note(at, step.note)
    rows, keys = labelled(at, step.settings["view"])
    named = [n for found in MENTION.findall(note) for n in numbers(found)]
    assert named, note
    assert set(named) <= {index(label) for label in rows + keys}, (note, rows)
    about = [(m, check) for pattern, check in ABOUT for m in pattern.finditer(note)]
    for m, check in about:
        check(m, at, rows, keys)
    assert about or step.note.count("{") == 0, note  # a fact-filled position is always checked for what it means


def test_the_tours_name_positions_where_the_checks_look():
    """The notes this file's checks were written for still say what they are checked for (a reworded note must
    not slip past them), and the old 1-based wording would fail: position 10 is no label of a 10-token map."""
    notes = {(slug, n): s.note for slug, t in TOURS.items() for n, s in enumerate(t.steps, 1)}
    for (slug, n), pattern in {
        ("todays-models", 4): r"last query, at position \{last_query\}, sees only keys \{last_sees\}",
        ("todays-models", 6): r"step \{cache_t\} adds the row of position \{cache_position\}",
        ("lesson-1-one-head", 1): r"positions 0 to 4",
        ("lesson-1-one-head", 4): r"row 0's only weight",
        ("lesson-2-heads-and-shapes", 1): r"row 1, “bank”",
        ("lesson-3-from-scratch", 1): r"Row 6, “rusted”, can reach “key” at position 1",
    }.items():
        assert re.search(pattern, notes[slug, n]), (slug, n)
    rows = [f"{i}·w" for i in range(10)]
    old = re.search(ABOUT[3][0], "The last query, at position 10, sees only keys 8, 9, 10")
    with pytest.raises(AssertionError):
        _last_query_sees(old, None, rows, rows)


@pytest.mark.parametrize(
    ("query", "step"),
    [
        (dict(causal="true"), 8),
        (dict(window="3"), 8),
        (dict(window="3", kv_heads="2"), 2),
        (dict(window="2", alibi="true", n_heads="1"), 5),
        (dict(sentence="hello"), 1),
    ],
)
def test_the_cache_caption_names_the_row_its_step_adds_and_the_keys_that_row_sees(query, step):
    at = make_app(view="kv_cache", cache_step=str(step), **query).run()
    no_exception(at)
    [caption] = [c.value for c in at.caption if c.value.startswith("Step ")]
    fig = charts(at)["cache_rows_chart"]
    rows = list(heatmaps(fig)[0]["y"])
    m = re.search(r"^Step (\d+) of (\d+) adds the row of position (\d+)", caption)
    assert m and int(m[1]) == step and int(m[2]) == len(rows), caption
    row = int(m[3])
    assert row == step - 1 and index(rows[row]) == row  # the step's row, by its label
    assert re.search(rf"row {row} of (each|the) head's causal map", caption)
    drawn = visible(fig)  # (T, T): cells of every decoded row the mask shows
    assert drawn.any(axis=-1)[row] and not drawn[row + 1 :].any()
    seen = [index(rows[j]) for j in np.flatnonzero(drawn[row])]
    listed = re.search(rf"attends? over (\d+) of the (\d+) cached keys, positions {NUMBERS}", caption)
    if listed:  # a window hides some cached keys: the positions named are the row's drawn cells
        assert numbers(listed[3]) == seen and int(listed[1]) == len(seen) and int(listed[2]) == step, caption
    else:
        assert seen == list(range(step)), caption  # every cached key, as the caption says
        assert re.search(rf"attends? over (all {step} cached keys|both cached keys|the one cached key)", caption)


@pytest.mark.parametrize(("block_size", "block"), [("3", "1"), ("3", "2"), ("3", "3"), ("1", "4"), ("8", "1")])
def test_the_flash_caption_and_title_name_the_keys_its_block_draws(block_size, block):
    at = make_app(view="flash", causal="true", block_size=block_size, block=block).run()
    no_exception(at)
    fig = charts(at)["flash_block_chart"]
    drawn = [index(label) for label in heatmaps(fig)[0]["x"]]  # the block's keys, at their own positions
    span = str(drawn[0]) if len(drawn) == 1 else f"{drawn[0]}–{drawn[-1]}"
    [caption] = [c.value for c in at.caption if c.value.startswith("Head ")]
    assert f"block {block} of " in caption  # blocks from 1
    assert re.search(rf"keys? {span}, scores", caption), (caption, drawn)
    titles = [a["text"] for a in fig["layout"].get("annotations", [])]
    assert f"scores of key{'s' * (len(drawn) > 1)} {span}" in titles, titles


def test_the_heads_view_names_repeated_words_by_the_positions_their_labels_carry():
    at = make_app(view="heads", sentence="the cat saw the dog and the cat ran").run()
    no_exception(at)
    rows, _ = labelled(at, "heads")
    [point] = [m.value for m in at.markdown if "hold the same word" in m.value]
    groups = re.search(r"Positions (.+?) hold the same word", point)[1].split("; ")
    for group in groups:
        words = {rows[int(n)].partition("·")[2] for n in numbers(group)}
        assert len(words) == 1 and all(index(rows[int(n)]) == int(n) for n in numbers(group)), (group, rows)


def test_the_score_probe_names_the_query_and_key_the_map_labels():
    at = make_app(view="steps", causal="true", probe_query="5", probe_key="2").run()
    no_exception(at)
    rows, keys = labelled(at, "steps")
    title = [a["text"] for a in charts(at)["score_probe_chart"]["layout"].get("annotations", [])]
    title += [charts(at)["score_probe_chart"]["layout"].get("title", {}).get("text", "")]
    m = re.search(r"q of (.+) \((\d+)\) × k of (.+) \((\d+)\)", " ".join(title))
    assert m, title
    assert f"{m[2]}·{m[1]}" == rows[5] and f"{m[4]}·{m[3]}" == keys[2]

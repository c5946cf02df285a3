"""The tour "attention in today's models": every number its notes state is the page's own, checked here
against values worked out from the step's settings and the papers' formulas (not read from the page)."""

from __future__ import annotations

import math
import re

import pytest

from core import tokenize
from dashboard.classroom.tour_facts import MISSING, names
from dashboard.classroom.tours import load_tours
from dashboard.state.url_state import step_state
from tests.dashboard.conftest import make_app, no_exception

SLUG = "todays-models"
TOUR = load_tours()[SLUG]
EXACT = 1e-12


def _shape(*dims: int) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ")"


def expected(state: dict) -> dict[str, str]:
    """Every fact of the tour for a step's settings, from first principles."""
    t = len(tokenize(state["sentence"]))
    h = state["n_heads"]
    kv = state.get("kv_heads") or h
    d_k = state["d_model"] // h
    w = state["window"]  # a step resets what it does not name: 0, off
    block = state.get("block_size") or max(1, t // 4)
    cache_t = state.get("cache_step") or t
    llama_token = 2 * 32 * 8 * 128 * 2  # K and V x 32 layers x 8 K/V heads x d_k 128 x 2 bytes (fp16)
    return {
        "tokens": str(t),
        "q_heads": str(h),
        "kv_heads": str(kv),
        "group": str(h // kv),
        "q_shape": _shape(h, t, d_k),
        "k_shape": _shape(kv, t, d_k),
        "k_repeated": _shape(h, t, d_k),
        "last_query": str(t - 1),  # positions from 0, as the map's labels: the last of T is T - 1
        "last_sees": ", ".join(str(j) for j in range(max(0, t - w) if w else 0, t)),
        "window": str(w),
        "slope_first": f"{2 ** (-8 / h):.3g}",  # ALiBi: m_h = 2^(-8h/H)
        "slope_last": f"{2**-8:.3g}",
        "cache_t": str(cache_t),  # steps from 1: step 5 adds the row of position 4
        "cache_position": str(cache_t - 1),
        "cache_shape": _shape(kv, cache_t, d_k),
        "llama_per_token": f"{llama_token / 2**10:.1f} KiB",  # 128.0 KiB
        "llama_32k": f"{llama_token * 32768 / 2**30:.1f} GiB",  # 4.0 GiB
        "llama_32k_ungrouped": f"{llama_token * 32768 * 32 / 8 / 2**30:.1f} GiB",  # 32 K/V heads instead of 8
        "flash_head": str(state.get("flash_head") or 1),
        "block_size": str(block),
        "n_blocks": str(math.ceil(t / block)),
    }
    # cache_diff and tiled_diff are differences: checked below to be float64 rounding


def _note(at, number: int) -> str:
    title = TOUR.steps[number - 1].title
    [note] = [m.value for m in at.markdown if m.value.startswith(f"**{number}. {title}**")]
    return note


DIFFS = {"cache_diff", "tiled_diff"}


def _check_note(note: str, template: str, facts: dict[str, str]) -> None:
    """``note`` is ``template`` with the facts filled in; the differences are at most float64 rounding."""
    pattern = re.escape(template)
    for name in names(template):
        value = r"(\d\.\de-\d\d)" if name in DIFFS else re.escape(facts[name])
        pattern = pattern.replace(re.escape("{" + name + "}"), value)
    match = re.search(pattern, note)
    assert match, (note, template)
    assert all(float(d) <= EXACT for d in match.groups())
    assert MISSING not in note


@pytest.mark.parametrize("number", range(1, len(TOUR.steps) + 1))
def test_every_number_in_a_note_is_the_runs(number):
    step = TOUR.steps[number - 1]
    at = make_app(tour=SLUG, tour_step=str(number)).run()
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    _check_note(_note(at, number), step.note, expected(step_state(step)))


def test_the_tour_walks_from_multi_head_to_the_tiles():
    views = [s.settings["view"] for s in TOUR.steps]
    assert views[0] == "shapes" and views[-1] == "flash" and "kv_cache" in views
    assert [s.settings.get(k) for s in TOUR.steps for k in ("kv_heads",) if k in s.settings] == [2, 1, 2]
    assert any(s.settings.get("window") for s in TOUR.steps) and any(s.settings.get("alibi") for s in TOUR.steps)


def test_a_control_moved_mid_step_moves_the_notes_numbers():
    number = next(i for i, s in enumerate(TOUR.steps, 1) if s.settings["view"] == "kv_cache")
    at = make_app(tour=SLUG, tour_step=str(number)).run()
    at.select_slider(key="cache_step").set_value(7).run()
    no_exception(at)
    state = step_state(TOUR.steps[number - 1]) | {"cache_step": 7}
    _check_note(_note(at, number), TOUR.steps[number - 1].note, expected(state))
    assert "(2, 7, 16)" in _note(at, number)  # (K/V heads, t, d_k): 2 K/V heads, step 7, 64 / 4


def test_a_typed_sentence_never_reaches_the_note():
    number = next(i for i, s in enumerate(TOUR.steps, 1) if s.settings.get("window"))
    at = make_app(tour=SLUG, tour_step=str(number)).run()
    at.text_input(key="sentence").set_value("**loud** <b>x</b> [link](http://e.x) the end").run()
    no_exception(at)
    note = _note(at, number)
    assert not any(bad in note for bad in ("loud", "<b>", "link", "http"))
    assert MISSING not in note  # positions, read from the new run


def test_next_resets_the_variants_a_step_does_not_name():
    window = next(i for i, s in enumerate(TOUR.steps, 1) if s.settings.get("window"))
    assert not TOUR.steps[window].settings.get("window")  # the next step has no window
    at = make_app(tour=SLUG, tour_step=str(window)).run()
    assert at.number_input(key="window").value == 3
    at.button(key="tour_next").click().run()
    no_exception(at)
    assert at.number_input(key="window").value == 0
    cache = next(i for i, s in enumerate(TOUR.steps, 1) if s.settings["view"] == "kv_cache")
    at = make_app(tour=SLUG, tour_step=str(cache)).run()
    assert at.button_group(key="kv_heads").value == 2
    at.button(key="tour_next").click().run()  # the tiles: multi-head again
    no_exception(at)
    assert at.button_group(key="kv_heads").value == at.button_group(key="n_heads").value == 4

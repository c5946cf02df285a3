"""The walk bench's own reading (bench/walk.py): which stops it walks, what a student's page must show at each, how
it counts the class as caught up, and its verdict's table. Pure functions, no server."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st
from streamlit.proto.Element_pb2 import Element
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.classroom import exact, shows_stop
from bench.protocol import Page
from bench.walk import STOPS, TARGET_P95_S, Walk, over, table
from core.sources import WEIGHTS
from dashboard.classroom.follower_page import teacher_line
from dashboard.state.settings import DEFAULTS
from dashboard.views import VIEWS


def page(*texts: str, status: int = ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY, exception: bool = False) -> Page:
    """A page of markdown elements with these bodies (and an exception element), as a run left it."""
    elements = {}
    for i, text in enumerate(texts):
        el = Element()
        el.markdown.body = text
        elements[(0, i)] = el
    if exception:
        el = Element()
        el.exception.message = "boom"
        elements[(0, len(texts))] = el
    return Page(elements=elements, status=status)


def test_the_walk_visits_every_view_and_the_heads_view_on_three_kinds_of_weights() -> None:
    shown = {s.change["view"] for s in STOPS}
    assert shown == set(VIEWS)
    heads = [s.change.get("weights") for s in STOPS if s.change["view"] == "heads"]
    assert set(heads) == {"random", "minilm", "trained"} <= set(WEIGHTS)
    labels = [s.label for s in STOPS]
    assert len(set(labels)) == len(labels)  # delays are kept per label
    train = next(i for i, s in enumerate(STOPS) if s.train)
    trained = next(i for i, s in enumerate(STOPS) if s.change.get("weights") == "trained")
    assert STOPS[train].change["view"] == "train" and train < trained  # trained weights exist once it trained
    keeps = STOPS[trained]  # a new seed would ask for a new model
    assert "seed" not in keeps.change and not keeps.fresh_seed and keeps.more == 0
    assert all(s.fresh_seed for s in STOPS if s is not keeps)  # every other change is told apart by its seed


@given(st.sampled_from(sorted(VIEWS)), st.sampled_from(WEIGHTS), st.integers(0, 99_999), st.integers(0, 99_999))
def test_a_page_shows_a_stop_when_it_draws_its_view_and_the_teachers_settings_line(
    view: str, weights: str, seed: int, other: int
) -> None:
    """The settings line is the follower page's own (``teacher_line``), the view's line its own (``View.teaches``):
    the page must show both, for the change's weights and seed, finished and with no exception."""
    settings = dataclasses.replace(DEFAULTS, weights=weights, config=dataclasses.replace(DEFAULTS.config, seed=seed))
    typed = {"view": view, "weights": weights, "seed": seed}
    line = teacher_line(settings, None)
    assert shows_stop(page("0 sentences from the class", VIEWS[view].teaches, line), typed)
    assert not shows_stop(page(VIEWS[view].teaches), typed)  # no settings line
    assert not shows_stop(page(line), typed)  # not this view
    assert not shows_stop(page(VIEWS[view].teaches, line, exception=True), typed)
    assert not shows_stop(page(VIEWS[view].teaches, line, status=ForwardMsg.FINISHED_WITH_COMPILE_ERROR), typed)
    if other != seed:  # another seed, even one whose digits begin this one's (seed 1 is not seed 100)
        assert not shows_stop(page(VIEWS[view].teaches, line), typed | {"seed": other})
    if seed >= 10:  # the seed's leading digits name another seed
        assert not shows_stop(page(VIEWS[view].teaches, line), typed | {"seed": seed // 10})
    elsewhere = next(v for v in VIEWS if VIEWS[v].teaches != VIEWS[view].teaches)
    assert not shows_stop(page(VIEWS[view].teaches, line), typed | {"view": elsewhere})


def test_only_the_heads_view_on_random_weights_is_checked_map_by_map() -> None:
    assert exact({"view": "heads", "weights": "random"})
    assert exact({})  # a room without a walk: the heads view on random weights, the defaults
    assert not any(exact({"view": v, "weights": "random"}) for v in VIEWS if v != "heads")
    assert not any(exact({"view": "heads", "weights": w}) for w in WEIGHTS if w != "random")


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 5)), min_size=1, max_size=40))
def test_a_student_who_skips_changes_has_reached_every_one_it_skipped(jumps: list[tuple[int, int]]) -> None:
    """``reached[j]`` counts the students whose page has shown change j or a later one: a student that went from
    change 2 straight to 5 has reached 3 and 4 too, so the teacher does not wait for it there."""
    walk = Walk()
    want: dict[int, int] = {}
    for first, ahead in jumps:
        walk.redrawn("heads", 0.1, first, first + ahead)
        for j in range(first, first + ahead + 1):
            want[j] = want.get(j, 0) + 1
    assert dict(walk.reached) == want
    assert walk.delays == {"heads": [0.1] * len(jumps)}


def test_the_table_has_a_p95_per_stop_and_size_and_a_stop_never_measured_misses() -> None:
    small, large = Walk(), Walk()
    for s in STOPS:
        small.delays[s.label] = [0.5] * 20
        large.delays[s.label] = [1.0] * 19 + [TARGET_P95_S * 3]
    del large.delays["steps"]
    result = type("R", (), {"failures": 0, "starved": 0})()
    text = table([(100, small, result), (200, large, result)])
    assert text.count("\n") == len(STOPS) + 2  # head, rule, a row per stop, failures
    assert "| tokens | 0.50 s | 1.25 s |" in text  # p95 of 19 x 1.0 and one 6.0, interpolated
    assert "| steps | 0.50 s | nan s |" in text
    assert over(small, TARGET_P95_S) == []
    assert over(large, 1.0) == [s.label for s in STOPS]  # 1.25 > 1.0, and steps was not measured
    assert over(large, 1.3) == ["steps"]

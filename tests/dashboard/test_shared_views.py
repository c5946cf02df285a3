"""Every view that shares its figures across sessions (``shared_figures.charts_of``) draws, after other settings
have filled the shared cache, exactly what it draws from an empty one.

A key that leaves out something its figure depends on (a head, a block, a step, presenter mode, the mask) would hand
a follower another page's figure: the second page's charts would then differ from the same page drawn alone. Each
view is opened on a run of settings that differ in what its figures read, one after the other in one process (the
cache is the process's, as on the server), and then each again alone on an emptied cache: every chart must be the
same, byte for byte. And opening the first settings again builds nothing new: every figure came from the cache.
"""

from __future__ import annotations

import pytest

from dashboard.page import shared_figures
from tests.dashboard.conftest import make_app

SENTENCE = "the cat sat on the mat by the river"
VARIANTS: dict[str, list[dict[str, str]]] = {
    "scaling": [{}, {"presenter": "true"}, {"n_heads": "8"}],
    "summary": [{}, {"seed": "3"}, {"presenter": "true"}, {"causal": "true"}],
    "positions": [{}, {"shift_head": "2"}, {"shift": "3"}, {"causal": "true"}, {"presenter": "true"}],
    "kv_cache": [
        {},
        {"cache_step": "3"},
        {"kv_heads": "2"},
        {"window": "2"},
        {"presenter": "true"},
        {"n_heads": "16"},
        {"n_heads": "16", "cache_head": "2"},  # many K/V heads: one drawn at a time
    ],
    "flash": [{}, {"block": "2"}, {"block_size": "3"}, {"flash_head": "2"}, {"causal": "true"}, {"presenter": "true"}],
    "cross": [{}, {"source": "ein Hund lief"}, {"causal": "true"}, {"presenter": "true"}],
    "permutation": [{}, {"perm_head": "2"}, {"perm_mode": "shuffle", "perm_seed": "4"}, {"presenter": "true"}],
    "class": [{}, {"class_head": "2"}, {"class_text": "a dog ran home\nthe cat sat down"}, {"presenter": "true"}],
    "contrast": [{}, {"contrast_head": "2"}, {"second": "the dog sat on the mat by the river"}, {"presenter": "true"}],
    "train": [  # pre-trained: drawn at once
        {},
        {"replay_step": "0"},
        {"presenter": "true"},
        {"task": "reverse"},
        {"temperature": "0.5"},  # the predictions' bars
        {"ablate_mode": "zero"},  # the knockouts' bars
    ],
    "model": [{}, {"head": "2"}, {"one_head": "true"}, {"one_head": "true", "head": "3"}, {"presenter": "true"}],
}


def specs(view: str, query: dict[str, str]) -> list[bytes]:
    """The view opened on ``query``: every chart's spec and config, in page order (no exception)."""
    at = make_app(view=view, sentence=SENTENCE, **query).run()
    assert not at.exception, [e.value for e in at.exception]
    return [c.proto.spec.encode() + c.proto.config.encode() for c in at.get("plotly_chart")]


@pytest.mark.parametrize("view", sorted(VARIANTS))
def test_a_view_draws_the_same_charts_from_a_warm_shared_cache_as_from_an_empty_one(view: str) -> None:
    shared_figures._grids.clear()
    warm = [specs(view, q) for q in VARIANTS[view]]
    assert all(warm), "every variant draws charts"
    assert len({tuple(w) for w in warm}) == len(warm), "each variant draws something else: the test can tell"
    cached = len(shared_figures._grids)
    assert cached >= len(VARIANTS[view]), "the view shares its figures: one entry per variant at least"
    assert specs(view, VARIANTS[view][0]) == warm[0]
    assert len(shared_figures._grids) == cached, "the same settings again build no figure: all came from the cache"
    for query, charts in zip(VARIANTS[view], warm, strict=True):
        shared_figures._grids.clear()
        assert specs(view, query) == charts, f"{view} with {query}: the warm cache handed another page's figure"


def test_a_sequence_typed_in_the_train_views_try_it_draws_its_own_charts_from_a_warm_cache() -> None:
    """ "Try it on your own input" is a box no address holds: the maps and predictions of a sequence typed there,
    drawn after the example's filled the shared cache, are the ones it draws on an empty one."""

    def typed(text: str, cold: bool) -> list[bytes]:
        at = make_app(view="train").run()  # the example's charts: in the cache now
        if cold:
            shared_figures._grids.clear()
        at.text_input(key="try_shift").set_value(text).run()
        assert not at.exception, [e.value for e in at.exception]
        return [c.proto.spec.encode() for c in at.get("plotly_chart")]

    example = specs("train", {})
    warm = typed("3 1 4 1 5 9 2 6", cold=False)
    assert len(warm) == len(example) and warm != example, "the typed sequence draws other charts: the test can tell"
    assert typed("3 1 4 1 5 9 2 6", cold=True) == warm

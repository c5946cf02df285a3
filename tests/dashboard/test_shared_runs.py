"""Cached runs are shared by every session: one object, no copy per rerun, and no array in it can be written."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from core import AttentionConfig
from dashboard.compute import computations
from dashboard.state.followed import OWN


def test_one_shared_run_whose_arrays_are_read_only():
    config = AttentionConfig(d_model=512, n_heads=8)
    first = computations.attention_run(("the", "cat", "sat"), config)
    again = computations.attention_run(("the", "cat", "sat"), config)
    assert first is again  # dashboard.compute.bounded_cache: the same object, not an unpickled copy
    for array in (first.x, first.trace.weights, first.trace.output, first.projections.w_q):
        with pytest.raises(ValueError, match="read-only"):
            array[..., 0] = 1.0
    np.testing.assert_allclose(first.trace.weights.sum(-1), 1.0, rtol=0, atol=1e-12)


def test_why_not_cache_data_each_entry_would_copy_the_projections():
    """A pickled run (what st.cache_data stores and copies back on every rerun) is mostly its W matrices."""
    run = computations.attention_run(("the", "cat", "sat"), AttentionConfig(d_model=512, n_heads=8))
    p = run.projections
    weights = sum(w.nbytes for w in (p.w_q, p.w_k, p.w_v, p.w_o))
    assert len(pickle.dumps(run)) > weights > 20 * run.trace.weights.nbytes


def test_a_live_run_is_found_by_sentence_and_config_and_a_changed_one_is_not_served(monkeypatch):
    """``source._config_run``: the cached run again without the cache's lookup; another config (the teacher's next
    version) is its own run; once the run is gone (a cleared cache), the next ask computes again."""
    import gc

    from dashboard.compute import bounded_cache, source

    bounded_cache.clear_all()
    asked = []
    lookup = computations.attention_run
    monkeypatch.setattr(
        computations, "attention_run", lambda tokens, config: asked.append(config) or lookup(tokens, config)
    )
    config = AttentionConfig(d_model=64, n_heads=2, seed=11)
    first = source._config_run("the cat sat", config, OWN)
    again = source._config_run("the cat sat", config, OWN)
    assert again is first and asked == [config]  # looked up once
    assert first.tokens == computations.tokens_of("the cat sat") and first.trace.weights.shape == (2, 3, 3)
    other = source._config_run("the cat sat", AttentionConfig(d_model=64, n_heads=2, seed=12), OWN)
    assert other is not first and len(asked) == 2
    assert not np.array_equal(other.trace.weights, first.trace.weights)  # the new seed's maps, not the old ones
    assert source._config_run("the cat sat on", config, OWN).tokens == ("the", "cat", "sat", "on")
    del first, again, other
    bounded_cache.clear_all()
    gc.collect()
    assert source._config_run("the cat sat", config, OWN) is not None and len(asked) == 4  # computed again

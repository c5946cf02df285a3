"""Cached runs are shared by every session: one object, no copy per rerun, and no array in it can be written."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from core import AttentionConfig
from dashboard import compute


def test_one_shared_run_whose_arrays_are_read_only():
    config = AttentionConfig(d_model=512, n_heads=8)
    first = compute.attention_run(("the", "cat", "sat"), config)
    again = compute.attention_run(("the", "cat", "sat"), config)
    assert first is again  # st.cache_resource: the same object, not an unpickled copy
    for array in (first.x, first.trace.weights, first.trace.output, first.projections.w_q):
        with pytest.raises(ValueError, match="read-only"):
            array[..., 0] = 1.0
    np.testing.assert_allclose(first.trace.weights.sum(-1), 1.0, rtol=0, atol=1e-12)


def test_why_not_cache_data_each_entry_would_copy_the_projections():
    """A pickled run (what st.cache_data stores and copies back on every rerun) is mostly its W matrices."""
    run = compute.attention_run(("the", "cat", "sat"), AttentionConfig(d_model=512, n_heads=8))
    p = run.projections
    weights = sum(w.nbytes for w in (p.w_q, p.w_k, p.w_v, p.w_o))
    assert len(pickle.dumps(run)) > weights > 20 * run.trace.weights.nbytes

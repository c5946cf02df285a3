"""bench.core's layer table: ours against both PyTorch forms, each checked equal before it is timed."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bench import core as bench_core
from tests.conftest import require_torch


def test_the_layer_table_prints_the_ratio_against_mha_and_against_sdpa(monkeypatch, capsys):
    torch = require_torch()
    monkeypatch.setattr(bench_core, "SIZE_SECONDS", 0.0)  # the fewest rounds: this checks the table, not speed
    monkeypatch.setattr(bench_core, "MIN_ROUNDS", 2)
    monkeypatch.setattr(bench_core, "IDLE_SECONDS", 0.0)
    bench_core.layer_table(torch, sizes=((6, 16, 2), (9, 24, 3)))
    out = capsys.readouterr().out
    [header] = [line for line in out.splitlines() if line.lstrip().startswith("T d_model")]
    columns = header.split()
    assert "numpy/MHA" in columns and "numpy/SDPA" in columns
    assert "F.scaled_dot_product_attention(is_causal=True)" in out and "torch.nn.MultiheadAttention" in out
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+(6|9) +(16|24) ", line)]
    assert [r[:3] for r in rows] == [["6", "16", "2"], ["9", "24", "3"]]
    for row in rows:  # numpy ms, MHA ms, SDPA ms, then each ratio with its IQR
        numpy_ms, mha_ms, sdpa_ms = (float(v) for v in row[4:7])
        assert re.fullmatch(r"\(\d+\.\d\d-\d+\.\d\d\)", row[8]) and re.fullmatch(r"\(\d+\.\d\d-\d+\.\d\d\)", row[10])
        assert float(row[7]) > 0 and float(row[9]) > 0 and min(numpy_ms, mha_ms, sdpa_ms) > 0


def test_the_sdpa_side_computes_the_same_layer_and_is_checked_before_timing():
    """The SDPA contestant is the same attention as ours, and check_same refuses one that is not."""
    torch = require_torch()
    case = bench_core.make_case(torch, 7, 16, 4, seed=3)
    bench_core.check_same(case)
    ours = case.run_numpy().output  # (1, T, d_model)
    np.testing.assert_allclose(case.run_sdpa().numpy(), ours, rtol=1e-4, atol=1e-5)
    right = case.run_sdpa
    case.run_sdpa = lambda: right() * 1.01  # a fast path 1% off
    with pytest.raises(AssertionError, match="SDPA"):
        bench_core.check_same(case)

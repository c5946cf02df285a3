"""What a student's page must show: the heads maps ``core`` computes here for that session's own settings.

``bench.load``, ``bench.classroom`` and ``bench.memory`` check every rerun against it: the token
labels, the number of heads, and every weight (float32, exactly).
"""

from __future__ import annotations

import functools
import html
from dataclasses import fields

import numpy as np

from bench.protocol import Page, decode_array
from core import AttentionConfig, causal_mask, run, tokenize

CONFIG_FIELDS = {f.name for f in fields(AttentionConfig)}


class Mismatch(AssertionError):
    """The page does not show what this session chose."""


@functools.cache
def _minilm():
    from core.pretrained import load_minilm

    return load_minilm()


def _typed(field: str, value: object) -> object:
    """A widget's value as ``AttentionConfig`` holds it; an optional number (window, prefix) left empty is None."""
    default = getattr(AttentionConfig(), field)
    if default is None:
        return None if value in (None, "", "None") else int(value)
    return type(default)(value)


def expected_weights(values: dict) -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """Tokens, float32 weights (h, T, T) and the mask, computed here from a session's own widget values."""
    if values.get("weights") == "minilm":  # the pretrained model: pieces with [CLS] and [SEP], the chosen layer
        from core.pretrained.runs import layer_runs

        causal = bool(values.get("causal", False))
        layer = layer_runs(_minilm(), values["sentence"], causal=causal)[int(values.get("layer", 1)) - 1]
        mask = causal_mask(len(layer.tokens)) if causal else None
        return list(layer.tokens), layer.trace.weights.astype(np.float32), mask
    tokens = tokenize(values["sentence"])
    kwargs = {k: v for k, v in values.items() if k in CONFIG_FIELDS}
    config = AttentionConfig(**{k: _typed(k, v) for k, v in kwargs.items()})
    weights = run(tokens, config).trace.weights.astype(np.float32)
    return tokens, weights, causal_mask(len(tokens)) if config.causal else None


def check_page(page: Page, values: dict) -> None:
    """Raise ``Mismatch`` unless the heads view's maps are exactly the ones for ``values``."""
    if not page.finished:
        raise Mismatch(f"script finished with status {page.status}")
    if page.of("exception"):
        raise Mismatch(f"exception on the page: {page.of('exception')[0].exception.message[:200]}")
    tokens, weights, allowed = expected_weights(values)
    # One chart per head, in head order, plus the shared colour bar (a heatmap strip that skips its hover).
    maps = [
        t
        for fig in page.figures()
        for t in fig["data"]
        if t.get("type") == "heatmap" and t.get("coloraxis") and t.get("hoverinfo") != "skip"
    ]
    if len(maps) != weights.shape[0]:
        raise Mismatch(f"{len(maps)} heatmaps for {weights.shape[0]} heads")
    labels = [f"{i}·{html.escape(t, quote=True)}" for i, t in enumerate(tokens)]
    for i, trace in enumerate(maps):
        if list(trace["x"]) != labels or list(trace["y"]) != labels:
            raise Mismatch(f"head {i + 1} is labelled {trace['x'][:3]}..., expected {labels[:3]}...")
        z = np.nan_to_num(decode_array(trace["z"]).astype(np.float32))
        want = weights[i] if allowed is None else np.where(allowed, weights[i], 0)
        if z.shape != want.shape or not np.array_equal(z, want):
            raise Mismatch(f"head {i + 1}: weights differ from this session's settings")

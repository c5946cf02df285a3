"""The numbers a tour note states, read from what the step's page computed, never from the tour file.

A note names a fact in braces (``"K and V are {k_shape}"``); the tour bar fills it from the runs the
page draws (``dashboard.compute.computations``'s cached ones, so nothing is computed twice), for the settings on the
page now: a student who moves a control mid-step reads the numbers of what is drawn. A note without
braces is shown as it is. A fact is a number or a shape, never a token: the note is Markdown, and the
tokens are what the student typed. Every name is one of ``FACTS``; ``tours.parse_tour`` callers check that with
``unknown_facts`` (tests/dashboard/test_tours.py does, for every tour file).
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping

import numpy as np
import streamlit as st

from core.kv_cache import MODEL_SHAPES, cache_bytes_per_token, multi_head_cache_bytes
from dashboard.compute import computations
from dashboard.figures.labels import position, positions
from dashboard.page.common import byte_size, shape_text
from dashboard.page.mask_words import mask_rule
from dashboard.state.settings import Settings

MISSING = "…"
"""What a fact reads when the page has nothing to read it from (no tokens: the view says why)."""


class _Page:
    """What the page computed for these settings, computed on first use (each from compute's caches)."""

    def __init__(self, settings: Settings, tokens: tuple[str, ...], state: Mapping[str, object]):
        self.settings, self.tokens, self.state = settings, tokens, state

    @property
    def run(self):
        return computations.attention_run(self.tokens, self.settings.config)

    def control(self, key: str, default: int, top: int) -> int:
        """A view control's value as the page holds it (the view's own default if unset), within 1..top."""
        value = self.state.get(key)
        return max(1, min(int(value), top)) if isinstance(value, int) else default

    @property
    def cache_step(self):
        result = computations.cache_run(self.tokens, self.settings.config)
        n = len(result.steps)
        return result, result.steps[self.control("cache_step", n, n) - 1]  # the view's default: the last step

    @property
    def tiled(self):
        t = len(self.tokens)
        block = self.control("block_size", max(1, t // 4), t) if t > 1 else 1  # the view's default: T // 4
        head = self.control("flash_head", 1, self.settings.config.n_heads) - 1
        return computations.tiled_run(self.tokens, self.settings.config, head, block), block


def _visible_keys(page: _Page) -> str:
    """The positions of the keys the last query may see, named as the map's labels name them (from 0). Positions,
    never the tokens: a note is Markdown, and the tokens are what the student typed."""
    weights = page.run.trace.weights  # (h, T_q, T_k)
    mask = page.run.trace.mask  # (T_q, T_k) bool or None
    seen = np.arange(weights.shape[-1]) if mask is None else np.flatnonzero(mask[-1])  # (keys seen,)
    return positions(seen)


def _last_query(page: _Page) -> str:
    """The position of the last query row of the run's map, as its label names it (T_q − 1)."""
    return position(page.run.trace.weights.shape[-2] - 1)


def _window(page: _Page) -> str:
    """The sliding window the run's mask was built with, read from the mask (``mask_words.mask_rule``)."""
    rule = mask_rule(page.run.trace.mask)
    return str(rule.window) if rule is not None and rule.window else MISSING


def _slope(page: _Page, head: int) -> str:
    """ALiBi's slope of ``head``, read from the bias the run added: the penalty for one position of distance."""
    bias = page.run.trace.bias  # (h, T, T) or None
    if bias is None or bias.shape[-1] < 2:
        return MISSING
    return f"{-bias[head, 1, 0]:.3g}"  # query 1, key 0: distance 1


LLAMA_8B = next(s for s in MODEL_SHAPES if s.name == "Llama 3 8B")

FACTS: dict[str, Callable[[_Page], str]] = {
    "tokens": lambda p: str(len(p.tokens)),
    "q_heads": lambda p: str(p.run.trace.n_heads),
    "kv_heads": lambda p: str(p.run.trace.kv_heads),
    "group": lambda p: str(p.run.trace.group),
    "q_shape": lambda p: shape_text(p.run.trace.q.shape),
    "k_shape": lambda p: shape_text(p.run.trace.k.shape),
    "k_repeated": lambda p: shape_text(p.run.trace.keys_per_head.shape),
    "last_query": _last_query,
    "last_sees": _visible_keys,
    "window": _window,
    "slope_first": lambda p: _slope(p, 0),
    "slope_last": lambda p: _slope(p, -1),
    "cache_t": lambda p: str(p.cache_step[1].t + 1),  # the step's number, from 1 like the slider
    "cache_position": lambda p: position(p.cache_step[1].t),  # the position whose row it adds, from 0
    "cache_shape": lambda p: shape_text(p.cache_step[1].k_cache.shape),
    "cache_diff": lambda p: f"{p.cache_step[0].max_diff:.1e}",
    "llama_per_token": lambda p: byte_size(cache_bytes_per_token(LLAMA_8B)),
    "llama_32k": lambda p: byte_size(cache_bytes_per_token(LLAMA_8B) * 32768),
    "llama_32k_ungrouped": lambda p: byte_size(multi_head_cache_bytes(LLAMA_8B, 32768)),
    "flash_head": lambda p: str(p.control("flash_head", 1, p.settings.config.n_heads)),
    "block_size": lambda p: str(p.tiled[1]),
    "n_blocks": lambda p: str(len(p.tiled[0].tiles)),
    "tiled_diff": lambda p: f"{p.tiled[0].max_diff:.1e}",
}
"""Fact name -> how to read it from the page's computation."""


def names(note: str) -> set[str]:
    """The fact names a note uses."""
    return {name for _, name, _, _ in string.Formatter().parse(note) if name}


def unknown_facts(note: str) -> set[str]:
    """The names in ``note`` that are not ``FACTS`` (a tour file's mistake)."""
    return names(note) - set(FACTS)


def fill(note: str, settings: Settings, state: Mapping[str, object] | None = None) -> str:
    """``note`` with each ``{fact}`` read from the computation of ``settings`` (and the view controls in
    ``state``, default the session's); a fact that cannot be read shows ``MISSING``."""
    wanted = names(note)
    if not wanted:
        return note
    state = st.session_state if state is None else state
    try:
        tokens = computations.tokens_of(settings.sentence) if settings.sentence.strip() else ()
    except ValueError:
        tokens = ()
    page = _Page(settings, tokens, state)
    values = {}
    for name in wanted:
        try:
            values[name] = FACTS[name](page) if tokens else MISSING
        except (KeyError, ValueError, IndexError):
            values[name] = MISSING
    return note.format_map(values)

"""Every computation the dashboard shows, cached: settings in, core results out.

Nothing else in dashboard/ does math. Each function is keyed on hashable arguments (token tuples, a frozen
``AttentionConfig``) and kept in a ``dashboard.compute.bounded_cache`` bounded by the bytes its entries hold: every
session gets the same read-only object, and an entry nobody reads for a while goes. What an entry holds at the
largest settings (64 tokens, d_model 512, 16 heads; ``bounded_cache.held_bytes``): a ``Run`` 11 MB, 8 MB of it
its W matrices (shared by every run of the same width and seed, but counted in each); one MiniLM sentence's six
runs 6.8 MB (the model's own W matrices are the model's, counted nowhere); the kv_cache view's steps 1.8 MB and
the flash view's tiles 1.2 MB (their run is ``attention_run``'s, not kept twice).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import streamlit as st
from streamlit.errors import StreamlitSecretNotFoundError

from core import (
    AttentionConfig,
    HeadSummary,
    PermutationResult,
    Run,
    ScalingResult,
    ShiftResult,
    SpreadResult,
    head_contributions,
    head_summary,
    permutation_experiment,
    run,
    scaling_experiment,
    score_spread,
    shift_experiment,
    tokenize,
)
from core.kv_cache import CacheStep, decode, stacked_weights
from core.pretrained import ENV_VAR, CheckpointError, ChecksumError, Encoding, MiniLM, WeightsNotFound, load_minilm
from core.pretrained.runs import layer_runs
from core.sources import ModelSource
from core.tiled import Tile, tiles
from dashboard.compute import bounded_cache
from dashboard.compute.bounded_cache import MB


@st.cache_resource(max_entries=1, show_spinner="Loading the pretrained MiniLM (once per server)…")
def minilm_or_error() -> MiniLM | Exception:
    """The pretrained model, loaded once per server process from the files on this server; or what stopped it.

    A directory named by the Streamlit secret (or environment variable) ATTENTION_LAB_MINILM_DIR wins; then the
    installed package; then the download cache. Nothing here is ``NotInstalled``: ``minilm_files.minilm_ready``
    then downloads the files (once per process, with a progress bar) and clears this cache. The failure is cached
    too, so a page answers at once on every rerun; ``minilm_or_error.clear()`` (the page's Try again) looks again.
    """
    try:
        return bounded_cache.resident(load_minilm(secret(ENV_VAR), download=False))  # its W count in no cache
    except (WeightsNotFound, ChecksumError, CheckpointError, OSError) as err:
        return err


def minilm() -> MiniLM | str:
    """The pretrained model (``minilm_or_error``), or the message saying why it is not loaded."""
    found = minilm_or_error()
    return str(found) if isinstance(found, Exception) else found


def secret(name: str) -> str | None:
    """A Streamlit secret, or None when there is no secrets file or no such key."""
    try:
        return st.secrets.get(name)
    except (FileNotFoundError, StreamlitSecretNotFoundError):
        return None


@bounded_cache.cache(max_bytes=40 * MB)
def minilm_runs(sentence: str, causal: bool) -> tuple[Run, ...]:
    """One ``Run`` per MiniLM layer for ``sentence``; raises ``ValueError`` (not cached) over the piece cap."""
    model = minilm()
    if isinstance(model, str):
        raise ValueError(model)
    return layer_runs(model, sentence, causal=causal)


@bounded_cache.cache(max_bytes=12 * MB)
def _permutation_runs(key: tuple, permutation: tuple[int, ...], _source: ModelSource) -> tuple[PermutationResult, ...]:
    return _source.permutation(permutation)


def permutation_runs(source: ModelSource, permutation: tuple[int, ...]) -> tuple[PermutationResult, ...]:
    """Per layer of ``source``: the map of its tokens and of the movable ones reordered, compared position by
    position (keyed on ``source.key``)."""
    return _permutation_runs(source.key, permutation, source)


@bounded_cache.cache(max_bytes=1 * MB)
def minilm_encoding(sentence: str) -> Encoding:
    """MiniLM's WordPiece pieces of ``sentence``, with [CLS] and [SEP] (call ``page.minilm_ready`` first)."""
    return minilm().encode(sentence)


@bounded_cache.cache(max_bytes=1 * MB)
def tokens_of(sentence: str) -> tuple[str, ...]:
    """The tokens of ``sentence``; raises ``ValueError`` (not cached) with a user-facing message."""
    return tuple(tokenize(sentence))


@bounded_cache.cache(max_bytes=64 * MB)
def attention_run(tokens: tuple[str, ...], config: AttentionConfig) -> Run:
    """Embeddings, positions and the full self-attention trace for ``tokens`` (shared, read-only)."""
    return run(tokens, config)


@bounded_cache.cache(max_bytes=24 * MB)
def cross_run(tokens: tuple[str, ...], source: tuple[str, ...], config: AttentionConfig) -> Run:
    """Cross-attention: queries from ``tokens`` (T_q), keys and values from ``source`` (T_k) (shared, read-only)."""
    return run(tokens, config, source=source)


@bounded_cache.cache(max_bytes=12 * MB)
def permutation_run(
    tokens: tuple[str, ...], permutation: tuple[int, ...], config: AttentionConfig
) -> PermutationResult:
    """Attention on ``tokens`` and on ``tokens`` reordered, compared position by position."""
    return permutation_experiment(tokens, list(permutation), config)


@bounded_cache.cache(max_bytes=8 * MB)
def shift_run(tokens: tuple[str, ...], shift: int, config: AttentionConfig) -> ShiftResult:
    """Attention on ``tokens`` at positions 0..T-1 and at shift..shift+T-1 (``core.shift_experiment``)."""
    return shift_experiment(tokens, shift, config)


@bounded_cache.cache(max_bytes=1 * MB)
def scaling_curves() -> ScalingResult:
    """``core.scaling_experiment`` on its default grid: the same for every sentence, so computed once."""
    return scaling_experiment()


@bounded_cache.cache(max_bytes=2 * MB)
def score_spreads() -> SpreadResult:
    """``core.score_spread`` on its default widths: the same for every sentence, so computed once."""
    return score_spread()


def summary_of(trace_run: Run) -> HeadSummary:
    """Per-head entropy and weight on self, previous and first token, read from the run's own weights and mask."""
    return head_summary(trace_run.trace.weights, trace_run.trace.mask, trace_run.word_ids)


def attention_input(trace_run: Run) -> tuple[np.ndarray, np.ndarray | None]:
    """What attention was given: ``X + P`` for the queries ``(T_q, d_model)``, and for the source ``(T_k, d_model)``
    in cross-attention (None in self-attention, where keys and values read the same rows)."""
    x = trace_run.x + trace_run.positions
    if trace_run.source_x is None:
        return x, None
    return x, trace_run.source_x + trace_run.source_positions


def head_parts(trace_run: Run) -> np.ndarray:
    """Each head's share of the output, ``Z_h · W_O[rows of head h]``: ``(h, T_q, d_model)``; they sum to the
    output (minus b_O, for a layer with biases)."""
    return head_contributions(trace_run.trace.context, trace_run.projections.w_o)


def unscaled_scores(scores: np.ndarray, scale: float) -> np.ndarray:
    """``QK^T`` before the factor, recovered from the trace's scaled scores: ``(..., T_q, T_k)``, same shape."""
    return scores / scale


def reverse_permutation(t: int) -> tuple[int, ...]:
    """``(T-1, ..., 0)``: the sentence read backwards."""
    return tuple(range(t - 1, -1, -1))


def random_permutation(t: int, seed: int) -> tuple[int, ...]:
    """A shuffle of ``0..T-1`` fixed by ``seed`` (its own generator, never global state)."""
    return tuple(int(i) for i in np.random.default_rng([int(seed), t, 0x5045524D]).permutation(t))  # "PERM"


def typed_permutation(tokens: tuple[str, ...], typed: tuple[str, ...]) -> tuple[int, ...] | None:
    """The permutation ``p`` with ``typed == [tokens[i] for i in p]``, or None if ``typed`` is not a rearrangement.

    A repeated word takes the original positions in order (first "the" typed ->
    first "the" of the sentence); without positions any choice gives the same map.
    """
    if len(typed) != len(tokens):
        return None
    free: dict[str, list[int]] = {}
    for i, t in enumerate(tokens):
        free.setdefault(t, []).append(i)
    perm = []
    for t in typed:
        if not free.get(t):
            return None
        perm.append(free[t].pop(0))
    return tuple(perm)


def mean_row_peak(weights: np.ndarray) -> float:
    """Mean over heads and queries of each row's largest weight: ``(h, T_q, T_k) -> float``.

    1 means every query looks at one key only; 1/T_k means it spreads evenly.
    """
    return float(weights.max(axis=-1).mean())


def look_alike_rows(weights: np.ndarray, tokens: tuple[str, ...]) -> tuple[float, float]:
    """For ``weights (h, T, T)`` over ``tokens``: the share of (head, query) rows whose largest weight is on the
    query's own token or a copy of it, and the mean weight those keys get together (over heads and rows)."""
    words = np.asarray(tokens, dtype=object)
    same = words[:, None] == words[None, :]  # (T, T): key j holds query i's token (itself included)
    top = weights.argmax(axis=-1)  # (h, T): each row's largest weight
    on_same = same[np.arange(len(tokens)), top]  # (h, T)
    return float(on_same.mean()), float((weights * same).sum(axis=-1).mean())


def previous_rows(weights: np.ndarray) -> tuple[float, float] | None:
    """For ``weights (h, T, T)``: the share of rows 1..T-1 whose largest weight is on the previous key, and the
    mean weight on it; None for one token (no row has a previous key)."""
    t = weights.shape[-1]
    if t < 2:
        return None
    rows = np.arange(1, t)  # (T-1,)
    top = weights[..., 1:, :].argmax(axis=-1)  # (h, T-1)
    return float((top == rows - 1).mean()), float(weights[..., rows, rows - 1].mean())


class SentenceMaps(NamedTuple):
    """One sentence read through a source's weights (``ModelSource.reads``), kept small: its maps, not its run."""

    tokens: tuple[str, ...]
    weights: np.ndarray  # (L, h, T, T): every layer's heads
    mask: np.ndarray | None  # (T, T) True = may attend, or None (every layer's is the same)
    word_ids: tuple[int | None, ...] | None  # (T,) WordPiece words, or None


def _maps_of(runs: tuple[Run, ...]) -> SentenceMaps:
    """The maps of one input's runs (one per layer), without the projections and activations a run carries."""
    first = runs[0]
    return SentenceMaps(first.tokens, np.stack([r.trace.weights for r in runs]), first.trace.mask, first.word_ids)


@bounded_cache.cache(max_bytes=4 * MB)  # the whole budget's last 6 MB, with _example_maps
def _sentence_maps(key: tuple, text: str, _source: ModelSource) -> SentenceMaps:
    return _maps_of(_source.reads(text))


def sentence_maps(source: ModelSource, text: str) -> SentenceMaps:
    """``text`` through ``source``'s weights (``reads``), keyed on the weights and the text, not the sidebar's
    sentence: the class and contrast views read their own sentences. Raises ``ValueError`` (not cached) with the
    message for the user when the text cannot be read. Each entry holds only maps: MiniLM at 64 pieces,
    (6, 12, 64, 64) float32, 1.2 MB; at 16 pieces 74 kB, so a class's 40 sentences are ~3 MB (the cache keeps 4 MB:
    54 such sentences)."""
    return _sentence_maps(source.weights_key, text, source)


@bounded_cache.cache(max_bytes=2 * MB)
def _example_maps(key: tuple, n: int, _source: ModelSource) -> tuple[SentenceMaps, ...]:
    return tuple(_maps_of(runs) for runs in _source.examples(n))


def example_maps(source: ModelSource, n: int) -> tuple[SentenceMaps, ...]:
    """The maps of ``n`` of the model's own inputs (``ModelSource.examples``: a trained model's held-out
    sequences), keyed on the weights."""
    return _example_maps(source.weights_key, n, source)


class CacheRun(NamedTuple):
    """Decoding token by token (``core.kv_cache.decode``) beside the full causal run it must equal."""

    full: Run  # the sentence through the same weights with the causal mask, all rows at once
    steps: tuple[CacheStep, ...]  # one per token: the cache and the row it produced
    stacked: np.ndarray  # (h, T, T): the steps' rows stacked, zeros for keys not yet cached
    max_diff: float  # max |stacked rows - full causal weights| over every head, row and key
    window: int  # the sliding window decode ran with, 0 = none (a window as long as the sentence cuts no key here)


def cache_run(tokens: tuple[str, ...], config: AttentionConfig) -> CacheRun:
    """The causal run of ``tokens`` and the same attention decoded one token at a time (shared, read-only)."""
    full = attention_run(tokens, _decoder(config))
    return CacheRun(full, *_decoded(tokens, config), config.window)


def _decoder(config: AttentionConfig) -> AttentionConfig:
    """Decoding is causal by nature, and a prefix sees later tokens both ways: a decoder never has one."""
    return dataclasses.replace(config, causal=True, prefix=0)


@bounded_cache.cache(max_bytes=12 * MB)
def _decoded(tokens: tuple[str, ...], config: AttentionConfig) -> tuple[tuple[CacheStep, ...], np.ndarray, float]:
    """``CacheRun`` but its run (``attention_run`` keeps that): the steps, their rows stacked and the difference.

    Each step's cache is kept as the first t + 1 rows of the last step's, not as its own copy: ``decode`` grows the
    cache by ``np.concatenate``, which copies every row unchanged, so the numbers are the same, and the caches of
    64 steps at d_model 512 take 0.5 MB instead of 17 MB."""
    full = attention_run(tokens, _decoder(config))
    x, _ = attention_input(full)  # (T, d_model): X + P, what the full run attended over
    positions = full.trace.q_unrotated is not None  # RoPE: rotate q_t and k_t by t
    steps = decode(
        x,
        full.projections,
        config.n_heads,
        window=config.window,  # the full run's mask was built with the same window
        alibi=full.trace.bias is not None,
        rope=positions,
        scale=full.trace.scale,
    )
    stacked = stacked_weights(steps)  # (h, T, T)
    diff = float(np.max(np.abs(stacked - full.trace.weights)))
    return _one_cache(steps), stacked, diff


def _one_cache(steps: list[CacheStep]) -> tuple[CacheStep, ...]:
    """``steps`` with each cache a view of the last step's: ``k_cache[..., :t + 1, :]`` of it (and the same for V)."""
    k, v = steps[-1].k_cache, steps[-1].v_cache  # (kv_heads, T, d_k): every key and value, in order
    return tuple(
        dataclasses.replace(s, k_cache=k[..., : s.t + 1, :], v_cache=v[..., : s.t + 1, :])  # (kv_heads, t + 1, d_k)
        for s in steps
    )


class TiledRun(NamedTuple):
    """One head's attention tiled into blocks of keys (``core.tiled.tiles``), beside the plain run's output."""

    run: Run
    tiles: tuple[Tile, ...]  # one per block of B_c keys
    max_diff: float  # max |tiled output - the plain run's context| for this head


def tiled_run(tokens: tuple[str, ...], config: AttentionConfig, head: int, block: int) -> TiledRun:
    """Head ``head`` (0-based) of the sidebar's run, recomputed block by block with ``block`` keys per block."""
    return TiledRun(attention_run(tokens, config), *_tiled(tokens, config, head, block))


@bounded_cache.cache(max_bytes=12 * MB)
def _tiled(tokens: tuple[str, ...], config: AttentionConfig, head: int, block: int) -> tuple[tuple[Tile, ...], float]:
    """``TiledRun`` but its run (``attention_run`` keeps that): the tiles and the difference."""
    tr = attention_run(tokens, config).trace
    bias = None if tr.bias is None else tr.bias[head]  # (T_q, T_k): ALiBi's, (h, T_q, T_k) in the trace
    blocks = tuple(
        tiles(
            tr.q[head],
            tr.keys_per_head[head],
            tr.values_per_head[head],
            tr.mask,
            block=block,
            scale=tr.scale,
            bias=bias,
        )
    )
    diff = float(np.max(np.abs(blocks[-1].output() - tr.context[head])))
    return blocks, diff

"""A tiny transformer: embeddings + positions, 1 or 2 attention layers, unembedding.

    x = E[tokens] + P                          (T, d_model)    P: learned, sinusoidal, or none / rope (0)
    per layer:  x = x + MHA(LN1(x))            attention through core.multihead: one AttentionTrace per layer
                x = x + W2 gelu(LN2(x) W1 + b1) + b2     only with mlp=True
    logits = LN_f(x) @ W_U                     (T, vocab)      LN only with layer_norm=True

Parameters live in one flat dict ``name -> array`` (``"embed"``, ``"pos"``,
``"l0.w_q"``, ...), so Adam, the gradient check and ``.npz`` files treat them alike.

The model computes in its parameters' dtype: float32 to train (twice as fast as
float64 at these sizes), float64 for the gradient check.

Notation: ``B`` sequences, ``T`` tokens, ``h`` heads, ``d`` = d_model, ``V`` vocabulary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.ablation import Knockout, apply_knockout
from core.attention import causal_mask
from core.heads import check_heads
from core.layers import normal_cdf, normalise
from core.multihead import AttentionTrace, Projections, linear, multi_head_attention
from core.positions import POSITIONAL_KINDS, positional_encoding

N_POSITIONS = 32
"""Rows of the learned position table, and the longest sequence any kind accepts (keeps runs short)."""

LN_EPS = 1e-5
"""LayerNorm's epsilon, as in torch.nn.LayerNorm."""

MLP_RATIO = 4
"""The MLP's hidden width is MLP_RATIO * d_model, as in GPT-2."""


@dataclass(frozen=True)
class ModelConfig:
    """The architecture, one reason per field; ``__post_init__`` checks it once.

    The vocabulary is the task's, not the architecture's: ``init_params`` takes its
    size, and the parameters carry it from then on (``embed`` is ``(V, d)``).
    """

    d_model: int = 32
    """Width of the residual stream."""
    n_heads: int = 1
    """Heads per layer, each on d_k = d_model / n_heads columns."""
    n_layers: int = 1
    """1 or 2: induction needs two (one head to shift, one to look up)."""
    positional: str = "learned"
    """How order enters: "learned" (a trained table), "sinusoidal" (fixed), "rope" (rotates q, k), "none"."""
    causal: bool = True
    """Query t sees keys 0..t only (next-token tasks need it; reverse changes form with it)."""
    layer_norm: bool = False
    """Pre-LayerNorm before attention, MLP and unembedding. Off: fewer moving parts for a class."""
    mlp: bool = False
    """A GELU MLP after each attention layer. The tasks here need none."""
    n_positions: int = N_POSITIONS
    """Longest sequence; rows of the learned table."""

    def __post_init__(self) -> None:
        if self.d_model < 2:
            raise ValueError(f"d_model must be at least 2, got {self.d_model}")
        if self.positional not in POSITIONAL_KINDS:
            raise ValueError(f"positional must be one of {', '.join(POSITIONAL_KINDS)}, got {self.positional!r}")
        check_heads(self.d_model, self.n_heads, self.positional)  # divides d_model; RoPE needs an even d_k
        if self.n_layers not in (1, 2):
            raise ValueError(f"n_layers must be 1 or 2, got {self.n_layers}")

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    def check_length(self, t: int) -> None:
        """Raise ``ValueError`` if a sequence of ``t`` tokens does not fit the positions."""
        if not 1 <= t <= self.n_positions:
            raise ValueError(
                f"a sequence of {t} tokens does not fit: the model has {self.n_positions} positions "
                f"(rows of its position table); shorten the task"
            )


def init_params(
    config: ModelConfig, vocab_size: int, seed: int, dtype: str | type = np.float64
) -> dict[str, np.ndarray]:
    """Fresh parameters for a task of ``vocab_size`` symbols, drawn from ``seed``.

    Gaussian, std 1/sqrt(fan_in); LayerNorm gains 1, biases 0. Embedding (and
    learned position) rows have std 1, like ``core.tokens.embed``, so the scaled
    scores start spread by about one unit. Drawn in float64, then cast to ``dtype``:
    the model computes in its parameters' dtype.
    """
    if vocab_size < 2:
        raise ValueError(f"vocab_size must be at least 2, got {vocab_size}")
    rng = np.random.default_rng([int(seed), 0x1417])  # 0x1417: "init", a stream apart from the data
    d, v = config.d_model, vocab_size

    def normal(*shape: int, std: float) -> np.ndarray:
        return rng.standard_normal(shape) * std  # shape, float64

    params = {"embed": normal(v, d, std=1.0)}  # (V, d)
    if config.positional == "learned":
        params["pos"] = normal(config.n_positions, d, std=1.0)  # (n_positions, d)
    for layer in range(config.n_layers):
        p = f"l{layer}."
        if config.layer_norm:
            params[p + "ln1_g"], params[p + "ln1_b"] = np.ones(d), np.zeros(d)  # (d,), (d,)
        for name in ("w_q", "w_k", "w_v", "w_o"):
            params[p + name] = normal(d, d, std=1 / math.sqrt(d))  # (d, d)
        if config.mlp:
            if config.layer_norm:
                params[p + "ln2_g"], params[p + "ln2_b"] = np.ones(d), np.zeros(d)  # (d,), (d,)
            params[p + "w_1"] = normal(d, MLP_RATIO * d, std=1 / math.sqrt(d))  # (d, 4d)
            params[p + "b_1"] = np.zeros(MLP_RATIO * d)  # (4d,)
            params[p + "w_2"] = normal(MLP_RATIO * d, d, std=1 / math.sqrt(MLP_RATIO * d))  # (4d, d)
            params[p + "b_2"] = np.zeros(d)  # (d,)
    if config.layer_norm:
        params["lnf_g"], params["lnf_b"] = np.ones(d), np.zeros(d)  # (d,), (d,)
    params["unembed"] = normal(d, v, std=1 / math.sqrt(d))  # (d, V)
    return {name: p.astype(dtype) for name, p in params.items()}  # each shape kept, in dtype


@dataclass
class Normalised:
    """A LayerNorm's input after ``core.layers.normalise``: what the LayerNorm's backward pass reads."""

    xhat: np.ndarray  # (..., T, d): each row at mean 0, variance 1
    rstd: np.ndarray  # (..., T, 1): 1 / sqrt(var + eps) of each row


@dataclass
class LayerCache:
    """What one layer's backward pass reads."""

    attn_in: np.ndarray  # (..., T, d): LN1(x), or the residual stream x itself
    ln1: Normalised | None  # LN1's normalised input (None without LayerNorm)
    trace: AttentionTrace  # q, k, v (..., h, T, d_k), weights (..., h, T, T), concat (..., T, d)
    mlp_in: np.ndarray | None = None  # (..., T, d): LN2(x + attention output), or that sum itself
    ln2: Normalised | None = None  # LN2's normalised input
    hidden: np.ndarray | None = None  # (..., T, 4d): before GELU
    cdf: np.ndarray | None = None  # (..., T, 4d): Phi(hidden), which GELU's derivative needs again
    act: np.ndarray | None = None  # (..., T, 4d): after GELU


@dataclass
class ForwardCache:
    """The whole forward pass: per-layer caches, the final stream and the logits."""

    tokens: np.ndarray  # (..., T) int
    layers: list[LayerCache]
    f: np.ndarray  # (..., T, d): LN_f(the residual stream after the last layer), or that stream
    lnf: Normalised | None  # LN_f's normalised input
    logits: np.ndarray  # (..., T, V)


def attention_mask(config: ModelConfig, t: int) -> np.ndarray | None:
    """``(T, T)`` causal mask (True = may attend), or None for bidirectional attention."""
    return causal_mask(t) if config.causal else None  # (T, T) or None


def position_table(config: ModelConfig, params: dict[str, np.ndarray], t: int) -> np.ndarray:
    """``(T, d)`` table added to the embeddings: the learned rows, the sinusoids, or zeros."""
    if config.positional == "learned":
        return params["pos"][:t]  # (T, d)
    table = positional_encoding(config.positional, t, config.d_model)  # (T, d) float64: sinusoidal, or zeros
    return table.astype(params["embed"].dtype, copy=False)  # in the parameters' dtype


def projections(params: dict[str, np.ndarray], layer: int) -> Projections:
    """Layer ``layer``'s attention weights as core's ``Projections``."""
    p = f"l{layer}."
    return Projections(  # 4 x (d, d)
        w_q=params[p + "w_q"], w_k=params[p + "w_k"], w_v=params[p + "w_v"], w_o=params[p + "w_o"]
    )


def pre_norm(
    params: dict[str, np.ndarray], config: ModelConfig, name: str, x: np.ndarray
) -> tuple[np.ndarray, Normalised | None]:
    """``LN(x) = xhat * gamma + beta`` with the parameters ``name + "_g"``, ``name + "_b"``, and what its
    backward pass needs; ``(x, None)`` when the model has no LayerNorm."""
    if not config.layer_norm:
        return x, None
    xhat, rstd = normalise(x, LN_EPS)  # (..., T, d), (..., T, 1)
    return xhat * params[name + "_g"] + params[name + "_b"], Normalised(xhat, rstd)  # (..., T, d)


def forward(
    params: dict[str, np.ndarray],
    config: ModelConfig,
    tokens: np.ndarray,
    knockout: Knockout | tuple[Knockout, ...] | None = None,
) -> ForwardCache:
    """Run ``tokens (..., T)`` (ints) through the model; every array the backward pass needs is kept.

    ``knockout``: one head's output replaced, or several heads' together (``core.ablation``), a probe only:
    the backward pass ignores it."""
    tokens = np.asarray(tokens)  # (..., T) ints
    t = tokens.shape[-1]
    config.check_length(t)
    mask = attention_mask(config, t)  # (T, T) or None
    rope = np.arange(t) if config.positional == "rope" else None  # (T,) positions for RoPE
    x = params["embed"][tokens] + position_table(config, params, t)  # (..., T, d)
    layers = []
    for layer in range(config.n_layers):
        p = f"l{layer}."
        attn_in, ln1 = pre_norm(params, config, p + "ln1", x)  # (..., T, d)
        trace = multi_head_attention(  # weights (..., h, T, T), output (..., T, d)
            attn_in, projections(params, layer), config.n_heads, mask=mask, q_positions=rope, k_positions=rope
        )
        trace = apply_knockout(knockout, layer, trace, projections(params, layer))  # unchanged unless knocked out
        x = x + trace.output  # (..., T, d): residual
        cache = LayerCache(attn_in=attn_in, ln1=ln1, trace=trace)
        if config.mlp:
            mlp_in, cache.ln2 = pre_norm(params, config, p + "ln2", x)  # (..., T, d)
            hidden = linear(mlp_in, params[p + "w_1"], params[p + "b_1"])  # (..., T, d) @ (d, 4d) -> (..., T, 4d)
            cdf = normal_cdf(hidden)  # (..., T, 4d): Phi(hidden)
            act = hidden * cdf  # (..., T, 4d): gelu(hidden) = hidden * Phi(hidden)
            x = x + linear(act, params[p + "w_2"], params[p + "b_2"])  # (..., T, 4d) @ (4d, d) -> (..., T, d)
            cache.mlp_in, cache.hidden, cache.cdf, cache.act = mlp_in, hidden, cdf, act
        layers.append(cache)
    f, lnf = pre_norm(params, config, "lnf", x)  # (..., T, d)
    logits = f @ params["unembed"]  # (..., T, d) @ (d, V) -> (..., T, V)
    return ForwardCache(tokens=tokens, layers=layers, f=f, lnf=lnf, logits=logits)


def cross_entropy(logits: np.ndarray, targets: np.ndarray, scored: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Mean cross-entropy over the scored positions: ``(loss, dloss/dlogits (..., T, V), correct (..., T) bool)``.

    ``correct`` is True where a scored position's arg-max is its target.
    """
    shifted = logits - logits.max(axis=-1, keepdims=True)  # (..., T, V): stable log-softmax
    e = np.exp(shifted)  # (..., T, V)
    z = e.sum(axis=-1, keepdims=True)  # (..., T, V) -> (..., T, 1)
    log_p = shifted - np.log(z)  # (..., T, V)
    n = max(int(scored.sum()), 1)
    picked = np.take_along_axis(log_p, targets[..., None], axis=-1)[..., 0]  # (..., T): log p(target)
    loss = -float(picked[scored].sum()) / n
    dlogits = e / z  # (..., T, V): softmax
    np.put_along_axis(  # (..., T, V): softmax minus the one-hot target
        dlogits, targets[..., None], np.take_along_axis(dlogits, targets[..., None], axis=-1) - 1, axis=-1
    )
    dlogits *= scored[..., None] / n  # (..., T, V) * (..., T, 1): only scored positions carry gradient
    correct = (logits.argmax(axis=-1) == targets) & scored  # (..., T)
    return loss, dlogits, correct


def traces(params: dict[str, np.ndarray], config: ModelConfig, tokens: np.ndarray) -> list[AttentionTrace]:
    """One ``AttentionTrace`` per layer for ``tokens (T,)``: weights ``(h, T, T)``, what the views draw."""
    return [layer.trace for layer in forward(params, config, np.asarray(tokens)).layers]  # weights (h, T, T) each

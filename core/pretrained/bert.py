"""A BERT encoder's forward pass in NumPy, each layer's attention through ``core.multihead``.

    ids (..., T) --embed--> x (..., T, d_model) --6 x block--> x --mean pool, L2--> embedding (..., d_model)

    block:  trace = multi_head_attention(x)               (..., h, T, T) weights in the trace
            x = LayerNorm(x + trace.output)
            x = LayerNorm(x + FFN(x)),  FFN = GELU(x W_in + b_in) W_out + b_out

Notation: ``...`` is nothing (one sentence) or ``B`` (a padded batch), ``T`` tokens,
``h`` heads, ``d_model`` the width, ``d_ff`` the feed-forward width. Checkpoints store
torch's ``nn.Linear`` weights as ``(d_out, d_in)`` for ``x W^T``; here every matrix is
used as ``x @ W``, so each is transposed once at load and copied into row-major order:
OpenBLAS multiplies by a row-major ``W`` 15-45% faster than by the transposed view at
8-128 tokens (``bench.pretrained``), for 42 MB of copies in float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.ablation import Knockout, knock_out
from core.attention import causal_mask
from core.layers import gelu, layer_norm
from core.multihead import AttentionTrace, Projections, linear, multi_head_attention
from core.pretrained.config import BertConfig


@dataclass(frozen=True)
class BertLayer:
    """One block's weights, already in ``x @ W`` orientation."""

    attention: Projections
    """w_q, w_k, w_v, w_o (d_model, d_model) with biases b_q, b_k, b_v, b_o (d_model,)."""
    ln_attention: tuple[np.ndarray, np.ndarray]
    """gamma, beta (d_model,) of the LayerNorm after attention + residual."""
    w_in: np.ndarray
    """(d_model, d_ff): the FFN's first matrix."""
    b_in: np.ndarray
    """(d_ff,)"""
    w_out: np.ndarray
    """(d_ff, d_model): the FFN's second matrix."""
    b_out: np.ndarray
    """(d_model,)"""
    ln_output: tuple[np.ndarray, np.ndarray]
    """gamma, beta (d_model,) of the LayerNorm after FFN + residual."""


@dataclass(frozen=True)
class BertWeights:
    """Every parameter of the encoder. ``word`` keeps the checkpoint's dtype (its rows are cast when
    looked up, so float64 does not copy the 47 MB table); everything else is in ``dtype``."""

    config: BertConfig
    word: np.ndarray
    """(vocab_size, d_model) one row per WordPiece id."""
    position: np.ndarray
    """(max_positions, d_model) one learned row per position."""
    token_type: np.ndarray
    """(type_vocab_size, d_model) segment rows; single sentences use row 0."""
    ln_embeddings: tuple[np.ndarray, np.ndarray]
    """gamma, beta (d_model,) of the LayerNorm on the summed embeddings."""
    layers: tuple[BertLayer, ...]
    """n_layers blocks, first to last."""

    @property
    def dtype(self) -> np.dtype:
        return self.position.dtype

    @classmethod
    def from_tensors(cls, tensors: dict[str, np.ndarray], config: BertConfig, dtype=np.float32) -> BertWeights:
        """Pick the named tensors of a transformers ``BertModel`` checkpoint; casts are no-ops when dtypes agree."""

        def stored(name: str) -> np.ndarray:
            key = name if name in tensors else f"bert.{name}"  # checkpoints saved from a task head add "bert."
            if key not in tensors:
                raise KeyError(f"the checkpoint has no tensor {name!r}")
            return tensors[key]

        def get(name: str, *, transpose: bool = False) -> np.ndarray:
            if transpose:  # (d_out, d_in) -> (d_in, d_out), copied row-major for x @ W
                return np.ascontiguousarray(stored(name).T, dtype=dtype)
            return stored(name).astype(dtype, copy=False)

        def norm(prefix: str) -> tuple[np.ndarray, np.ndarray]:
            return get(f"{prefix}.LayerNorm.weight"), get(f"{prefix}.LayerNorm.bias")

        layers = []
        for i in range(config.n_layers):
            p = f"encoder.layer.{i}"
            attention = Projections(
                w_q=get(f"{p}.attention.self.query.weight", transpose=True),
                w_k=get(f"{p}.attention.self.key.weight", transpose=True),
                w_v=get(f"{p}.attention.self.value.weight", transpose=True),
                w_o=get(f"{p}.attention.output.dense.weight", transpose=True),
                b_q=get(f"{p}.attention.self.query.bias"),
                b_k=get(f"{p}.attention.self.key.bias"),
                b_v=get(f"{p}.attention.self.value.bias"),
                b_o=get(f"{p}.attention.output.dense.bias"),
            )
            layers.append(
                BertLayer(
                    attention=attention,
                    ln_attention=norm(f"{p}.attention.output"),
                    w_in=get(f"{p}.intermediate.dense.weight", transpose=True),
                    b_in=get(f"{p}.intermediate.dense.bias"),
                    w_out=get(f"{p}.output.dense.weight", transpose=True),
                    b_out=get(f"{p}.output.dense.bias"),
                    ln_output=norm(f"{p}.output"),
                )
            )
        weights = cls(
            config=config,
            word=stored("embeddings.word_embeddings.weight"),
            position=get("embeddings.position_embeddings.weight"),
            token_type=get("embeddings.token_type_embeddings.weight"),
            ln_embeddings=norm("embeddings"),
            layers=tuple(layers),
        )
        weights.check_shapes()
        return weights

    def check_shapes(self) -> None:
        """Raise ``ValueError`` if any tensor disagrees with the config (a checkpoint of another model)."""
        c = self.config
        expected = {
            "word": (self.word, (c.vocab_size, c.d_model)),
            "position": (self.position, (c.max_positions, c.d_model)),
            "token_type": (self.token_type, (c.type_vocab_size, c.d_model)),
        }
        for i, layer in enumerate(self.layers):
            expected[f"layer {i} w_q"] = (layer.attention.w_q, (c.d_model, c.d_model))
            expected[f"layer {i} w_in"] = (layer.w_in, (c.d_model, c.d_ff))
            expected[f"layer {i} w_out"] = (layer.w_out, (c.d_ff, c.d_model))
        wrong = {name: (a.shape, shape) for name, (a, shape) in expected.items() if a.shape != shape}
        if wrong:
            raise ValueError(f"checkpoint shapes do not match {c}: {wrong} (got, expected)")


@dataclass(frozen=True)
class BertOutput:
    """Everything one forward pass computed. ``...`` is nothing (one sentence) or ``B`` (a batch)."""

    traces: tuple[AttentionTrace, ...]
    """``traces[l]`` is layer ``l + 1``'s attention (0-based index); ``.weights`` is (..., h, T, T)."""
    hidden_states: tuple[np.ndarray, ...]
    """n_layers + 1 arrays (..., T, d_model): the embeddings after LayerNorm, then each block's output."""
    embedding: np.ndarray
    """(..., d_model) the sentence embedding: mean over real tokens, then unit L2 norm."""
    real: np.ndarray
    """(..., T) bool: True for real tokens, False for padding."""

    @property
    def last_hidden_state(self) -> np.ndarray:
        return self.hidden_states[-1]  # (..., T, d_model)


def embed(weights: BertWeights, ids: np.ndarray) -> np.ndarray:
    """``ids (..., T) -> (..., T, d_model)``: word + token type (segment 0) + position, then LayerNorm."""
    t = ids.shape[-1]
    x = weights.word[ids].astype(weights.dtype, copy=False) + weights.token_type[0]  # (..., T, d_model)
    x = x + weights.position[:t]  # (..., T, d_model): row i learned for position i
    return layer_norm(x, *weights.ln_embeddings, weights.config.layer_norm_eps)  # (..., T, d_model)


def encoder_block(
    layer: BertLayer,
    x: np.ndarray,
    n_heads: int,
    key_mask: np.ndarray | None,
    eps: float,
    knock_head: int | None = None,
):
    """``x (..., T, d_model) -> (x (..., T, d_model), trace)``: attention, add & norm, FFN, add & norm.

    ``knock_head``: that head's output zeroed before W_O (``core.ablation``), a probe."""
    trace = multi_head_attention(x, layer.attention, n_heads, mask=key_mask)  # weights (..., h, T, T)
    if knock_head is not None:
        trace = knock_out(trace, layer.attention, knock_head)  # head knock_head's context -> 0, W_O again
    x = layer_norm(trace.output + x, *layer.ln_attention, eps)  # (..., T, d_model)
    hidden = gelu(linear(x, layer.w_in, layer.b_in))  # (..., T, d_model) @ (d_model, d_ff) -> (..., T, d_ff)
    x = layer_norm(linear(hidden, layer.w_out, layer.b_out) + x, *layer.ln_output, eps)  # (..., T, d_model)
    return x, trace


def mean_pool(x: np.ndarray, real: np.ndarray) -> np.ndarray:
    """``(..., T, d_model), (..., T) -> (..., d_model)``: the mean of the real tokens' rows, scaled to unit length."""
    m = real[..., None].astype(x.dtype)  # (..., T, 1)
    pooled = (x * m).sum(axis=-2) / np.maximum(m.sum(axis=-2), 1e-9)  # (..., d_model): padding adds nothing
    norm = np.linalg.norm(pooled, axis=-1, keepdims=True)  # (..., 1)
    return pooled / np.maximum(norm, 1e-12)  # (..., d_model), as sentence-transformers' Normalize


def bert_forward(
    weights: BertWeights,
    ids: np.ndarray,
    real: np.ndarray | None = None,
    *,
    causal: bool = False,
    knockout: Knockout | None = None,
) -> BertOutput:
    """Run the encoder on ``ids (T,)`` or a padded batch ``ids (B, T)`` with ``real (B, T)`` (True = real token).

    Padding keys are masked (True = may attend), so padding gets exactly zero
    attention weight; padding queries still attend (to the real keys), as in
    transformers, and their rows are left out of the mean pooling. ``causal=True`` is an experiment the
    model was not trained for: every layer's query i may attend to keys 0..i only. ``knockout``: one head's
    output zeroed (``core.ablation``; zero ablation only, the model has no held-out set to take a mean over).
    """
    if knockout is not None and knockout.replacement is not None:
        raise ValueError("bert_forward knocks a head out by zeros only (no data set to take its mean over)")
    ids = np.asarray(ids)
    c = weights.config
    if not np.issubdtype(ids.dtype, np.integer) or ids.ndim not in (1, 2):
        raise ValueError(f"ids must be an integer array (T,) or (B, T), got {ids.dtype} {ids.shape}")
    if not 1 <= ids.shape[-1] <= c.max_positions:
        raise ValueError(f"{ids.shape[-1]} tokens: this model has positions for 1 to {c.max_positions}")
    if ids.size and (ids.min() < 0 or ids.max() >= c.vocab_size):
        raise ValueError(f"token ids must lie in [0, {c.vocab_size})")
    if real is None:
        real, key_mask = np.ones(ids.shape, dtype=bool), None  # (..., T): nothing to mask
    else:
        real = np.asarray(real, dtype=bool)
        if real.shape != ids.shape:
            raise ValueError(f"real {real.shape} must have the shape of ids {ids.shape}")
        key_mask = real[..., None, None, :]  # (..., 1, 1, T): every head and query may attend to the real keys
    if causal:
        tril = causal_mask(ids.shape[-1])  # (T, T): query i sees keys 0..i
        key_mask = tril if key_mask is None else key_mask & tril  # (..., 1, T, T) with padding

    x = embed(weights, ids)  # (..., T, d_model)
    hidden_states, traces = [x], []
    for i, layer in enumerate(weights.layers):
        knock = knockout.head if knockout is not None and knockout.layer == i else None
        x, trace = encoder_block(layer, x, c.n_heads, key_mask, c.layer_norm_eps, knock)  # (..., T, d_model)
        hidden_states.append(x)
        traces.append(trace)
    return BertOutput(tuple(traces), tuple(hidden_states), mean_pool(x, real), real)

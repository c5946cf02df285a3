"""Probe what a trained head does: knock it out, read the model's predictions, run repeated random tokens.

    ablation_table(result, "mean")   every head knocked out in turn: held-out accuracy and loss without it
    predictions(logits, T)           the predicted next token and its probability, softmax(logits / T)
    repeated_tokens(vocab, n, seed)  a random sequence of n tokens, twice: (2n,)
    induction_scores(weights, n)     per head, the mean weight on the token after the earlier occurrence

Notation: ``B`` sequences, ``T`` tokens, ``L`` layers, ``h`` heads, ``V`` vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.ablation import MODES, Knockout
from core.attention import softmax
from core.training.model import ModelConfig, cross_entropy, forward
from core.training.tasks import Batch
from core.training.train import TrainResult, held_out


@dataclass(frozen=True)
class Score:
    """Held-out accuracy and loss of one forward pass over the held-out set."""

    accuracy: float
    """Token accuracy on the scored positions (0..1)."""
    loss: float
    """Mean cross-entropy on the scored positions (nats)."""


@dataclass(frozen=True)
class AblationTable:
    """Every head knocked out in turn, and the intact model."""

    mode: str
    """"zero" or "mean" (``core.ablation.MODES``)."""
    intact: Score
    knocked: tuple[tuple[Score, ...], ...]
    """``knocked[layer][head]`` (0-based): the held-out score with that head knocked out."""

    @property
    def accuracy_drop(self) -> np.ndarray:
        """``(L, h)`` intact accuracy minus the accuracy without each head (0.5 = 50 points)."""
        return self.intact.accuracy - np.array([[s.accuracy for s in layer] for layer in self.knocked])

    @property
    def loss_rise(self) -> np.ndarray:
        """``(L, h)`` the loss without each head minus the intact loss."""
        return np.array([[s.loss for s in layer] for layer in self.knocked]) - self.intact.loss


def score(
    params: dict[str, np.ndarray],
    config: ModelConfig,
    batch: Batch,
    knockout: Knockout | tuple[Knockout, ...] | None = None,
) -> Score:
    """Accuracy and loss on ``batch`` (one forward pass), with ``knockout``'s head (or heads) replaced if given."""
    logits = forward(params, config, batch.inputs, knockout).logits  # (B, T, V)
    loss, _, correct = cross_entropy(logits, batch.targets, batch.scored)
    return Score(float(correct.sum() / max(int(batch.scored.sum()), 1)), loss)


def mean_contexts(params: dict[str, np.ndarray], config: ModelConfig, batch: Batch) -> np.ndarray:
    """``(L, h, T, d_k)``: every head's context (its output before W_O) averaged over ``batch``'s sequences.

    Per position, so a head that always writes the same thing at position t is replaced by exactly that."""
    cache = forward(params, config, batch.inputs)
    return np.stack([layer.trace.context.mean(axis=0) for layer in cache.layers])  # (B, h, T, d_k) -> (h, T, d_k)


def knockout(
    params: dict[str, np.ndarray], config: ModelConfig, batch: Batch, layer: int, head: int, mode: str
) -> Knockout:
    """Layer ``layer``, head ``head`` (0-based) knocked out by zeros or by its mean over ``batch``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    replacement = mean_contexts(params, config, batch)[layer, head] if mode == "mean" else None  # (T, d_k)
    return Knockout(layer, head, replacement)


def probe_set(result: TrainResult) -> Batch:
    """The held-out set the probes measure on: the one training evaluates on (fixed, not trained on)."""
    s = result.settings
    return held_out(s.task, s.length, s.model.causal)


def ablation_table(result: TrainResult, mode: str = "mean") -> AblationTable:
    """Knock out every head of ``result``'s model in turn and score the held-out set without it."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    params, config, batch = result.params, result.settings.model, probe_set(result)
    means = mean_contexts(params, config, batch) if mode == "mean" else None  # (L, h, T, d_k)
    knocked = tuple(
        tuple(
            score(params, config, batch, Knockout(layer, head, None if means is None else means[layer, head]))
            for head in range(config.n_heads)
        )
        for layer in range(config.n_layers)
    )
    return AblationTable(mode, score(params, config, batch), knocked)


@dataclass(frozen=True)
class Predictions:
    """At every position: the most likely next token and its probability at one temperature."""

    token: np.ndarray
    """(T,) int: arg-max of the logits (the same at every temperature)."""
    probability: np.ndarray
    """(T,) its probability under softmax(logits / temperature)."""
    temperature: float


def predictions(logits: np.ndarray, temperature: float = 1.0) -> Predictions:
    """``logits (T, V)`` -> the predicted token and its probability under ``softmax(logits / temperature)``.

    Below 1 the distribution sharpens towards the arg-max, above 1 it flattens towards uniform."""
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    p = softmax(np.asarray(logits, np.float64) / temperature, axis=-1)  # (T, V)
    token = p.argmax(axis=-1)  # (T,)
    return Predictions(token, np.take_along_axis(p, token[:, None], axis=-1)[:, 0], float(temperature))


def repeated_tokens(vocab_size: int, n: int, seed: int = 0) -> np.ndarray:
    """``(2n,)``: ``n`` tokens drawn uniformly from ``0..vocab_size-1``, then the same ``n`` again."""
    if n < 2:
        raise ValueError(f"the repeated half needs at least 2 tokens, got {n}")
    rng = np.random.default_rng([int(seed), 0x2E9])  # 0x2E9: "rep", a stream of its own
    half = rng.integers(0, vocab_size, n)  # (n,)
    return np.concatenate([half, half])  # (2n,)


def induction_scores(weights: np.ndarray, n: int) -> np.ndarray:
    """``weights (..., h, 2n, 2n)`` of a sequence repeated twice -> ``(..., h)``: mean weight of the second copy's
    queries on the token after their earlier occurrence (query ``t >= n`` on key ``t - n + 1``).

    An induction head scores near 1; a previous-token head near 0 (it looks at ``t - 1``)."""
    queries = np.arange(n, 2 * n)  # (n,) the second copy
    keys = queries - n + 1  # (n,) the token after each one's earlier occurrence
    return weights[..., queries, keys].mean(axis=-1)  # (..., h, n) -> (..., h)


def repeated_token_scores(result: TrainResult, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``result``'s model on repeated random tokens as long as its task's sequences allow: the tokens ``(2n,)``
    and every head's induction score ``(L, h)``."""
    s = result.settings
    n = min(s.seq_len, s.model.n_positions) // 2
    tokens = repeated_tokens(s.vocab_size, n, seed)  # (2n,)
    weights = np.stack([layer.trace.weights for layer in forward(result.params, s.model, tokens).layers])
    return tokens, induction_scores(weights, n)  # (L, h, 2n, 2n) -> (L, h)


def after_earlier_twin(tokens: np.ndarray) -> np.ndarray:
    """``tokens (T,)`` -> ``(T,)``: at each position whose token appeared before, the token that followed its latest
    earlier occurrence (what an induction head copies); -1 where the token is new."""
    tokens = np.asarray(tokens)
    out = np.full(tokens.shape, -1, dtype=np.int64)  # (T,)
    for t in range(1, len(tokens)):
        earlier = np.flatnonzero(tokens[:t] == tokens[t])  # positions j < t with the same token
        if earlier.size:  # earlier[-1] + 1 <= t: the follower is always in the sequence
            out[t] = tokens[earlier[-1] + 1]
    return out

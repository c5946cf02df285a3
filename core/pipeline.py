"""The whole data path for one sentence, and the permutation experiment built on it.

tokens -> embed -> + positional -> multi-head self-attention -> trace; with a
source sentence, multi-head cross-attention (queries from one, keys and values
from the other).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.attention import alibi_bias, attention_mask
from core.heads import check_heads
from core.multihead import AttentionTrace, Projections, multi_head_attention
from core.positions import POSITIONAL_KINDS
from core.tokens import embed
from core.toy_weights import WEIGHT_KINDS, make_projections, model_positions

EMBEDDED = "embedding + positions"
"""A first layer's input: each token's embedding plus the position table (``Run.positions``, zeros when
nothing is added)."""


def layer_output(layer: int) -> str:
    """A later layer's input, in the page's words: ``layer_output(1) == "layer 1's output"``."""
    return f"layer {layer}'s output"


def normalised(what: str) -> str:
    """An input a LayerNorm read before attention: ``normalised(EMBEDDED) == "LayerNorm(embedding + positions)"``."""
    return f"LayerNorm({what})"


@dataclass(frozen=True)
class AttentionConfig:
    """The settings a teacher changes, one reason per field."""

    d_model: int = 64
    """Width of every token vector; more width, more room per head."""
    n_heads: int = 4
    """Heads run side by side, each on d_k = d_model / n_heads columns."""
    causal: bool = False
    """Mask future tokens, as a decoder does: query i sees keys 0..i only."""
    positional: str = "none"
    """"none" keeps the permutation symmetry; "sinusoidal" or "learned" break it; "rope" rotates q and k
    per head instead of adding to x, so scores see only relative position (needs an even d_k)."""
    seed: int = 0
    """Fixes the embeddings, positional table and projections: same seed, same pictures."""
    scaled: bool = True
    """Divide QK^T by sqrt(d_k). False (scale 1) shows heads collapsing toward one-hot as d_k grows."""
    weights: str = "random"
    """"random" (seeded), or hand-built: "identity" (look-alikes attend to each other) or "previous"
    (a previous-token head, d_k >= 4, reading its own clock table when positional="learned"). Learned
    weights are other model sources (``core.sources``), not a config."""
    kv_heads: int | None = None
    """K/V heads, a divisor of n_heads: each group of n_heads / kv_heads query heads shares one K and V
    (Llama 3: 8 for 32; 1 is multi-query). None: one per query head, multi-head attention. Random weights only:
    the hand-built ones have no grouped form."""
    window: int = 0
    """A sliding window (Mistral), 0 = off: with causal, query i sees keys i-w+1..i; without, |i - j| < w."""
    prefix: int = 0
    """A prefix-LM, 0 = off: with causal, the first p tokens see each other both ways (the window does not apply
    inside them). Without causal every key is visible already, so it changes nothing."""
    alibi: bool = False
    """Add ALiBi's bias -m_h (i - j) (symmetric |i - j| without causal) to the scaled scores (BLOOM, MPT). It
    replaces position embeddings: meant with positional="none"."""

    def __post_init__(self) -> None:
        if self.d_model < 1:
            raise ValueError(f"d_model must be a positive integer, got {self.d_model}")
        if self.positional not in POSITIONAL_KINDS:
            raise ValueError(f"positional must be one of {POSITIONAL_KINDS}, got {self.positional!r}")
        if self.weights not in WEIGHT_KINDS:
            raise ValueError(f"weights must be one of {WEIGHT_KINDS}, got {self.weights!r}")
        check_heads(self.d_model, self.n_heads, self.positional, self.weights)
        if self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed}")
        kv = self.kv_heads
        if kv is not None and (kv < 1 or self.n_heads % kv):
            raise ValueError(f"kv_heads must divide n_heads = {self.n_heads}, got {kv}")
        if kv is not None and kv != self.n_heads and self.weights != "random":
            raise ValueError(
                f"kv_heads = {kv} needs random weights: the hand-built {self.weights!r} weights give every query "
                "head its own K (W_K = I for identity), so they have no grouped form"
            )
        for name in ("window", "prefix"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 (off) or a positive number of tokens, got {getattr(self, name)}")

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_head_count(self) -> int:
        """The K/V heads that run: ``kv_heads``, or ``n_heads`` when it is None."""
        return self.n_heads if self.kv_heads is None else self.kv_heads

    def mask(self, t_q: int, t_k: int) -> np.ndarray | None:
        """``(T_q, T_k)`` the bool mask these settings apply (top-left aligned), or None when every key is seen."""
        if not (self.causal or self.window):
            return None  # a prefix alone changes nothing: every key is visible already
        return attention_mask(t_q, t_k, causal=self.causal, window=self.window, prefix=self.prefix)  # (T_q, T_k)

    def bias(self, t_q: int, t_k: int) -> np.ndarray | None:
        """``(h, T_q, T_k)`` ALiBi's bias when ``alibi`` is on, else None."""
        return alibi_bias(self.n_heads, t_q, t_k) if self.alibi else None  # (h, T_q, T_k) or None


@dataclass(frozen=True)
class Run:
    """One sentence through the data path: the inputs and the attention trace."""

    tokens: tuple[str, ...]
    x: np.ndarray
    """(T, d_model) token embeddings, before any position is added."""
    positions: np.ndarray
    """(T, d_model) the table added to x (zeros for "none" and "rope")."""
    trace: AttentionTrace
    """Q, K, V, scores, weights, context, concat and output of attention on x + positions."""
    source_tokens: tuple[str, ...] | None = None
    """Cross-attention: the tokens keys and values come from; None for self-attention."""
    source_x: np.ndarray | None = None
    """(T_k, d_model) the source's embeddings; None for self-attention."""
    source_positions: np.ndarray | None = None
    """(T_k, d_model) the table added to the source; None for self-attention."""
    start: int = 0
    """Position of the first token on each side: positions are start..start+T-1."""
    word_ids: tuple[int | None, ...] | None = None
    """(T,) for a pretrained model's WordPiece pieces: the word each piece belongs to (None for [CLS], [SEP])."""
    projections: Projections | None = None
    """W_Q, W_K, W_V, W_O (and biases, for a pretrained layer) that made ``trace``: what a student needs to
    rerun every number through the lessons' code."""
    layer: int = 1
    """Which layer of its model made ``trace`` (1-based); a one-layer model's run is layer 1."""
    input_from: str = EMBEDDED
    """What attention read (``x + positions``), in the page's words: ``EMBEDDED``, ``layer_output(l)``, or
    either through a LayerNorm (``normalised``). The page's description of the input reads this, never the
    settings."""
    positional: str = "none"
    """How the model that made ``trace`` gives attention positions: "none"; "sinusoidal" or "learned" (a table,
    added here as ``positions`` or already inside ``x``); "rope" (q and k rotated, nothing added)."""

    @property
    def positions_added(self) -> bool:
        """True when this run added a position table to ``x`` itself (a first layer with a table)."""
        return self.input_from == EMBEDDED and self.positional in ("sinusoidal", "learned")

    @property
    def key_tokens(self) -> tuple[str, ...]:
        """The tokens along the key axis of every (T_q, T_k) map: the source's, or the sentence's own."""
        return self.tokens if self.source_tokens is None else self.source_tokens


def run(
    tokens: list[str] | tuple[str, ...],
    config: AttentionConfig,
    *,
    source: list[str] | tuple[str, ...] | None = None,
    start: int = 0,
) -> Run:
    """Embed ``tokens``, add positions, and run multi-head attention.

    ``source=None`` is self-attention. With a ``source`` token list it is
    cross-attention, as in a decoder reading an encoder: queries come from ``tokens``
    (T_q of them), keys and values from ``source`` (T_k), and each side gets its
    own positions from ``start`` (added tables, or RoPE angles). ``causal`` then
    means the top-left aligned ``tril`` over T_q x T_k: query i may attend to source
    positions 0..i, which fits two sentences aligned word by word; a translation
    decoder's cross-attention is normally unmasked. ``start`` moves every position
    by the same amount (``core.position_shift``).
    """
    if source is not None and len(source) == 0:
        raise ValueError("the source sentence has no tokens: cross-attention needs at least one key")
    t = len(tokens)
    x = embed(list(tokens), config.d_model, config.seed)  # (T_q, d_model)
    pe = model_positions(config.positional, config.weights, t, config.d_model, config.seed, start)  # (T_q, d_model)
    src_x = src_pe = None
    t_k = t
    if source is not None:
        t_k = len(source)
        src_x = embed(list(source), config.d_model, config.seed)  # (T_k, d_model)
        src_pe = model_positions(  # (T_k, d_model)
            config.positional, config.weights, t_k, config.d_model, config.seed, start
        )
    proj = make_projections(config.weights, config.d_model, config.n_heads, config.seed)  # 4 x (d_model, d_model)
    if config.kv_head_count < config.n_heads:
        proj = proj.grouped(config.n_heads, config.kv_head_count)  # W_K, W_V (d_model, kv_heads * d_k)
    rope = config.positional == "rope"
    trace = multi_head_attention(  # weights (h, T_q, T_k), output (T_q, d_model)
        x + pe,  # (T_q, d_model)
        proj,
        config.n_heads,
        kv=None if source is None else src_x + src_pe,  # (T_k, d_model)
        mask=config.mask(t, t_k),  # (T_q, T_k), top-left aligned, or None
        scale=None if config.scaled else 1.0,
        bias=config.bias(t, t_k),  # (h, T_q, T_k) ALiBi's, or None
        q_positions=np.arange(start, start + t) if rope else None,  # (T_q,) RoPE's positions
        k_positions=np.arange(start, start + t_k) if rope else None,  # (T_k,)
    )
    return Run(
        tokens=tuple(tokens),
        x=x,
        positions=pe,
        trace=trace,
        source_tokens=None if source is None else tuple(source),
        source_x=src_x,
        source_positions=src_pe,
        start=start,
        projections=proj,
        positional=config.positional,
    )


def run_batch(one: Run, batch: int) -> AttentionTrace:
    """``one``'s attention again on a batch of ``batch`` copies of its input: every array gains a leading B axis.

    A batch stacks sequences of one length T, as lesson 2's ``MultiHeadAttention`` takes ``(B, T, d_model)``;
    copies of one sentence keep the numbers checkable (each batch row equals ``one.trace``).
    """
    if batch < 1 or one.projections is None:
        raise ValueError(f"a batch needs batch >= 1 and the run's projections, got batch={batch}")
    x = np.broadcast_to(one.x + one.positions, (batch, *one.x.shape))  # (T, d_model) -> (B, T, d_model)
    kv = None
    if one.source_x is not None:
        kv = np.broadcast_to(one.source_x + one.source_positions, (batch, *one.source_x.shape))  # (B, T_k, d_model)
    rope = one.trace.q_unrotated is not None
    t_q, t_k = one.trace.scores.shape[-2:]
    return multi_head_attention(  # weights (B, h, T_q, T_k), output (B, T_q, d_model)
        x,
        one.projections,
        one.trace.n_heads,
        kv=kv,
        mask=one.trace.mask,  # (T_q, T_k) broadcasts over (B, h, T_q, T_k)
        scale=one.trace.scale,
        bias=one.trace.bias,  # (h, T_q, T_k) broadcasts too, or None
        q_positions=np.arange(one.start, one.start + t_q) if rope else None,  # (T_q,)
        k_positions=np.arange(one.start, one.start + t_k) if rope else None,  # (T_k,)
    )


@dataclass(frozen=True)
class PermutationResult:
    """Attention on a sentence and on a reordering of it, compared position by position."""

    permutation: np.ndarray
    """(T,) the reordered sentence is ``[tokens[p] for p in permutation]``."""
    weights: np.ndarray
    """(h, T, T) weights for the original order."""
    permuted_weights: np.ndarray
    """(h, T, T) weights for the reordered sentence, in its own order."""
    realigned: np.ndarray
    """(h, T, T) the permuted weights moved back to the original order."""
    max_abs_diff: float
    """max |weights - realigned|: rounding level (~1e-15) exactly when order is invisible."""
    output: np.ndarray | None = None
    """(T, d_model) the attention output for the original order."""
    realigned_output: np.ndarray | None = None
    """(T, d_model) the reordered sentence's output rows moved back to the original order."""
    output_diff: float | None = None
    """max |output - realigned_output|: rounding level exactly when attention is permutation equivariant,
    i.e. attention(permuted sentence) = the permuted attention(sentence)."""


def realign_rows(permuted: np.ndarray, permutation: np.ndarray) -> np.ndarray:
    """Undo a permutation of the token rows: ``out[p[i]] = permuted[i]``, ``(T, d) -> (T, d)``."""
    return permuted[np.argsort(permutation)]  # (T, d): row p[i] is row i of permuted


def realign(permuted: np.ndarray, permutation: np.ndarray) -> np.ndarray:
    """Undo a permutation of both token axes: ``out[..., p[i], p[j]] = permuted[..., i, j]``."""
    inverse = np.argsort(permutation)  # (T,): inverse[p[i]] = i
    return permuted[..., inverse, :][..., :, inverse]  # (..., T, T) -> (..., T, T)


def permutation_experiment(
    tokens: list[str] | tuple[str, ...], permutation: list[int] | np.ndarray, config: AttentionConfig
) -> PermutationResult:
    """Run attention on ``tokens`` and on ``tokens`` reordered by ``permutation``.

    With no positional encoding and no mask the realigned map equals the original
    to rounding; a positional encoding or the causal mask makes the difference large.
    """
    perm = np.asarray(permutation)  # (T,)
    if sorted(perm.tolist()) != list(range(len(tokens))):
        raise ValueError(f"{perm.tolist()} is not a permutation of positions 0..{len(tokens) - 1}")
    original = run(tokens, config).trace  # weights (h, T, T), output (T, d_model)
    permuted = run([tokens[p] for p in perm], config).trace  # the same shapes, in the reordered sentence's order
    realigned = realign(permuted.weights, perm)  # (h, T, T) in the original order
    output = realign_rows(permuted.output, perm)  # (T, d_model): row i is again the word at position i
    return PermutationResult(
        permutation=perm,
        weights=original.weights,
        permuted_weights=permuted.weights,
        realigned=realigned,
        max_abs_diff=float(np.max(np.abs(original.weights - realigned))),  # (h, T, T) -> a number
        output=original.output,
        realigned_output=output,
        output_diff=float(np.max(np.abs(original.output - output))),  # (T, d_model) -> a number
    )

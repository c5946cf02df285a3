"""Attention Lab's engine: exact NumPy scaled dot-product and multi-head attention.

NumPy only: nothing here imports streamlit, plotly or pandas.
"""

from core.attention import (
    alibi_bias,
    alibi_slopes,
    attention_mask,
    attention_scores,
    causal_mask,
    masked_softmax,
    repeat_kv,
    scaled_dot_product_attention,
    softmax,
)
from core.head_summary import PATTERNS, HeadSummary, head_summary, name_patterns
from core.heads import PREVIOUS_MIN_D_K, check_heads, head_count_problem, head_counts
from core.multihead import (
    AttentionTrace,
    Projections,
    head_contributions,
    kv_head_count,
    merge_heads,
    multi_head_attention,
    split_heads,
)
from core.pipeline import (
    AttentionConfig,
    PermutationResult,
    Run,
    permutation_experiment,
    realign,
    run,
    run_batch,
)
from core.position_shift import ShiftResult, shift_experiment
from core.positions import POSITIONAL_KINDS, positional_encoding
from core.rope import ROPE_BASE, apply_rope, rope_frequencies
from core.scaling import DEFAULT_D_KS, SPREAD_D_KS, ScalingResult, SpreadResult, scaling_experiment, score_spread
from core.tokens import MAX_CHARS, MAX_TOKENS, embed, tokenize
from core.toy_weights import (
    WEIGHT_KINDS,
    clock_positions,
    identity_projections,
    make_projections,
    previous_token_projections,
)

__all__ = [
    "DEFAULT_D_KS",
    "MAX_CHARS",
    "MAX_TOKENS",
    "PATTERNS",
    "POSITIONAL_KINDS",
    "PREVIOUS_MIN_D_K",
    "ROPE_BASE",
    "SPREAD_D_KS",
    "WEIGHT_KINDS",
    "AttentionConfig",
    "AttentionTrace",
    "HeadSummary",
    "PermutationResult",
    "Projections",
    "Run",
    "ScalingResult",
    "ShiftResult",
    "SpreadResult",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "attention_mask",
    "attention_scores",
    "causal_mask",
    "check_heads",
    "clock_positions",
    "embed",
    "head_contributions",
    "head_count_problem",
    "head_counts",
    "head_summary",
    "identity_projections",
    "kv_head_count",
    "make_projections",
    "masked_softmax",
    "merge_heads",
    "multi_head_attention",
    "name_patterns",
    "permutation_experiment",
    "positional_encoding",
    "previous_token_projections",
    "realign",
    "repeat_kv",
    "rope_frequencies",
    "run",
    "run_batch",
    "scaled_dot_product_attention",
    "scaling_experiment",
    "score_spread",
    "shift_experiment",
    "softmax",
    "split_heads",
    "tokenize",
]

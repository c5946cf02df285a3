"""Attention Lab's engine: exact NumPy scaled dot-product and multi-head attention.

NumPy only: nothing here imports streamlit, plotly or pandas.
"""

from core.attention import attention_scores, causal_mask, masked_softmax, scaled_dot_product_attention, softmax
from core.multihead import (
    AttentionTrace,
    Projections,
    check_heads,
    merge_heads,
    multi_head_attention,
    split_heads,
    valid_head_counts,
)
from core.pipeline import AttentionConfig, PermutationResult, Run, permutation_experiment, realign, run
from core.positions import POSITIONAL_KINDS, positional_encoding
from core.tokens import MAX_CHARS, MAX_TOKENS, embed, tokenize

__all__ = [
    "MAX_CHARS",
    "MAX_TOKENS",
    "POSITIONAL_KINDS",
    "AttentionConfig",
    "AttentionTrace",
    "PermutationResult",
    "Projections",
    "Run",
    "attention_scores",
    "causal_mask",
    "check_heads",
    "embed",
    "masked_softmax",
    "merge_heads",
    "multi_head_attention",
    "permutation_experiment",
    "positional_encoding",
    "realign",
    "run",
    "scaled_dot_product_attention",
    "softmax",
    "split_heads",
    "tokenize",
    "valid_head_counts",
]

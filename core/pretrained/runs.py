"""A pretrained sentence as the views read it: one ``core.Run`` per layer.

Layer ``l``'s run holds the model's pieces as tokens, the hidden state that enters
the layer as ``x`` (for layer 1: word + position + token type embeddings after
LayerNorm, so the positions are already inside it and ``positions`` is zero), and
the layer's own ``AttentionTrace``. Every view that draws a random run draws these
the same way: the heads, steps, shapes and summary views need no special case.
"""

from __future__ import annotations

import numpy as np

from core.pipeline import Run
from core.pretrained.minilm import MiniLM, PretrainedRun
from core.tokens import MAX_TOKENS


def pieces_over_cap(n_pieces: int, limit: int = MAX_TOKENS) -> str:
    """The message for a sentence whose WordPiece pieces, [CLS] and [SEP] included, exceed ``limit``."""
    return (
        f"WordPiece splits this text into {n_pieces} pieces, [CLS] and [SEP] included; the model views show "
        f"at most {limit}. Shorten the sentence."
    )


def layer_runs(model: MiniLM, text: str, *, causal: bool = False, limit: int = MAX_TOKENS) -> tuple[Run, ...]:
    """``text`` through the model: one ``Run`` per layer, tokens = the pieces with [CLS] and [SEP].

    ``causal=True`` is an experiment: every layer's queries may not look ahead, although the
    model was trained to read both ways. Raises ``ValueError`` over ``limit`` pieces.
    """
    encoding = model.encode(text)
    if len(encoding.ids) > limit:
        raise ValueError(pieces_over_cap(len(encoding.ids), limit))
    result = model.run(text, causal=causal)
    return runs_of(result)


def runs_of(result: PretrainedRun) -> tuple[Run, ...]:
    """One ``Run`` per layer of one sentence's forward pass."""
    out = result.output
    tokens = result.encoding.tokens
    return tuple(
        Run(tokens=tokens, x=x, positions=np.zeros_like(x), trace=trace, word_ids=result.encoding.word_ids)
        for x, trace in zip(out.hidden_states[:-1], out.traces, strict=True)  # x: the state entering each layer
    )

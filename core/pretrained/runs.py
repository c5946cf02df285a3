"""A pretrained sentence as the views read it: one ``core.Run`` per layer.

Layer ``l``'s run holds the model's pieces as tokens, the hidden state that enters
the layer as ``x`` (for layer 1: word + position + token type embeddings after
LayerNorm, so the positions are already inside it and ``positions`` is zero), and
the layer's own ``AttentionTrace``. Every view that draws a random run draws these
the same way: the heads, steps, shapes and summary views need no special case.
"""

from __future__ import annotations

import numpy as np

from core.pipeline import PermutationResult, Run, layer_output, normalised, realign, realign_rows
from core.pretrained.bert import BertLayer, bert_forward
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
    result = model.run_encoded(encoding, causal=causal)  # the pieces counted above: no second tokenization
    return runs_of(result, model.weights.layers)


EMBEDDINGS = normalised("word + position + segment embeddings")
"""Layer 1's input: BERT adds the three embeddings of each piece, then normalises (LayerNorm)."""


def runs_of(result: PretrainedRun, layers: tuple[BertLayer, ...] | None = None) -> tuple[Run, ...]:
    """One ``Run`` per layer of one sentence's forward pass; ``layers`` (the model's) give each its projections."""
    out = result.output
    tokens = result.encoding.tokens
    return tuple(
        Run(
            tokens=tokens,
            x=x,
            positions=np.zeros_like(x),
            trace=trace,
            word_ids=result.encoding.word_ids,
            projections=None if layers is None else layers[i].attention,
            layer=i + 1,
            input_from=EMBEDDINGS if i == 0 else layer_output(i),
            positional="learned",
        )
        for i, (x, trace) in enumerate(zip(out.hidden_states[:-1], out.traces, strict=True))  # x: entering layer i
    )


def permutation_layers(
    model: MiniLM, text: str, permutation: list[int] | np.ndarray, *, causal: bool = False, limit: int = MAX_TOKENS
) -> tuple[PermutationResult, ...]:
    """Reorder the pieces between [CLS] and [SEP] by ``permutation`` and compare each layer's map with the original.

    ``permutation`` reorders the ``T - 2`` inner pieces; [CLS] and [SEP] stay first and last, as the model
    always sees them. The model's positions are learned and added to every piece, so unlike attention with
    no positions, a reordered sentence gets a different map, not just a reordered one. Raises ``ValueError``
    over ``limit`` pieces, as ``layer_runs`` does.
    """
    ids = np.array(model.encode(text).ids, dtype=np.int64)  # (T,)
    if len(ids) > limit:
        raise ValueError(pieces_over_cap(len(ids), limit))
    inner = np.asarray(permutation)
    if sorted(inner.tolist()) != list(range(len(ids) - 2)):
        raise ValueError(f"{inner.tolist()} is not a permutation of the {len(ids) - 2} pieces between [CLS] and [SEP]")
    full = np.concatenate([[0], inner + 1, [len(ids) - 1]])  # (T,): [CLS] and [SEP] stay in place
    original = bert_forward(model.weights, ids, causal=causal).traces
    permuted = bert_forward(model.weights, ids[full], causal=causal).traces
    results = []
    for a, b in zip(original, permuted, strict=True):
        realigned = realign(b.weights, full)  # (h, T, T) in the original order
        diff = float(np.max(np.abs(a.weights - realigned)))
        output = realign_rows(b.output, full)  # (T, d_model) in the original order
        out_diff = float(np.max(np.abs(a.output - output)))
        results.append(PermutationResult(full, a.weights, b.weights, realigned, diff, a.output, output, out_diff))
    return tuple(results)

"""A trained model on one sequence as the views read it: one ``core.Run`` per layer.

Layer 1's run holds the token embeddings as ``x`` and the position table as
``positions`` (zeros for RoPE and "none"), as a random run does. A later layer's
``x`` is the residual stream entering it, positions already inside, so its
``positions`` are zeros. With LayerNorm the attention reads ``LN(x)``: then ``x``
is that normalised input and ``positions`` are zeros, so ``x + positions`` is always
exactly what the layer's attention was given (``Run``'s contract). Every view that
draws a random run draws these the same way.
"""

from __future__ import annotations

import numpy as np

from core.ablation import Knockout
from core.pipeline import EMBEDDED, Run, layer_output, normalised
from core.training.model import forward, position_table, projections
from core.training.train import TrainResult


def runs_of(result: TrainResult, tokens: np.ndarray, knockout: Knockout | None = None) -> tuple[Run, ...]:
    """``tokens (T,)`` (ints) through ``result``'s model: one ``Run`` per layer, tokens as the task's symbols
    (``knockout``: with one head's output replaced, ``core.ablation``)."""
    tokens = np.asarray(tokens)
    config = result.settings.model
    cache = forward(result.params, config, tokens, knockout)
    symbols = tuple(result.settings.task_info.decode(tokens))
    embedded = result.params["embed"][tokens]  # (T, d)
    table = position_table(config, result.params, tokens.shape[-1])  # (T, d): learned or sinusoidal; zeros otherwise
    runs = []
    for i, layer in enumerate(cache.layers):
        if i == 0 and not config.layer_norm:
            x, positions = embedded, table  # (T, d) each: what the first layer adds together
        else:
            x, positions = layer.attn_in, np.zeros_like(layer.attn_in)  # (T, d): the stream attention reads
        stream = EMBEDDED if i == 0 else layer_output(i)  # the residual stream entering layer i + 1
        runs.append(
            Run(
                tokens=symbols,
                x=x,
                positions=positions,
                trace=layer.trace,
                projections=projections(result.params, i),
                layer=i + 1,
                input_from=normalised(stream) if config.layer_norm else stream,
                positional=config.positional,
            )
        )
    return tuple(runs)

"""The numbers behind the pictures, as files a student can open: pure functions, no ``st.`` call.

- ``weights_csv``: every head's weights in long form, one row per (head, query, key),
  so a student can filter one query row in a spreadsheet and check it sums to 1.
- ``trace_npz``: every array of the run, named for what it is (``x_embedded``,
  ``x_input = x_embedded + positions``, the projections W_Q, W_K, W_V, W_O and any
  biases, Q, K, V, ``scores_scaled``, ``scores_masked``, weights, context, concat,
  output, mask...) and every setting as JSON, for ``np.load``, nothing pickled:
  enough to rerun every number through the lessons' own code from the file alone.

Numbering follows the figures: heads count from 1 ("head 1"), positions from 0
(the "0·the" labels). Floats are written by pandas' default formatter, which
prints the shortest text that reads back as the same float64 (``repr``), so the
CSV read with ``pandas.read_csv`` gives the trace's weights bit for bit. Read the
token columns with ``dtype=str, keep_default_na=False``: by default pandas turns the
word "nan" or "null" into a missing value and "1" into a number.

CSV injection: a spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@``
(and tab or carriage return) as a formula. Our tokenizer makes these characters
tokens of their own ("=", "+"), so no token can carry a working formula, but this
module does not rely on that: following OWASP's advice, a token cell that starts
with one of them is written with a leading single quote (``'=``), which spreadsheets
show as text. A token that itself starts with a quote gets one more, so
``token_from_cell`` (drop one leading quote) gives every token back exactly.
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Sequence

import numpy as np
import pandas as pd

from core import AttentionConfig, Run
from core.pipeline import EMBEDDED
from dashboard.page.mask_words import mask_rule

CSV_COLUMNS = ("head", "query_position", "query_token", "key_position", "key_token", "weight", "masked")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula (OWASP, "CSV Injection")."""
QUOTE = "'"


def cell_from_token(token: str) -> str:
    """The CSV cell for ``token``: a leading ``'`` when it starts like a formula (or with a quote)."""
    return QUOTE + token if token.startswith((*FORMULA_STARTS, QUOTE)) else token


def token_from_cell(cell: str) -> str:
    """Invert ``cell_from_token``: drop one leading ``'``."""
    return cell[1:] if cell.startswith(QUOTE) else cell


def weights_frame(
    weights: np.ndarray,
    tokens: Sequence[str],
    key_tokens: Sequence[str] | None = None,
    mask: np.ndarray | None = None,
) -> pd.DataFrame:
    """Long form of ``weights (h, T_q, T_k)``: h·T_q·T_k rows in head, query, key order.

    ``key_tokens (T_k,)`` default to ``tokens`` (self-attention); ``mask`` (True = may
    attend, broadcastable to the weights) marks the cells the mask removed, whose
    weight is exactly 0. Token cells are made spreadsheet-safe (``cell_from_token``).
    """
    keys = tokens if key_tokens is None else key_tokens
    h, t_q, t_k = weights.shape
    if (t_q, t_k) != (len(tokens), len(keys)):
        raise ValueError(f"weights {weights.shape} do not match {len(tokens)} query and {len(keys)} key tokens")
    head, query, key = np.indices((h, t_q, t_k)).reshape(3, -1)  # (3, h·T_q·T_k), C order = weights.ravel()
    allowed = np.ones(weights.shape, dtype=bool) if mask is None else np.broadcast_to(mask, weights.shape)
    query_cells = np.array([cell_from_token(t) for t in tokens], dtype=object)
    key_cells = np.array([cell_from_token(t) for t in keys], dtype=object)
    return pd.DataFrame(
        {
            "head": head + 1,
            "query_position": query,
            "query_token": query_cells[query],
            "key_position": key,
            "key_token": key_cells[key],
            "weight": weights.ravel(),
            "masked": ~allowed.ravel(),
        },
        columns=list(CSV_COLUMNS),
    )


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """``frame`` as RFC 4180 CSV: CRLF line ends (so a cell holding a line break is quoted, not split),
    UTF-8 with a BOM (so Excel reads accents and emoji), shortest round-trip float text."""
    return frame.to_csv(index=False, lineterminator="\r\n").encode("utf-8-sig")


def weights_csv(run: Run) -> bytes:
    """Every head's weights of ``run`` as CSV bytes, in the long form of ``weights_frame``."""
    return csv_bytes(weights_frame(run.trace.weights, run.tokens, run.key_tokens, run.trace.mask))


def trace_arrays(run: Run, settings: dict | None = None) -> dict[str, np.ndarray]:
    """Every array of ``run``, each named for what it is, plus the tokens, the scale and (given) the settings.

    - ``x_input (T, d_model)``: what attention read. For a first layer with embeddings, also ``x_embedded`` and
      ``positions``, with ``x_input = x_embedded + positions``; a later layer reads the previous layer's
      output, which has no embedding of its own (``settings["input_from"]`` says which).
    - ``scores_scaled``: ``Q K^T * scale`` before the bias and the mask; ``alibi_bias (h, T_q, T_k)`` ALiBi's
      bias when there is one; ``scores_masked``: ``scores_scaled + alibi_bias`` with masked cells at -inf,
      which is what the softmax reads (equal to ``scores_scaled`` when there is neither).
    - ``k``, ``v (kv_heads, T_k, d_k)`` as computed; with grouped-query heads also ``k_per_head``,
      ``v_per_head (h, T_k, d_k)``, the repeat each query head attended over.
    - The projections (``w_q, w_k, w_v, w_o`` and ``b_q, b_k, b_v, b_o`` when the layer has biases) and the
      trace's other arrays under their own names (``q``, ``k``, ``v``, ``weights``, ``context``, ``concat``,
      ``output``, ``mask``...); cross-attention's source as ``source_x_embedded``, ``source_positions`` and
      ``source_x_input``.
    - ``settings``: a 0-d string array holding JSON: ``settings`` as given, and the run's own
      ``input_from``, ``layer``, ``positional`` and ``scale``.

    Fields that are None (no mask, no RoPE, no source, no bias) are left out. Tokens are Unicode arrays and
    the settings a string, so ``np.load`` reads everything with ``allow_pickle=False``.
    """
    arrays: dict[str, np.ndarray] = {
        "tokens": np.array(run.tokens, dtype=str),
        "key_tokens": np.array(run.key_tokens, dtype=str),
    }
    owners = (run, run.trace) if run.projections is None else (run, run.projections, run.trace)
    for owner in owners:
        for field in dataclasses.fields(owner):
            value = getattr(owner, field.name)
            if isinstance(value, np.ndarray):
                arrays[field.name] = value
    embedded = run.input_from == EMBEDDED  # only a first layer's x is an embedding
    for side in ("", "source_"):
        x, positions = arrays.pop(f"{side}x", None), arrays.pop(f"{side}positions", None)
        if x is None:
            continue
        arrays[f"{side}x_input"] = x + positions  # (T, d_model): what attention read
        if embedded:
            arrays[f"{side}x_embedded"], arrays[f"{side}positions"] = x, positions
    scores = arrays.pop("scores")  # (h, T_q, T_k)
    arrays["scores_scaled"] = scores
    if "bias" in arrays:  # ALiBi's, not a projection's bias (those are b_q, b_k, b_v, b_o)
        arrays["alibi_bias"] = arrays.pop("bias")  # (h, T_q, T_k)
        scores = scores + arrays["alibi_bias"]  # (h, T_q, T_k): what the mask is applied to
    if run.trace.group > 1:  # grouped-query heads: k, v are (kv_heads, T_k, d_k); the repeat is (h, T_k, d_k)
        arrays["k_per_head"], arrays["v_per_head"] = run.trace.keys_per_head, run.trace.values_per_head
    mask = run.trace.mask
    arrays["scores_masked"] = scores if mask is None else np.where(mask, scores, -np.inf)
    arrays["scale"] = np.array(run.trace.scale)
    about = {
        "settings": settings or {},
        "input_from": run.input_from,
        "layer": run.layer,
        "positional": run.positional,
        "scale": run.trace.scale,
    }
    arrays["settings"] = np.array(json.dumps(about, sort_keys=True, ensure_ascii=False))
    return arrays


def trace_npz(run: Run, settings: dict | None = None) -> bytes:
    """``trace_arrays(run, settings)`` written by ``np.savez`` into memory: the bytes of a ``.npz`` file."""
    buffer = io.BytesIO()
    np.savez(buffer, **trace_arrays(run, settings))
    return buffer.getvalue()


def file_stem(view: str, run: Run, seed: int | None) -> str:
    """The short settings in a file name, read from the run: ``heads_d64_h4_causal_seed18``,
    ``steps_d64_h4_kv2_causal_window3_alibi_seed18``.

    The sentence stays out (it may hold anything); ``seed`` is None when the weights take none (a pretrained
    or trained model), and the layer is named when the model has more than one.
    """
    tr = run.trace
    parts = [view, f"d{run.x.shape[-1]}", f"h{tr.n_heads}", *([f"kv{tr.kv_heads}"] if tr.group > 1 else [])]
    rule = mask_rule(tr.mask)
    if tr.mask is None or (rule is not None and not rule.causal and not rule.window):
        parts.append("full")
    elif rule is None:
        parts.append("masked")
    else:
        parts.append("causal" if rule.causal else "both")
        parts += [f"{name}{value}" for name, value in (("window", rule.window), ("prefix", rule.prefix)) if value]
    parts += ["alibi"] if tr.bias is not None else []
    if run.layer > 1 or run.input_from != EMBEDDED:
        parts.append(f"layer{run.layer}")
    if seed is not None:
        parts.append(f"seed{seed}")
    return "_".join(parts)


def figure_stem(view: str, config: AttentionConfig, weights: str | None = None, layer: int = 1) -> str:
    """A chart's file name from the view and the settings it was drawn with: ``heads_d64_h4_full_seed18``,
    ``steps_d512_h8_kv2_causal_window3_alibi_sinusoidal_seed0``, ``model_minilm_layer3``. The sentence stays out
    (it may hold anything). ``weights``: the weights control's choice (default ``config.weights``); a pretrained
    or trained model's shape is its own, so only its name is given."""
    c, weights = config, weights or config.weights
    learned = weights in ("minilm", "trained")
    if learned:
        parts = [view, weights]
    else:
        parts = [view, f"d{c.d_model}", f"h{c.n_heads}"]
        parts += [f"kv{c.kv_heads}"] if c.kv_heads not in (None, c.n_heads) else []
        parts.append("causal" if c.causal else "full")
        parts += [f"{name}{value}" for name, value in (("window", c.window), ("prefix", c.prefix)) if value]
        parts += ["alibi"] if c.alibi else []
        parts += [c.positional] if c.positional != "none" else []
        parts += [weights] if weights != "random" else []
        parts += ["unscaled"] if not c.scaled else []
    parts += [f"layer{layer}"] if layer > 1 else []
    parts += [f"seed{c.seed}"] if not learned else []
    return "_".join(parts)


def image_options(stem: str, presenter: bool) -> dict:
    """Plotly's ``toImageButtonOptions`` for a chart's camera button, made in the browser (no renderer on the
    server). In presenter mode an SVG at the size the chart is drawn on the projector (width and height None: the
    drawn size), for slides: vector, sharp at any zoom, its text still text. Elsewhere a PNG at twice the drawn size,
    which any phone, notes app or chat shows (an SVG is not shown by a phone's gallery)."""
    if presenter:
        return {"format": "svg", "filename": stem, "width": None, "height": None, "scale": 1}
    return {"format": "png", "filename": stem, "scale": 2}

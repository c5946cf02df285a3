"""The backward pass of ``model.forward``, written out op by op (no autograd library).

Each function takes the gradient of the loss with respect to an op's output and
returns the gradients of its inputs, reading what the forward pass kept. Read
bottom-up, ``backward`` is ``forward`` in reverse.

Notation: ``B`` sequences, ``T`` tokens, ``h`` heads, ``d`` = d_model, ``d_k = d / h``, ``V`` vocabulary;
``...`` the batch prefix. ``dX`` is dloss/dX, shaped like X.
"""

from __future__ import annotations

import math

import numpy as np

from core.multihead import AttentionTrace, merge_heads, split_heads
from core.rope import apply_rope
from core.training.model import ForwardCache, ModelConfig, Normalised


def linear_backward(x: np.ndarray, w: np.ndarray, dy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``y = x @ w``: returns ``(dx = dy w^T (..., T, d_in), dw = x^T dy (d_in, d_out))``, dw summed over every row.

    ``y = x @ w`` acts on each row alone, so the batch is stacked into one matrix of N rows first.
    """
    x_rows, dy_rows = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])  # (N, d_in), (N, d_out)
    dx = (dy_rows @ w.T).reshape(x.shape)  # (N, d_out) @ (d_out, d_in) -> (N, d_in) -> (..., T, d_in)
    dw = x_rows.T @ dy_rows  # (d_in, N) @ (N, d_out) -> (d_in, d_out): summed over every row
    return dx, dw


def sum_rows(a: np.ndarray) -> np.ndarray:
    """``(..., T, n) -> (n,)``: a bias's (or gain's) gradient, its output's gradient summed over every row."""
    return a.reshape(-1, a.shape[-1]).sum(axis=0)  # (N, n) -> (n,)


def layer_norm_backward(
    normed: Normalised, gamma: np.ndarray, dy: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``y = xhat * gamma + beta``, ``xhat = (x - mean) * rstd`` per row: returns ``(dx, dgamma, dbeta)``.

    With ``g = dy * gamma`` the gradient at ``xhat``:
    ``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))``, ``rstd = 1 / sqrt(var + eps)``.
    """
    xhat, rstd = normed.xhat, normed.rstd  # (..., T, d), (..., T, 1): kept by the forward pass
    g = dy * gamma  # (..., T, d): gradient at xhat
    mean_g = g.mean(axis=-1, keepdims=True)  # (..., T, 1)
    mean_g_xhat = (g * xhat).mean(axis=-1, keepdims=True)  # (..., T, 1)
    dx = rstd * (g - mean_g - xhat * mean_g_xhat)  # (..., T, d)
    dgamma = sum_rows(dy * xhat)  # (..., T, d) -> (d,): summed over every row
    dbeta = sum_rows(dy)  # (..., T, d) -> (d,)
    return dx, dgamma, dbeta


def gelu_backward(x: np.ndarray, cdf: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """``y = x Phi(x)``: ``dy/dx = Phi(x) + x phi(x)``, phi the normal density.

    ``cdf`` is Phi(x), the normal CDF, kept by the forward pass: its erf is the costly part of GELU.
    """
    phi = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)  # (..., m): the normal density
    return dy * (cdf + x * phi)  # (..., m)


def softmax_backward(weights: np.ndarray, dweights: np.ndarray) -> np.ndarray:
    """``w = softmax(masked scores)`` per row: ``dscores = w * (dw - sum(dw * w))``.

    A masked key has ``w = 0``, so its score gets no gradient: the mask passes nothing back.
    """
    return weights * (dweights - (dweights * weights).sum(axis=-1, keepdims=True))  # (..., h, T, T)


def attention_backward(
    trace: AttentionTrace, x: np.ndarray, w: dict[str, np.ndarray], doutput: np.ndarray, rope: np.ndarray | None
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Backward of ``multi_head_attention(x, Projections(w_q, w_k, w_v, w_o), h)`` from its trace.

    ``x (..., T, d)`` is the attention input; ``rope (T,)`` the RoPE positions or None.
    Returns ``(dx (..., T, d), {"w_q": ..., "w_k": ..., "w_v": ..., "w_o": ...})``.
    """
    n_heads = trace.n_heads
    dconcat, dw_o = linear_backward(trace.concat, w["w_o"], doutput)  # (..., T, d), (d, d)
    dcontext = split_heads(dconcat, n_heads)  # (..., T, d) -> (..., h, T, d_k): merge's inverse
    dweights = dcontext @ np.swapaxes(trace.v, -1, -2)  # (..., h, T, d_k) @ (..., h, d_k, T) -> (..., h, T, T)
    dv = np.swapaxes(trace.weights, -1, -2) @ dcontext  # (..., h, T, T)^T @ (..., h, T, d_k) -> (..., h, T, d_k)
    dscores = softmax_backward(trace.weights, dweights) * trace.scale  # (..., h, T, T): through the mask and scale
    dq = dscores @ trace.k  # (..., h, T, T) @ (..., h, T, d_k) -> (..., h, T, d_k)
    dk = np.swapaxes(dscores, -1, -2) @ trace.q  # (..., h, T, T)^T @ (..., h, T, d_k) -> (..., h, T, d_k)
    if rope is not None:  # a rotation's transpose is the rotation back: turn by -position
        dq = apply_rope(dq, -rope)  # (..., h, T, d_k)
        dk = apply_rope(dk, -rope)  # (..., h, T, d_k)
    grads = {"w_o": dw_o}
    dx = np.zeros_like(x)  # (..., T, d): the three projections' parts add up here
    for name, d_heads in (("w_q", dq), ("w_k", dk), ("w_v", dv)):
        dproj = merge_heads(d_heads)  # (..., h, T, d_k) -> (..., T, d)
        dx_part, grads[name] = linear_backward(x, w[name], dproj)  # (..., T, d), (d, d)
        dx += dx_part
    return dx, grads


def backward(
    params: dict[str, np.ndarray], config: ModelConfig, cache: ForwardCache, dlogits: np.ndarray
) -> dict[str, np.ndarray]:
    """Gradients of the loss for every parameter, from ``dlogits (..., T, V)``; same keys as ``params``."""
    grads: dict[str, np.ndarray] = {}
    t = cache.tokens.shape[-1]
    rope = np.arange(t) if config.positional == "rope" else None  # (T,) or None
    df, grads["unembed"] = linear_backward(cache.f, params["unembed"], dlogits)  # (..., T, d), (d, V)
    if config.layer_norm:
        dx, grads["lnf_g"], grads["lnf_b"] = layer_norm_backward(
            cache.lnf, params["lnf_g"], df
        )  # (..., T, d), (d,), (d,)
    else:
        dx = df
    for layer in reversed(range(config.n_layers)):
        p, c = f"l{layer}.", cache.layers[layer]  # the names' prefix, what the layer's forward kept
        if config.mlp:  # x = x + act @ w_2 + b_2, act = gelu(mlp_in @ w_1 + b_1)
            grads[p + "b_2"] = sum_rows(dx)  # (..., T, d) -> (d,)
            dact, grads[p + "w_2"] = linear_backward(c.act, params[p + "w_2"], dx)  # (..., T, 4d), (4d, d)
            dhidden = gelu_backward(c.hidden, c.cdf, dact)  # (..., T, 4d)
            grads[p + "b_1"] = sum_rows(dhidden)  # (..., T, 4d) -> (4d,)
            dmlp_in, grads[p + "w_1"] = linear_backward(c.mlp_in, params[p + "w_1"], dhidden)  # (..., T, d), (d, 4d)
            if config.layer_norm:
                dmlp_in, grads[p + "ln2_g"], grads[p + "ln2_b"] = layer_norm_backward(  # (..., T, d), (d,), (d,)
                    c.ln2, params[p + "ln2_g"], dmlp_in
                )
            dx = dx + dmlp_in  # the residual adds both paths
        w = {name: params[p + name] for name in ("w_q", "w_k", "w_v", "w_o")}
        dattn_in, attn_grads = attention_backward(c.trace, c.attn_in, w, dx, rope)  # (..., T, d), 4 x (d, d)
        grads.update({p + name: g for name, g in attn_grads.items()})
        if config.layer_norm:
            dattn_in, grads[p + "ln1_g"], grads[p + "ln1_b"] = layer_norm_backward(  # (..., T, d), (d,), (d,)
                c.ln1, params[p + "ln1_g"], dattn_in
            )
        dx = dx + dattn_in  # (..., T, d): residual
    dx_rows = dx.reshape(-1, dx.shape[-1])  # (N, d) with N = B * T
    v = params["embed"].shape[0]  # V: the task's vocabulary, rows of the embedding
    onehot = np.zeros((dx_rows.shape[0], v), dtype=dx.dtype)  # (N, V)
    onehot[np.arange(dx_rows.shape[0]), cache.tokens.ravel()] = 1.0
    grads["embed"] = onehot.T @ dx_rows  # (V, N) @ (N, d) -> (V, d): each row sums the positions holding it
    if config.positional == "learned":
        pos = np.zeros_like(params["pos"])  # (n_positions, d): rows past T get nothing
        pos[:t] = dx.reshape(-1, t, dx.shape[-1]).sum(axis=0)  # (T, d)
        grads["pos"] = pos
    return {name: grads[name] for name in params}

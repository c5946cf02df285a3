"""The hand-written backward pass against torch autograd (float64) and against finite differences.

The torch model below is written independently of ``core``: its own head split,
mask, RoPE rotation, LayerNorm and GELU calls (torch's), fed the same weights and
batch. Every configuration: 1 and 2 layers, with and without LayerNorm and MLP,
causal and bidirectional, every positional kind.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from core.positions import POSITIONAL_KINDS
from core.training.backward import backward
from core.training.model import LN_EPS, ModelConfig, cross_entropy, forward, init_params
from tests.conftest import require_torch

B, T, VOCAB, D_MODEL, HEADS = 3, 7, 6, 8, 2

CONFIGS = [
    ModelConfig(
        d_model=D_MODEL,
        n_heads=HEADS,
        n_layers=layers,
        positional=positional,
        causal=causal,
        layer_norm=layer_norm,
        mlp=mlp,
    )
    for layers, (layer_norm, mlp), causal, positional in itertools.product(
        (1, 2), itertools.product((False, True), repeat=2), (True, False), POSITIONAL_KINDS
    )
]


def config_id(c: ModelConfig) -> str:
    return f"L{c.n_layers}-{'ln' if c.layer_norm else 'noln'}-{'mlp' if c.mlp else 'nomlp'}-" + (
        f"{'causal' if c.causal else 'bidir'}-{c.positional}"
    )


def make_case(config: ModelConfig, seed: int = 0):
    """Weights (LayerNorm gains and biases moved off 1 and 0, so their gradients are exercised) and a batch."""
    params = init_params(config, VOCAB, seed)
    rng = np.random.default_rng([seed, 99])
    for name in params:
        if name.endswith(("_g", "_b", "b_1", "b_2")):
            params[name] = params[name] + 0.3 * rng.standard_normal(params[name].shape)
    tokens = rng.integers(0, VOCAB, size=(B, T))  # (B, T)
    targets = rng.integers(0, VOCAB, size=(B, T))  # (B, T)
    scored = rng.random((B, T)) < 0.7  # (B, T)
    scored[0, 0] = True
    return params, tokens, targets, scored


def numpy_loss_and_grads(config, params, tokens, targets, scored):
    cache = forward(params, config, tokens)
    loss, dlogits, _ = cross_entropy(cache.logits, targets, scored)
    return loss, backward(params, config, cache, dlogits)


def torch_loss_and_grads(torch, config, params, tokens, targets, scored):
    """The same model in torch, written from the formulas; autograd gives the gradients."""
    functional = torch.nn.functional
    p = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    d, h = config.d_model, config.n_heads
    d_k = d // h
    tok = torch.tensor(tokens)
    pos = torch.arange(T, dtype=torch.float64)
    x = p["embed"][tok]  # (B, T, d)
    if config.positional == "learned":
        x = x + p["pos"][:T]
    elif config.positional == "sinusoidal":
        i = torch.arange(0, d, 2, dtype=torch.float64)
        angle = pos[:, None] / 10000 ** (i / d)  # (T, d/2)
        x = x + torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).reshape(T, d)

    def rotate(a):  # (B, h, T, d_k): interleaved pairs (2i, 2i+1) turn by pos * 10000^(-2i/d_k)
        i = torch.arange(0, d_k, 2, dtype=torch.float64)
        angle = pos[:, None] * 10000 ** (-i / d_k)  # (T, d_k/2)
        even, odd = a[..., 0::2], a[..., 1::2]
        return torch.stack(
            [even * torch.cos(angle) - odd * torch.sin(angle), even * torch.sin(angle) + odd * torch.cos(angle)], dim=-1
        ).reshape(a.shape)

    def ln(a, name):
        return functional.layer_norm(a, (d,), p[name + "_g"], p[name + "_b"], eps=LN_EPS)

    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool)) if config.causal else torch.ones(T, T, dtype=torch.bool)
    for layer in range(config.n_layers):
        pre = f"l{layer}."
        a = ln(x, pre + "ln1") if config.layer_norm else x
        q, k, v = (
            (a @ p[pre + w]).reshape(B, T, h, d_k).transpose(1, 2) for w in ("w_q", "w_k", "w_v")
        )  # (B, h, T, d_k)
        if config.positional == "rope":
            q, k = rotate(q), rotate(k)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d_k)  # (B, h, T, T)
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        context = (weights @ v).transpose(1, 2).reshape(B, T, d)  # (B, T, d)
        x = x + context @ p[pre + "w_o"]
        if config.mlp:
            m = ln(x, pre + "ln2") if config.layer_norm else x
            x = x + functional.gelu(m @ p[pre + "w_1"] + p[pre + "b_1"]) @ p[pre + "w_2"] + p[pre + "b_2"]
    f = ln(x, "lnf") if config.layer_norm else x
    logits = f @ p["unembed"]  # (B, T, V)
    mask = torch.tensor(scored)
    loss = functional.cross_entropy(logits[mask], torch.tensor(targets)[mask])
    loss.backward()
    return float(loss.detach()), {k: t.grad.numpy() for k, t in p.items()}


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_gradients_match_torch_autograd(config):
    torch = require_torch()
    params, tokens, targets, scored = make_case(config)
    loss, grads = numpy_loss_and_grads(config, params, tokens, targets, scored)
    loss_t, grads_t = torch_loss_and_grads(torch, config, params, tokens, targets, scored)
    assert abs(loss - loss_t) <= 1e-12
    assert grads.keys() == grads_t.keys() == params.keys()
    for name, g_t in grads_t.items():
        assert grads[name].dtype == np.float64 and grads[name].shape == g_t.shape, name
        largest = np.max(np.abs(g_t))
        assert largest > 0, f"{name}: torch's gradient is all zero, the check would say nothing"
        assert np.max(np.abs(grads[name] - g_t)) <= 1e-10 * largest, name


@pytest.mark.parametrize("config", [CONFIGS[-1], CONFIGS[len(CONFIGS) // 2 - 3]], ids=config_id)
def test_gradients_match_finite_differences(config):
    """Central differences (step 1e-6) on the largest gradient entry of every parameter.

    Truncation error ~step^2 and rounding ~1e-16 / step put the difference near 1e-9
    of the gradient's scale; 1e-6 leaves room without hiding a wrong formula (those are O(1) off).
    """
    params, tokens, targets, scored = make_case(config, seed=1)
    _, grads = numpy_loss_and_grads(config, params, tokens, targets, scored)
    step = 1e-6
    for name, g in grads.items():
        index = np.unravel_index(np.argmax(np.abs(g)), g.shape)
        moved = {k: v.copy() for k, v in params.items()}
        moved[name][index] += step
        up = cross_entropy(forward(moved, config, tokens).logits, targets, scored)[0]
        moved[name][index] -= 2 * step
        down = cross_entropy(forward(moved, config, tokens).logits, targets, scored)[0]
        assert abs((up - down) / (2 * step) - g[index]) <= 1e-6 * np.max(np.abs(g)), name


def test_float32_gradients_follow_float64():
    """Training runs in float32: its gradients agree with float64's to float32 precision."""
    config = CONFIGS[-1]
    params, tokens, targets, scored = make_case(config)
    _, g64 = numpy_loss_and_grads(config, params, tokens, targets, scored)
    p32 = {k: v.astype(np.float32) for k, v in params.items()}
    _, g32 = numpy_loss_and_grads(config, p32, tokens, targets, scored)
    for name in g64:
        assert g32[name].dtype == np.float32, name
        assert np.max(np.abs(g32[name] - g64[name])) <= 1e-4 * np.max(np.abs(g64[name])), name


def test_adam_matches_torch_adam():
    """Three Adam steps on the same float64 weights and gradients as torch.optim.Adam."""
    torch = require_torch()
    from core.training.adam import Adam

    rng = np.random.default_rng(5)
    params = {"a": rng.standard_normal((4, 3)), "b": rng.standard_normal(5)}
    grads = [{k: rng.standard_normal(v.shape) * 10.0**-i for k, v in params.items()} for i in range(3)]
    ours = {k: v.copy() for k, v in params.items()}
    theirs = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    adam, opt = Adam(lr=0.003), torch.optim.Adam(list(theirs.values()), lr=0.003)
    for g in grads:
        adam.step(ours, g)
        for k, t in theirs.items():
            t.grad = torch.tensor(g[k])
        opt.step()
    for k in params:
        np.testing.assert_allclose(ours[k], theirs[k].detach().numpy(), rtol=0, atol=1e-15)

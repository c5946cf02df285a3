"""Adam (Kingma & Ba, 2015) on a flat dict of parameters, in place.

    m = b1 m + (1 - b1) g          v = b2 v + (1 - b2) g^2
    p -= lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps)

the form ``torch.optim.Adam`` computes, so the two can be compared step by step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Adam:
    """Optimiser state: first and second moments per parameter, and the step count."""

    lr: float
    """Step size."""
    b1: float = 0.9
    """Decay of the gradient's running mean."""
    b2: float = 0.999
    """Decay of the squared gradient's running mean."""
    eps: float = 1e-8
    """Keeps the step finite where v is ~0."""
    t: int = 0
    m: dict[str, np.ndarray] = field(default_factory=dict)
    v: dict[str, np.ndarray] = field(default_factory=dict)

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        """Update every array of ``params`` in place from ``grads`` (same keys)."""
        self.t += 1
        step_size = self.lr / (1 - self.b1**self.t)
        v_scale = 1 / math.sqrt(1 - self.b2**self.t)
        for name, p in params.items():
            g = grads[name]
            if name not in self.m:
                self.m[name], self.v[name] = np.zeros_like(p), np.zeros_like(p)
            m, v = self.m[name], self.v[name]
            m *= self.b1
            m += (1 - self.b1) * g
            v *= self.b2
            v += (1 - self.b2) * (g * g)
            denom = np.sqrt(v)  # (shape of p)
            denom *= v_scale
            denom += self.eps
            p -= step_size * m / denom

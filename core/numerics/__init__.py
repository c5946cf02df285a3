"""Speed tricks, kept apart from the lesson: a trick stays only where ``bench/`` shows it matters at the app's sizes.

    erf.py    NumPy has no erf: fdlibm's for float64; for float32, behind the flag ``erf.FAST``
              (on by default), a fitted tanh(x P(x^2)), tested equal to the float64 path within 2e-7

``python -m bench.numerics`` times the flag's two paths side by side. The lesson files
(``core/layers.py``, ``core/training/``) are written as the formulas, in plain NumPy. Einsum row sums, a
row-major copy of ``W^T`` and weight gradients by pairs of sequences were measured at 1.01-1.16x on a whole
training step (bench/README.md, "The lesson files in plain NumPy") and removed.
"""

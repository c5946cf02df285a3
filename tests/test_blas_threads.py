"""The tests run the way the app runs: NumPy's BLAS on one thread (tests/conftest.py pins it, as dashboard/app.py does).

On this 2-core machine an unpinned OpenBLAS starts 2 threads, so these tests fail without the pin.
"""

from __future__ import annotations

import os
import subprocess
import sys

from bench.core import numpy_blas_threads
from tests.conftest import BLAS_THREAD_VARIABLES, ROOT, skip_or_fail


def test_every_blas_variable_is_pinned_to_one_thread():
    assert {name: os.environ.get(name) for name in BLAS_THREAD_VARIABLES} == dict.fromkeys(BLAS_THREAD_VARIABLES, "1")


def test_numpy_runs_its_blas_on_one_thread():
    """Read from the loaded OpenBLAS itself: the variable took effect, so NumPy was not loaded before the pin."""
    threads = numpy_blas_threads()
    if threads is None:
        skip_or_fail("NumPy's BLAS is not OpenBLAS: its thread count cannot be read here")
    assert threads == 1


def test_a_fresh_process_without_the_pin_would_use_more_threads():
    """Guard: with the variables unset, the same check reads more than one thread (when the machine has more cores)."""
    if len(os.sched_getaffinity(0)) < 2:
        skip_or_fail("one CPU: OpenBLAS starts one thread with or without the pin")
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    code = "from bench.core import numpy_blas_threads; print(numpy_blas_threads())"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    assert int(out.stdout) > 1

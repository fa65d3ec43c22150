"""Benchmark of LMNN's certified fast solver (``cvxmetric bench --family lmnn``).

Each problem runs in its own process (:func:`cvxmetric.bench.run_isolated`,
with an address-space limit of :data:`MEMORY_LIMIT`), so that its peak
resident memory is its own:

``lmnn-digits``
    scikit-learn's digits (``n = 1 797``, ``d = 64``, 10 classes),
    standardised (constant pixels left at 0), ``k = 3``, ``mu = 0.5``:
    8 718 660 impostor triplets.  Target: certified in 30 s.
``lmnn-letter``
    Letter-shaped synthetic data (:func:`letter_data`: ``n = 20 000``,
    ``d = 16``, 26 classes of Gaussian blobs whose centres are drawn with
    unit spread, so that neighbouring classes overlap), ``k = 3``:
    1.15 * 10^9 impostor triplets.  Target: certified in 60 s and 4 GiB.

Method ``fast`` (:class:`~cvxmetric.lmnn.LMNNWorkingSet` at its defaults);
no exact solve runs at these sizes, so ``gap`` is the run's own certified
relative gap over every triplet.  The table's ``N`` is the number of
impostor triplets; ``peak_mb`` / ``base_mb`` the run's ``ru_maxrss`` at
the end / after building the data.
"""

import sys
import time

import numpy as np

from . import (_max_rss_mb, case_main, memory_limit, result_fields, run_cases,
               timed_solve)

__all__ = ["BENCH_CASES", "MEMORY_LIMIT", "TARGETS", "letter_data", "digits_data",
           "run_case", "run_bench"]

#: ``(problem, methods)`` in run order.
BENCH_CASES = (("lmnn-digits", ("fast",)), ("lmnn-letter", ("fast",)))

#: Each problem's target: (seconds, bytes).
TARGETS = {"lmnn-digits": (30.0, None), "lmnn-letter": (60.0, 4 * 1024 ** 3)}

#: Address-space limit of a run's process.
MEMORY_LIMIT = 8 * 1024 ** 3


def digits_data():
    """Digits, standardised per feature (constant features stay 0)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0), y


def letter_data(n=20_000, d=16, n_classes=26, spread=1.0, random_state=0):
    """Letter-shaped data: ``n`` points, ``n_classes`` balanced Gaussian
    classes in ``d`` dimensions, centres drawn with standard deviation
    ``spread`` (unit within-class noise)."""
    rng = np.random.RandomState(random_state)
    y = np.arange(n) % n_classes
    return spread * rng.randn(n_classes, d)[y] + rng.randn(n, d), y


def run_case(case):
    """Run one case in this process: ``problem``, ``method``, ``seed`` and
    optionally ``max_time`` and (letter) ``n``.  Returns a dict of
    measurements."""
    from ..lmnn import LMNNData, LMNNWorkingSet

    t0 = time.perf_counter()
    if case["problem"] == "lmnn-digits":
        X, y = digits_data()
    else:
        X, y = letter_data(n=case.get("n", 20_000), random_state=case.get("seed", 0))
    data = LMNNData(X, y, k=3)
    out = {"setup_seconds": time.perf_counter() - t0, "base_mb": _max_rss_mb(),
           "n": int(X.shape[0]), "d": int(X.shape[1]), "N": int(data.n_triplets)}
    res = timed_solve(out, lambda: LMNNWorkingSet(max_time=case.get("max_time"))
                      .run(data, warn=False))
    if res is not None:
        out.update(result_fields(res), working_set=int(res.info["working_set"]))
    return out


def _status(problem, res):
    """The row's status with the target."""
    t_max, b_max = TARGETS[problem]
    met = res["seconds"] <= t_max and (b_max is None or res["peak_mb"] <= b_max / 1024 ** 2)
    return (f"{res.get('status', '')} (working set {res.get('working_set')}; target "
            f"{t_max:g} s" + ("" if b_max is None else f", {b_max / 1024 ** 3:g} GiB")
            + f": {'met' if met else 'NOT met'})")


def run_bench(max_seconds=None, seed=0, callback=None, *, cases=BENCH_CASES,
              isolate=True):
    """Run the benchmark (parameters as :func:`cvxmetric.bench.ldml.run_bench`).

    Returns
    -------
    list of dict
        ``problem``, ``method``, ``d``, ``N`` (impostor triplets), ``n``,
        ``objective``, ``gap`` (certified), ``gap_kind``, ``seconds``,
        ``peak_mb``, ``base_mb``, ``status``, ``n_iter``, ``error``.
    """
    return run_cases(__spec__.name, run_case, cases,
                     lambda problem, method, res: _status(problem, res), seed=seed,
                     max_seconds=max_seconds, callback=callback, isolate=isolate,
                     preexec_fn=memory_limit(MEMORY_LIMIT), pass_max_time=True)


if __name__ == "__main__":
    sys.exit(case_main(__spec__.name, run_case))

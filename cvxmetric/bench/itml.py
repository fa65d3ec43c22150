"""Benchmark of ITML's certified fast solver (``cvxmetric bench --family itml``).

Each problem runs in its own process (:func:`cvxmetric.bench.run_isolated`,
with an address-space limit of :data:`MEMORY_LIMIT`):

``itml-digits``
    scikit-learn's digits (``n = 1 797``, ``d = 64``, 10 classes),
    standardised (constant pixels left at 0), with metric-learn's default
    constraints for ``ITML_Supervised``: ``20 * 10^2`` distinct same-class
    pairs and as many different-class pairs, drawn as metric-learn draws
    them (seed ``seed``), its default bounds and ``gamma = 1``.  Target:
    certified in 10 s.
``itml-d300``
    Synthetic data in ``d = 300`` (:func:`synthetic_data`: 2 000 points in
    10 Gaussian classes whose centres lie in a 20-dimensional subspace,
    unit noise in every direction), the same 2 000 + 2 000 pairs rule.
    Target: certified in 30 s.

Method ``fast`` (:class:`~cvxmetric.itml.ITMLDualNewton` at its
defaults); no exact solve runs at these sizes, so ``gap`` is the run's
own certified relative gap.  ``N`` is the number of pairs.
"""

import sys
import time

import numpy as np

from . import (_max_rss_mb, case_main, memory_limit, result_fields, run_cases,
               timed_solve)
from .lmnn import digits_data

__all__ = ["BENCH_CASES", "MEMORY_LIMIT", "TARGETS", "synthetic_data", "itml_data",
           "run_case", "run_bench"]

#: ``(problem, methods)`` in run order.
BENCH_CASES = (("itml-digits", ("fast",)), ("itml-d300", ("fast",)))

#: Each problem's target: (seconds, bytes).
TARGETS = {"itml-digits": (10.0, None), "itml-d300": (30.0, None)}

#: Address-space limit of a run's process.
MEMORY_LIMIT = 8 * 1024 ** 3


def synthetic_data(n=2000, d=300, n_classes=10, rank=20, random_state=0):
    """``n`` points in ``d`` dimensions, ``n_classes`` balanced classes whose
    centres (spread 3) lie in a random ``rank``-dimensional subspace, unit
    Gaussian noise."""
    rng = np.random.RandomState(random_state)
    y = np.arange(n) % n_classes
    basis = np.linalg.qr(rng.randn(d, rank))[0]
    centres = 3.0 * rng.randn(n_classes, rank) @ basis.T
    return centres[y] + rng.randn(n, d), y


def itml_data(X, y, seed, n_constraints=None, gamma=1.0):
    """:class:`~cvxmetric.itml.ITMLData` of metric-learn's default pair
    draws for ``ITML_Supervised`` (``20 C^2`` of each kind)."""
    from ..itml import ITMLData
    from ..itml.estimator import metric_learn_pairs

    codes = np.unique(y, return_inverse=True)[1]
    n = 20 * int(codes.max() + 1) ** 2 if n_constraints is None else n_constraints
    a, b, c, d = metric_learn_pairs(codes, n, seed)
    pairs = np.vstack([np.column_stack([a, b]), np.column_stack([c, d])])
    labels = np.concatenate([np.ones(len(a), int), -np.ones(len(c), int)])
    return ITMLData(X, pairs, labels, gamma=gamma)


def run_case(case):
    """Run one case in this process: ``problem``, ``method``, ``seed`` and
    optionally ``max_time`` and (``itml-d300``) ``n``, ``d``.  Returns a
    dict of measurements."""
    from ..itml import ITMLDualNewton

    t0 = time.perf_counter()
    if case["problem"] == "itml-digits":
        X, y = digits_data()
    else:
        X, y = synthetic_data(n=case.get("n", 2000), d=case.get("d", 300),
                              random_state=case.get("seed", 0))
    data = itml_data(X, y, case.get("seed", 0))
    out = {"setup_seconds": time.perf_counter() - t0, "base_mb": _max_rss_mb(),
           "n": int(X.shape[0]), "d": int(X.shape[1]), "N": int(data.n_pairs)}
    res = timed_solve(out, lambda: ITMLDualNewton(max_time=case.get("max_time"))
                      .run(data, warn=False))
    if res is not None:
        out.update(result_fields(res))
    return out


def _status(problem, res):
    """The row's status with the target."""
    t_max, _ = TARGETS[problem]
    met = res["seconds"] <= t_max and res.get("status") == "optimal"
    return (f"{res.get('status', '')} (target {t_max:g} s: "
            f"{'met' if met else 'NOT met'})")


def run_bench(max_seconds=None, seed=0, callback=None, *, cases=BENCH_CASES,
              isolate=True):
    """Run the benchmark (parameters as :func:`cvxmetric.bench.ldml.run_bench`).

    Returns
    -------
    list of dict
        ``problem``, ``method``, ``d``, ``N`` (pairs), ``n``, ``objective``,
        ``gap`` (certified), ``gap_kind``, ``seconds``, ``peak_mb``,
        ``base_mb``, ``status``, ``n_iter``, ``error``.
    """
    return run_cases(__spec__.name, run_case, cases,
                     lambda problem, method, res: _status(problem, res), seed=seed,
                     max_seconds=max_seconds, callback=callback, isolate=isolate,
                     preexec_fn=memory_limit(MEMORY_LIMIT), pass_max_time=True)


if __name__ == "__main__":
    sys.exit(case_main(__spec__.name, run_case))

"""Benchmark of GMML's certified closed form (``cvxmetric bench --family gmml``).

``gmml-digits``
    scikit-learn's digits (``n = 1 797``, ``d = 64``, 10 classes),
    standardised (constant pixels left at 0), metric-learn's default
    ``20 C^2 = 2 000`` pairs, ``lam = 0.1``, ``t = 1/2``.  Target: certified
    in 10 s.
``gmml-d300``
    Synthetic: 900 points of 3 Gaussian classes in ``d = 300``, 180 pairs
    (fewer than ``d`` of each kind: ``lam = 0.1`` makes both scatter
    matrices definite), ``t = 1/2``.

Method ``fast`` (:func:`~cvxmetric.gmml.solve_fast`); ``gap`` is the
run's own certified relative gap against the closed-form lower bound.
"""

import sys
import time

import numpy as np

from . import _max_rss_mb, case_main, result_fields, timed_solve
from .lmnn import digits_data
from .sdml import run_target_cases, synthetic_data

__all__ = ["BENCH_CASES", "TARGETS", "run_case", "run_bench"]

BENCH_CASES = (("gmml-digits", ("fast",)), ("gmml-d300", ("fast",)))

TARGETS = {"gmml-digits": 10.0, "gmml-d300": 30.0}

def run_case(case):
    """Run one case in this process: ``problem``, ``method``, ``seed``."""
    from ..constraints import pairs_from_labels
    from ..gmml import GMMLData, solve_fast

    t0 = time.perf_counter()
    seed = case.get("seed", 0)
    if case["problem"] == "gmml-digits":
        X, y = digits_data()
    else:
        X, y = synthetic_data(random_state=seed)
    pairs, labels = pairs_from_labels(y, 20 * np.unique(y).size ** 2, random_state=seed)
    data = GMMLData(X, pairs, labels, lam=0.1)
    out = {"setup_seconds": time.perf_counter() - t0, "base_mb": _max_rss_mb(),
           "n": int(X.shape[0]), "d": int(X.shape[1]), "N": len(pairs)}
    res = timed_solve(out, lambda: solve_fast(data))
    if res is not None:
        out.update(result_fields(res))
    return out


def run_bench(max_seconds=None, seed=0, callback=None, *, cases=BENCH_CASES,
              isolate=True):
    """Run the benchmark (parameters as :func:`cvxmetric.bench.ldml.run_bench`).

    Returns
    -------
    list of dict
        ``problem``, ``method``, ``d``, ``N`` (pairs), ``n``, ``objective``,
        ``gap`` (certified), ``seconds``, ``peak_mb``, ``status``, ...
    """
    return run_target_cases(__spec__.name, run_case, cases, TARGETS, seed, max_seconds,
                            callback, isolate)


if __name__ == "__main__":
    sys.exit(case_main(__spec__.name, run_case))

"""Benchmark of the closed forms RCA and LFDA (``cvxmetric bench --family rca``).

Each run in its own process (:func:`cvxmetric.bench.run_isolated`), on
scikit-learn's digits (``n = 1 797``, ``d = 64``, 10 classes),
standardised (constant pixels left at 0):

``rca-digits``
    ``RCA_Supervised()`` at metric-learn's defaults (100 chunklets of 2,
    ``random_state`` the seed): the within-chunklet covariance has rank
    below 64 (constant pixels, 100 chunklet differences), so the estimator
    reduces to its rank (with the warning it documents) and solves there.
    Methods ``fast`` (the closed form) and ``exact`` (the CVXPY problem
    with ``cp.log_det``), each certified by the closed-form dual bound.
    Target: the fast path certified in 10 s.
``lfda-digits``
    ``LFDA()`` at metric-learn's defaults (``k = 7``, weighted): the local
    scatter matrices and one generalised eigendecomposition; exact by
    construction (no certificate: ``gap`` is empty).  Target: 10 s.

The table's ``N`` is the number of chunklets (RCA) or of samples (LFDA).
"""

import sys
import time
import warnings

from . import _max_rss_mb, case_main, result_fields, run_cases, timed_solve
from .lmnn import digits_data

__all__ = ["BENCH_CASES", "TARGETS", "run_case", "run_bench"]

#: ``(problem, methods)`` in run order.
BENCH_CASES = (("rca-digits", ("fast", "exact")), ("lfda-digits", ("eigh",)))

#: Each problem's target (seconds) for its first method.
TARGETS = {"rca-digits": 10.0, "lfda-digits": 10.0}


def _fit_rca(X, y, method, seed):
    from ..rca import RCA_Supervised

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the documented reduction
        return RCA_Supervised(random_state=seed, solver=method).fit(X, y)


def run_case(case):
    """Run one case in this process: ``problem``, ``method``, ``seed``.
    Returns a dict of measurements."""
    from ..lfda import LFDA

    t0 = time.perf_counter()
    X, y = digits_data()
    out = {"setup_seconds": time.perf_counter() - t0, "base_mb": _max_rss_mb(),
           "n": int(X.shape[0]), "d": int(X.shape[1])}
    if case["problem"] == "rca-digits":
        est = timed_solve(out, lambda: _fit_rca(X, y, case["method"], case["seed"]))
        if est is not None:
            out.update(result_fields(est.result_), N=int(est.chunks_.max() + 1),
                       rank=int(est.components_.shape[0]))
    else:
        est = timed_solve(out, lambda: LFDA().fit(X, y))
        if est is not None:
            out.update(objective=float(est.eigenvalues_.sum()), status="exact (eigh)",
                       n_iter=1, N=int(X.shape[0]), rank=int(est.components_.shape[0]))
    return out


def _status(problem, method, res):
    """The run's status, the dimension it was solved in and, for the fast
    paths, whether the target time was met."""
    met = method in ("fast", "eigh") and res["seconds"] <= TARGETS[problem]
    return (f"{res.get('status', '')} (dimension {res.get('rank')}"
            + (f"; target {TARGETS[problem]:g} s: {'met' if met else 'NOT met'})"
               if method in ("fast", "eigh") else ")"))


def run_bench(max_seconds=None, seed=0, callback=None, *, cases=BENCH_CASES,
              isolate=True):
    """Run the benchmark (parameters as :func:`cvxmetric.bench.ldml.run_bench`).

    Returns
    -------
    list of dict
        ``problem``, ``method``, ``d``, ``N``, ``n``, ``objective``, ``gap``
        (certified, RCA), ``gap_kind``, ``seconds``, ``peak_mb``,
        ``base_mb``, ``status``, ``n_iter``, ``error``.
    """
    return run_cases(__spec__.name, run_case, cases, _status, seed=seed,
                     max_seconds=max_seconds, callback=callback, isolate=isolate)


if __name__ == "__main__":
    sys.exit(case_main(__spec__.name, run_case))

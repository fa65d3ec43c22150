"""Benchmark of SDML's certified fast path (``cvxmetric bench --family sdml``).

Each problem runs in its own process (:func:`cvxmetric.bench.run_isolated`):

``sdml-digits``
    scikit-learn's digits (``n = 1 797``, ``d = 64``, 10 classes),
    standardised (constant pixels left at 0), metric-learn's default
    ``20 C^2 = 2 000`` pairs, ``balance_param = 1e-5`` (``P`` positive
    definite), ``sparsity_param = 1e-3`` (at metric-learn's 0.01 nearly all
    of ``P``'s off-diagonal entries are below the penalty and ``M`` is
    almost diagonal: a trivial problem).  Target: certified in 10 s.
``sdml-digits-default``
    The same pairs at metric-learn's ``balance_param = 0.5``: the objective
    is unbounded below (a pixel's ``P_ii < 0``) and the certified answer is
    ``UnboundedError``, found before any solve.
``sdml-d300``
    Synthetic: 900 points of 3 Gaussian classes in ``d = 300`` (unit
    noise, centres with unit spread), 180 pairs, ``balance_param = 1e-5``,
    ``sparsity_param = 1e-3`` (at 0.01 the optimum is diagonal).  Target:
    certified in 30 s.

Method ``fast`` (:func:`~cvxmetric.sdml.solve_fast`: scikit-learn's
graphical lasso, certified by the graphical lasso's dual bound); ``gap``
is the run's own certified relative gap.
"""

import sys
import time

import numpy as np

from . import (
    _max_rss_mb,
    case_main,
    memory_limit,
    result_fields,
    run_cases,
    timed_solve,
)
from .lmnn import digits_data

__all__ = ["BENCH_CASES", "TARGETS", "synthetic_data", "run_case", "run_bench",
           "run_target_cases"]

#: ``(problem, methods)`` in run order.
BENCH_CASES = (("sdml-digits", ("fast",)), ("sdml-digits-default", ("fast",)),
               ("sdml-d300", ("fast",)))

#: Each problem's target in seconds.
TARGETS = {"sdml-digits": 10.0, "sdml-digits-default": 10.0, "sdml-d300": 30.0}

#: Address-space limit of a run's process.
MEMORY_LIMIT = 4 * 1024 ** 3


def synthetic_data(n=900, d=300, n_classes=3, random_state=0):
    """``n`` points of ``n_classes`` Gaussian classes in ``d`` dimensions."""
    rng = np.random.RandomState(random_state)
    y = np.arange(n) % n_classes
    return rng.randn(n_classes, d)[y] + rng.randn(n, d), y


def _problem_data(problem, seed, d=300):
    """``(SDMLData, n)`` of a benchmark problem."""
    from ..constraints import pairs_from_labels
    from ..sdml import SDMLData

    if problem.startswith("sdml-digits"):
        X, y = digits_data()
    else:
        X, y = synthetic_data(d=d, random_state=seed)
    pairs, labels = pairs_from_labels(y, 20 * np.unique(y).size ** 2,
                                      random_state=seed)
    balance = 0.5 if problem == "sdml-digits-default" else 1e-5
    return SDMLData(X, pairs, labels, balance_param=balance, sparsity_param=1e-3), \
        X.shape[0]


def run_case(case):
    """Run one case in this process: ``problem``, ``method``, ``seed`` (and
    optionally ``d`` for ``sdml-d300``).  Returns a dict of measurements."""
    from ..sdml import solve_fast

    t0 = time.perf_counter()
    data, n = _problem_data(case["problem"], case.get("seed", 0), case.get("d", 300))
    out = {"setup_seconds": time.perf_counter() - t0, "base_mb": _max_rss_mb(),
           "n": int(n), "d": int(data.n_features), "N": int(data.n_pairs)}
    res = timed_solve(out, lambda: solve_fast(data))
    if res is not None:
        out.update(result_fields(res))
    return out


def run_target_cases(module, run_case, cases, targets, seed=0, max_seconds=None,
                     callback=None, isolate=True):
    """Each case of ``cases`` in its own process (``module``'s
    ``run_case``), as table rows with the target of ``targets`` met or
    not; an ``UnboundedError`` row is the certified refusal."""
    def status(problem, method, res):
        t_max = targets[problem]
        return (f"{res.get('status', '')} (target {t_max:g} s: "
                f"{'met' if res['seconds'] <= t_max else 'NOT met'})")

    def on_error(row):
        if str(row["error"]).startswith("UnboundedError"):
            return "unbounded (certified: a ray to -inf)"
        return None

    return run_cases(module, run_case, cases, status, seed=seed, max_seconds=max_seconds,
                     callback=callback, isolate=isolate,
                     preexec_fn=memory_limit(MEMORY_LIMIT), on_error=on_error)


def run_bench(max_seconds=None, seed=0, callback=None, *, cases=BENCH_CASES,
              isolate=True):
    """Run the benchmark (parameters as :func:`cvxmetric.bench.ldml.run_bench`).

    Returns
    -------
    list of dict
        ``problem``, ``method``, ``d``, ``N`` (pairs), ``n``, ``objective``,
        ``gap`` (certified), ``gap_kind``, ``seconds``, ``peak_mb``,
        ``base_mb``, ``status``, ``n_iter``, ``error`` (``UnboundedError``:
        the certified answer of ``sdml-digits-default``).
    """
    return run_target_cases(__spec__.name, run_case, cases, TARGETS, seed, max_seconds,
                            callback, isolate)


if __name__ == "__main__":
    sys.exit(case_main(__spec__.name, run_case))

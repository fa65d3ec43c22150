"""Benchmark of SCML's certified fast solver (``cvxmetric bench --family scml``).

Each problem runs in its own process (:func:`cvxmetric.bench.run_isolated`,
with an address-space limit of :data:`MEMORY_LIMIT`):

``scml-digits``
    scikit-learn's digits (``n = 1 797``, ``d = 64``, 10 classes),
    standardised (constant pixels left at 0), with ``SCML_Supervised``'s
    defaults: metric-learn's k-NN triplets (``k_genuine = 3``,
    ``k_impostor = 10``: 53 910 triplets) and its local-LDA basis (1 280
    vectors, ``random_state = 0``).  Target: the whole fit certified in
    10 s.  The basis and triplet construction (K-means with ten starts and
    144 LDAs) is timed as ``setup_seconds``, the solve as ``seconds``; the
    target is judged on their sum.

Method ``fast`` (:class:`~cvxmetric.scml.SCMLWorkingSet` at its defaults);
``gap`` is the run's own certified relative gap over every triplet and
basis vector.  ``N`` is the number of triplets, ``K`` of basis vectors.
"""

import sys
import time

from . import (_max_rss_mb, case_main, memory_limit, result_fields, run_cases,
               timed_solve)
from .lmnn import digits_data

__all__ = ["BENCH_CASES", "MEMORY_LIMIT", "TARGETS", "run_case", "run_bench"]

#: ``(problem, methods)`` in run order.
BENCH_CASES = (("scml-digits", ("fast",)),)

#: Each problem's target: seconds.
TARGETS = {"scml-digits": 10.0}

#: Address-space limit of a run's process.
MEMORY_LIMIT = 8 * 1024 ** 3


def run_case(case):
    """Run one case in this process: ``problem``, ``method``, ``seed``, and
    optionally ``max_time`` and ``n`` (the first ``n`` digits).  Returns a
    dict of measurements."""
    from ..scml import SCMLData, SCMLWorkingSet

    t0 = time.perf_counter()
    X, y = digits_data()
    n = case.get("n")
    if n is not None:
        X, y = X[:n], y[:n]
    data = SCMLData.from_labels(X, y, random_state=case.get("seed", 0))
    out = {"setup_seconds": time.perf_counter() - t0, "base_mb": _max_rss_mb(),
           "n": int(X.shape[0]), "d": int(X.shape[1]), "N": int(data.n_triplets),
           "K": int(data.n_basis)}
    res = timed_solve(out, lambda: SCMLWorkingSet(max_time=case.get("max_time"))
                      .run(data, warn=False))
    if res is not None:
        out.update(result_fields(res), working_set=int(res.info["working_set"]),
                   working_basis=int(res.info["working_basis"]),
                   nonzero_weights=int((res.info["w"] > 0).sum()))
    return out


def _status(problem, res):
    """The row's status with the target."""
    t_max = TARGETS[problem]
    fit = res.get("setup_seconds", 0.0) + res.get("seconds", 0.0)
    met = res.get("status") == "optimal" and fit <= t_max
    return (f"{res.get('status', '')} (working set {res.get('working_set')} triplets x "
            f"{res.get('working_basis')} basis vectors, {res.get('nonzero_weights')} "
            f"nonzero; fit {fit:.2f} s = setup {res.get('setup_seconds', 0.0):.2f} s + "
            f"solve; target {t_max:g} s: {'met' if met else 'NOT met'})")


def run_bench(max_seconds=None, seed=0, callback=None, *, cases=BENCH_CASES,
              isolate=True):
    """Run the benchmark (parameters as :func:`cvxmetric.bench.ldml.run_bench`).

    Returns
    -------
    list of dict
        ``problem``, ``method``, ``d``, ``N`` (triplets), ``n``,
        ``objective``, ``gap`` (certified), ``seconds``, ``peak_mb``,
        ``status``, ``n_iter``, ``error``.
    """
    return run_cases(__spec__.name, run_case, cases,
                     lambda problem, method, res: _status(problem, res), seed=seed,
                     max_seconds=max_seconds, callback=callback, isolate=isolate,
                     preexec_fn=memory_limit(MEMORY_LIMIT), pass_max_time=True)


if __name__ == "__main__":
    sys.exit(case_main(__spec__.name, run_case))

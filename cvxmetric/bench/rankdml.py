"""Benchmark of the RankDML solvers (``cvxmetric bench --family rankdml``).

Cases, on synthetic retrieval data (:func:`bench_data`: a 2000-item gallery,
queries that are noisy copies of gallery items with a heterogeneous scale
per query, critical triplets with 10 top-ranked + 10 random irrelevant items
per query, as in Sec. 5 of the paper; lam = 1):

========================  ====  =======  ======================================
problem                   d     N        methods
========================  ====  =======  ======================================
rankdml-laplacian-diag    272   100 000  fast (interior point); exact on request
rankdml-laplacian-diag    272   5 000    exact, fast (interior point)
rankdml-burg-full         16    2 000    exact, fast (dual projected Newton)
========================  ====  =======  ======================================

``d = 272`` is the paper's feature count (Sec. 4.2); 100 000 ranked
constraints is the scale of its 5 000 training queries.  The exact CVXPY
solve of the largest case does not fit: measured on the 2-core machine, the
Clarabel model of Eq. 11 with 100 000 triplets (a dense 100 000 x 272
constraint block) held 5.2 GB resident and had not finished after 15
minutes.  It is therefore attempted only with ``large_exact=True`` (within
:data:`LARGE_EXACT_SECONDS`); otherwise the fast row's gap is the solver's
own certified relative duality gap (``gap_kind`` "certified").

Each run is a separate process (``python -m cvxmetric.bench.rankdml --case
JSON``) with an address-space limit of :data:`MEMORY_LIMIT`, so that its
peak memory (``ru_maxrss``) is its own and it can be stopped.  Rows have the
shape of :func:`cvxmetric.bench.qwise.run_bench`'s.
"""

import sys
import time

from . import (Runs, _max_rss_mb, bench_row, case_main, memory_limit, result_fields,
               timed_solve)

__all__ = ["BENCH_CASES", "LARGE_EXACT_SECONDS", "bench_data", "run_case",
           "run_bench"]

#: ``(problem, regularizer, diagonal, d, n_queries, methods)``; N = 20 n_queries.
BENCH_CASES = (
    ("rankdml-laplacian-diag", "laplacian", True, 272, 5000, ("fast",)),
    ("rankdml-laplacian-diag", "laplacian", True, 272, 250, ("exact", "fast")),
    ("rankdml-burg-full", "burg", False, 16, 100, ("exact", "fast")),
)

#: Wall-clock budget (seconds) of the exact solve above 10 000 constraints
#: (``large_exact=True``).
LARGE_EXACT_SECONDS = 600.0

#: Address-space limit of a benchmark process (bytes): "a few GiB".
MEMORY_LIMIT = 6 * 1024 ** 3

_N_GALLERY = 2000


def bench_data(regularizer, diagonal, d, n_queries, *, random_state=0):
    """Deterministic synthetic RankDML data with ``20 n_queries`` triplets.

    Returns
    -------
    RankData
    """
    from ..constraints import Triplets
    from ..rankdml._collection import synthetic_retrieval
    from ..rankdml._pairs import critical_triplets
    from ..rankdml._problem import RankData

    X, q, r, g = synthetic_retrieval(_N_GALLERY, n_queries, d,
                                     random_state=random_state)
    t = critical_triplets(q, r, g, X, n_top=10, n_random=10,
                          random_state=random_state)
    return RankData.from_triplets(Triplets.create(X, t), regularizer=regularizer,
                                  lam=1.0, diagonal=diagonal)


def run_case(case):
    """Run one case in this process: ``regularizer``, ``diagonal``, ``d``,
    ``n_queries``, ``method``, ``seed``.  Returns a dict of measurements
    (``error`` when the solve raised)."""
    from ..formulations import formulation
    from ..rankdml.fast import solve_fast

    t0 = time.perf_counter()
    data = bench_data(case["regularizer"], case["diagonal"], case["d"],
                      case["n_queries"], random_state=case.get("seed", 0))
    out = {"setup_seconds": time.perf_counter() - t0, "n": int(data.X.shape[0]),
           "N": int(data.n_constraints), "base_mb": _max_rss_mb()}
    if case["method"] == "exact":
        # the exact path as the estimators run it (the registry's warm start)
        res = timed_solve(out, lambda: formulation("rankdml").solve_exact(data))
    else:
        res = timed_solve(out, lambda: solve_fast(data, max_time=case.get("max_time")))
    if res is not None:
        out.update(result_fields(res), solver=res.method)
    return out


def run_bench(max_seconds=None, seed=0, callback=None, *, cases=BENCH_CASES,
              isolate=True, large_exact=False):
    """Run the benchmark.

    Parameters
    ----------
    max_seconds : float, optional
        Per-run wall-clock limit (the run's process is killed; the row
        reports a timeout).  The exact solve above 10 000 constraints is
        always limited to :data:`LARGE_EXACT_SECONDS`.
    seed : int
        ``random_state`` of the data.
    callback : callable, optional
        Called with each row when it is done.
    cases : sequence
        Default :data:`BENCH_CASES`.
    isolate : bool
        One process per run (own peak memory, killable).
    large_exact : bool
        Also attempt the exact solve of cases above 10 000 constraints.

    Returns
    -------
    list of dict
        ``problem``, ``method``, ``d``, ``N``, ``n``, ``objective``, ``gap``,
        ``gap_kind`` ("vs exact" or "certified"), ``seconds``, ``peak_mb``,
        ``base_mb``, ``status``, ``n_iter``, ``error``.
    """
    runs = Runs(__spec__.name, run_case, max_seconds=max_seconds, isolate=isolate,
                callback=callback, preexec_fn=memory_limit(MEMORY_LIMIT))
    for problem, reg, diagonal, d, n_queries, methods in cases:
        N = 20 * n_queries
        if large_exact and N > 10_000 and "exact" not in methods:
            methods = tuple(methods) + ("exact",)
        results = {}
        for method in methods:
            limit = max_seconds
            if method == "exact" and N > 10_000:
                limit = LARGE_EXACT_SECONDS if limit is None else min(
                    limit, LARGE_EXACT_SECONDS)
            case = {"regularizer": reg, "diagonal": diagonal, "d": d,
                    "n_queries": n_queries, "method": method, "seed": seed}
            if method == "fast" and max_seconds is not None:
                case["max_time"] = 0.9 * max_seconds
            results[method] = runs.run(case, limit)
        f_exact = results.get("exact", {}).get("objective")
        for method in methods:
            res = results[method]
            label = method if method == "exact" else res.get("solver", method)
            runs.add(bench_row(res, f_exact, problem=problem, method=label, d=d,
                               N=res.get("N", N), n=res.get("n", _N_GALLERY + n_queries)))
    return runs.rows


if __name__ == "__main__":
    sys.exit(case_main(__spec__.name, run_case))

"""Benchmark of the OMDML solvers (``cvxmetric bench --family omdml``).

The paper's small-scale size (Sec. 5.5): 500 items, 5 modalities of
dimensions 81, 37, 120, 59 and 512 (:func:`bench_data`: uniform features
in [0, 1] with a class signal in a fifth of each view's features, 10
classes), triplets from the labels:

``omdml``
    :class:`~cvxmetric.omdml.OMDMLOnline`, Algorithm 1 with the exact
    per-step (rank-2) projection, 10 000 triplets (the paper: 34 765 s).
``lomdml``
    :class:`~cvxmetric.omdml.LowRankOMDML`, Algorithm 2, rank 10, 10 000
    triplets (the paper: 22 s) and 100 000 triplets.
``exact``
    :func:`~cvxmetric.omdml.solve_exact` (Clarabel) at a size it solves in
    about a minute: the dimensions divided by 8 (10, 5, 15, 7, 64) with 500
    triplets (1 000 triplets took 83 s).

Each run is its own process (own peak memory, killable).  The online rows
report the number of mistakes and, as ``gap``, the certified relative gap
of Eq. 3 at their final ``theta`` (an online learner is not expected to
reach the optimum).
"""

import sys
import time

import numpy as np

from . import Runs, _max_rss_mb, bench_row, case_main, result_fields, timed_solve

__all__ = ["BENCH_CASES", "DIMS", "bench_data", "run_case", "run_bench"]

#: The paper's small-scale modality dimensions.
DIMS = (81, 37, 120, 59, 512)

#: ``(method, n_triplets, dimension divisor)`` in run order.
BENCH_CASES = (("omdml", 10_000, 1), ("lomdml", 10_000, 1), ("lomdml", 100_000, 1),
               ("exact", 500, 8))


def bench_data(n_triplets, *, divisor=1, n_items=500, random_state=0):
    """Deterministic synthetic multi-modal data at the paper's small size.

    Returns
    -------
    OMDMLData
    """
    from ..constraints import triplets_from_labels
    from ..omdml._problem import OMDMLData

    rng = np.random.RandomState(random_state)
    y = np.arange(n_items) % 10
    views = []
    for d in DIMS:
        d = max(2, int(round(d / divisor)))
        signal = rng.uniform(size=d) < 0.2
        V = rng.uniform(size=(n_items, d)) + 0.1 * y[:, None] * signal
        views.append(V / V.max(axis=0))  # features in [0, 1], as the paper's
    t = triplets_from_labels(y, n_triplets, random_state=random_state)
    return OMDMLData.from_views(views, t)


def _solve(method, data, max_time=None):
    from ..omdml.exact import solve_exact
    from ..omdml.fast import LowRankOMDML, OMDMLOnline

    if method == "exact":
        return solve_exact(data)
    if method == "omdml":
        return OMDMLOnline(max_time=max_time).run(data, warn=False)
    if method == "lomdml":
        return LowRankOMDML(rank=10, random_state=0, max_time=max_time).run(
            data, warn=False)
    raise ValueError(f"method: unknown option {method!r}; expected 'omdml', "
                     f"'lomdml' or 'exact'.")


def run_case(case):
    """Run one case (``method``, ``N``, ``divisor``, ``seed``) in this process."""
    t0 = time.perf_counter()
    data = bench_data(case["N"], divisor=case["divisor"],
                      random_state=case.get("seed", 0))
    out = {"setup_seconds": time.perf_counter() - t0, "n": 500, "base_mb": _max_rss_mb()}
    res = timed_solve(out, lambda: _solve(case["method"], data, case.get("max_time")))
    if res is not None:
        out.update(result_fields(res), mistakes=int(res.info.get("mistakes", 0)),
                   dims=list(data.dims))
    return out


def run_bench(max_seconds=None, seed=0, callback=None, *, isolate=True,
              cases=BENCH_CASES):
    """Run the OMDML benchmark; rows shaped as
    :func:`cvxmetric.bench.qwise.run_bench`'s (``d``: the largest view's
    dimension, ``N``: triplets; ``status`` also gives the mistakes of an
    online run)."""
    runs = Runs(__spec__.name, run_case, max_seconds=max_seconds, isolate=isolate,
                callback=callback)
    for method, N, divisor in cases:
        res = runs.run({"method": method, "N": N, "divisor": divisor, "seed": seed,
                        "max_time": max_seconds})
        d = max(2, int(round(max(DIMS) / divisor)))
        row = bench_row(res, None, problem="omdml-synthetic", method=method, d=d,
                        N=N, n=500)
        if res.get("error") is None and method != "exact":
            row["status"] = f"{row['status']} ({res['mistakes']} mistakes)"
        runs.add(row)
    return runs.rows


if __name__ == "__main__":
    sys.exit(case_main(__spec__.name, run_case))

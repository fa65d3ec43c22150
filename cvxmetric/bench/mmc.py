"""Benchmark of the MMC solvers (``cvxmetric bench --family mmc``).

At ``d = 30`` with 100 similar and 100 dissimilar pairs (200 samples in 4
Gaussian classes whose means differ in the first 10 features), full and
diagonal ``M``:

``exact``
    :func:`cvxmetric.mmc.solve_exact` (Clarabel, certified).
``fast``
    :class:`cvxmetric.mmc.MMCProjectedGradient` (projected gradient ascent
    with the exact projection, default ``tol``).
``newton``
    :class:`cvxmetric.mmc.MMCNewton` (diagonal only).

``gap`` is ``(r - r_exact) / r_exact`` of the scale-free values, relative to
the optimum itself (the optimum is about 1e-3, so the ``max(1, |f|)``
normalisation of the Qwise benchmark would hide everything).  Each run is
a separate Python process, as in :mod:`cvxmetric.bench`, so that its peak
resident memory is its own and ``max_seconds`` can stop it.

A last row, ``mmc-pairs-100k``, runs ``fast`` (full ``M``) at the size
where memory matters: 100 000 labelled pairs of 2 100 samples in ``d = 60``
(:data:`LARGE`); its ``peak MB`` is the check that no array larger than the
pairs' differences is formed (the whitening's SVD once built an
``(n_S, n_S)`` factor: 20 GB at this size).

Measured on the 2-core development machine (docs/mmc/measurements.md): every method
reaches the exact optimum to better than 1e-9 relative; full ``M``: exact
2.9-3.5 s, fast 0.5-0.7 s; diagonal: exact 0.06-0.08 s, fast and newton
0.04-0.07 s (the machine is shared: times vary by about 30 %).
"""

import sys
import time

import numpy as np

from . import Runs, _max_rss_mb, bench_row, case_main, result_fields, timed_solve

__all__ = ["BENCH_CASES", "LARGE", "bench_data", "run_case", "run_bench"]

#: ``(diagonal, method)`` in run order (the exact solve first: the yardstick).
BENCH_CASES = ((False, "exact"), (False, "fast"),
               (True, "exact"), (True, "fast"), (True, "newton"))

D_FEATURES = 30
N_PAIRS = 200
N_SAMPLES = 200

#: Sizes of the ``mmc-pairs-100k`` row (method ``fast``, full ``M``).
LARGE = {"n": 2100, "d": 60, "n_pairs": 100_000}


def bench_data(diagonal, *, d=D_FEATURES, n_pairs=N_PAIRS, n=N_SAMPLES,
               random_state=0):
    """Deterministic synthetic MMC data: ``n_pairs`` labelled pairs of ``n``
    samples in ``d`` dims.

    Returns
    -------
    MMCData
    """
    from ..constraints import pairs_from_labels
    from ..mmc._problem import MMCData

    rng = np.random.RandomState(random_state)
    n_classes = 4
    y = np.arange(n) % n_classes
    means = np.zeros((n_classes, d))
    means[:, :min(d, 10)] = rng.normal(scale=1.5, size=(n_classes, min(d, 10)))
    X = means[y] + rng.normal(size=(n, d))
    pairs, labels = pairs_from_labels(y, n_pairs, random_state=random_state)
    return MMCData.create(X, pairs, labels, diagonal=diagonal)


def _solve(method, data, max_time=None):
    from ..formulations import formulation
    from ..mmc.fast import MMCNewton, MMCProjectedGradient

    if method == "exact":
        return formulation("mmc").solve_exact(data)
    if method == "fast":
        return MMCProjectedGradient(max_time=max_time).run(data)
    if method == "newton":
        return MMCNewton(max_time=max_time).run(data)
    raise ValueError(f"method: unknown option {method!r}; expected 'exact', "
                     f"'fast' or 'newton'.")


def run_case(case):
    """Run one case (``diagonal``, ``method``, ``seed``) in this process."""
    t0 = time.perf_counter()
    sizes = LARGE if case.get("large") else {}
    data = bench_data(case["diagonal"], random_state=case.get("seed", 0), **sizes)
    out = {"setup_seconds": time.perf_counter() - t0, "n": int(data.X.shape[0]),
           "base_mb": _max_rss_mb()}
    res = timed_solve(out, lambda: _solve(case["method"], data, case.get("max_time")))
    if res is not None:
        # compared by the scale-free value (docs/mmc/formulation.md)
        out.update(result_fields(res), objective=float(res.info["scale_free"]),
                   cert_rel_gap=float(data.relative_gap(res.certificate)))
    return out


def run_bench(max_seconds=None, seed=0, callback=None, *, isolate=True):
    """Run the MMC benchmark.

    Parameters
    ----------
    max_seconds : float, optional
        Per-run limit (the run's process is killed; iterative solvers also
        get it as ``max_time``).  Needs ``isolate``.
    seed : int
        ``random_state`` of the data.
    callback : callable, optional
        Called with each row when it is done.
    isolate : bool
        One process per run (own peak memory, killable).

    Returns
    -------
    list of dict
        Rows with ``problem``, ``method``, ``d``, ``N`` (pairs), ``n``
        (samples), ``objective`` (scale-free), ``gap``, ``gap_kind``,
        ``seconds``, ``peak_mb``, ``base_mb``, ``status``, ``n_iter``,
        ``error`` -- the shape of :func:`cvxmetric.bench.qwise.run_bench`'s rows.
    """
    runs = Runs(__spec__.name, run_case, max_seconds=max_seconds, isolate=isolate,
                callback=callback)
    exact = {}
    for diagonal, method in BENCH_CASES:
        res = runs.run({"diagonal": diagonal, "method": method, "seed": seed,
                        "max_time": max_seconds})
        kind = "diagonal" if diagonal else "full"
        if method == "exact" and res.get("error") is None:
            exact[diagonal] = res.get("objective")
        runs.add(bench_row(res, exact.get(diagonal), problem=f"mmc-synthetic-{kind}",
                           method=method, d=D_FEATURES, N=N_PAIRS, n=res.get("n"),
                           relative_to_optimum=True))
    res = runs.run({"diagonal": False, "method": "fast", "seed": seed,
                    "max_time": max_seconds, "large": True})
    runs.add(bench_row(res, None, problem="mmc-pairs-100k", method="fast",
                       d=LARGE["d"], N=LARGE["n_pairs"], n=res.get("n")))
    return runs.rows


if __name__ == "__main__":
    sys.exit(case_main(__spec__.name, run_case))

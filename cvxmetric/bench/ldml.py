"""Benchmark of the LDML solvers (``cvxmetric bench --family ldml``).

Four problems (each run in its own process, :func:`cvxmetric.bench.run_isolated`,
with an address-space limit of :data:`MEMORY_LIMIT`, so that its peak
resident memory is its own and it can be stopped):

``ldml-allpairs-step``
    One step of the low-rank gradient method (Eq. 4-6) over *all* pairs of
    ``N = 15 000`` instances (112 492 500 pairs), ``D = 3 456`` (the
    paper's face descriptors), rank ``d = 128``, random labels of 1 000
    classes (:func:`step_data`): one :meth:`~cvxmetric.ldml.AllPairs.value_grad`
    with the gradient and one value-only evaluation (one Armijo trial of
    :class:`~cvxmetric.ldml.LowRankLDML`).  Target: under 10 s and 4 GiB.
    The status gives both times, the step's CPU time (all threads: on a
    shared machine the wall time also counts waiting for a core), the
    setup's (drawing ``X``, building
    :class:`~cvxmetric.ldml.AllPairs`) and, where Linux lets the peak be
    reset (``/proc/self/clear_refs``), the step's own peak resident memory.
``ldml-allpairs-fit``
    A low-rank fit (:func:`~cvxmetric.ldml.fit_lowrank`, one start) over all
    pairs of ``N = 5 000`` instances, ``D = 1 024``, rank ``d = 32``, 50
    classes whose means differ in a 32-dimensional subspace
    (:func:`fit_data`), within :data:`FIT_MAXITER` iterations.  Below full
    rank nothing certifies the result: the row reports the objective, the
    stationarity and ``min_b F(0, b)`` (the value of the zero metric).
``ldml-pairs-trace``, ``ldml-pairs-frobenius``
    Explicit pairs of 1 000 points in 10 Gaussian classes, ``D = 16``,
    ``lam = 0.1`` (:func:`pairs_data`), at about the largest size the exact
    CVXPY path solves in a minute on the shared 2-core machine: ``P = 2 500``
    with the trace regulariser (measured 40 s: Clarabel's point was not
    certified, SCS's was; 3 000 pairs took 185 s, 4 000 more than 400 s),
    ``P = 8 000`` with the Frobenius one (46 s).  Methods ``exact``
    (:func:`~cvxmetric.ldml.solve_exact`), ``fast``
    (:func:`~cvxmetric.ldml.solve_fast`) and ``lowrank``
    (:func:`~cvxmetric.ldml.fit_lowrank` at full rank, as in the
    collection); ``gap`` is against the exact objective.

Rows have the shape of :func:`cvxmetric.bench.qwise.run_bench`'s: ``d``
is the input dimension ``D``, ``N`` the number of pairs, ``n`` the number
of instances; ``peak_mb`` / ``base_mb`` the run's ``ru_maxrss`` at the end
/ after building the data (the process's peak, setup included).
"""

import math
import sys
import time

import numpy as np

from . import (Runs, _max_rss_mb, bench_row, case_main, memory_limit, result_fields,
               timed_solve)

__all__ = ["BENCH_CASES", "FIT_MAXITER", "MEMORY_LIMIT", "STEP_TARGET", "step_data",
           "fit_data", "pairs_data", "run_case", "run_bench"]

#: ``(problem, sizes, methods)`` in run order.  ``sizes``: ``n`` instances,
#: ``D`` dimensions, ``rank``, ``classes`` (all-pairs problems) or ``P``
#: pairs (explicit pairs).
BENCH_CASES = (
    ("ldml-allpairs-step", {"n": 15_000, "D": 3456, "rank": 128, "classes": 1000},
     ("step",)),
    ("ldml-allpairs-fit", {"n": 5000, "D": 1024, "rank": 32, "classes": 50},
     ("lowrank",)),
    ("ldml-pairs-trace", {"n": 1000, "D": 16, "P": 2500, "regularizer": "trace"},
     ("exact", "fast", "lowrank")),
    ("ldml-pairs-frobenius", {"n": 1000, "D": 16, "P": 8000,
                              "regularizer": "frobenius"},
     ("exact", "fast", "lowrank")),
)

#: Iteration budget of the all-pairs fit (each iteration: one evaluation
#: with the gradient and at least one without).
FIT_MAXITER = 100

#: The step's target: ``(seconds, bytes)`` of peak resident memory.
STEP_TARGET = (10.0, 4 * 1024 ** 3)

#: Address-space limit of a benchmark process (bytes).
MEMORY_LIMIT = 8 * 1024 ** 3


def _scaled_factor(rng, rank, D, spread):
    """A random ``L`` (rank, D) for which the mean squared distance between
    two instances whose differences have covariance ``spread I`` is 1."""
    return rng.standard_normal((rank, D)) / math.sqrt(spread * rank * D)


def step_data(n, D, rank, classes, *, random_state=0):
    """``(AllPairs, L, b)``: standard normal instances, random labels of
    ``classes`` classes, a random ``L`` scaled so that the mean squared
    distance is 1, and ``b = 1``."""
    from ..ldml.fast import AllPairs

    rng = np.random.default_rng(random_state)
    X = rng.standard_normal((n, D))
    labels = rng.integers(0, classes, size=n)
    return AllPairs(X, labels), _scaled_factor(rng, rank, D, 2.0), 1.0


def fit_data(n, D, rank, classes, *, random_state=0):
    """``AllPairs``: ``classes`` balanced classes whose means (scale 0.5)
    differ only in a ``rank``-dimensional random subspace of ``R^D``, plus
    standard normal noise in every dimension."""
    from ..ldml.fast import AllPairs

    rng = np.random.default_rng(random_state)
    labels = np.arange(n) % classes
    Q = np.linalg.qr(rng.standard_normal((D, rank)))[0]  # (D, rank) orthonormal
    means = 0.5 * rng.standard_normal((classes, rank)) @ Q.T
    X = means[labels] + rng.standard_normal((n, D))
    return AllPairs(X, labels)


def pairs_data(n, D, P, *, regularizer="trace", random_state=0):
    """``LDMLData``: ``P`` class pairs of ``n`` points in 10 Gaussian
    classes in ``D`` dims (standardised), ``lam = 0.1``."""
    from ..collection import gaussian_classes, standardize
    from ..constraints import pairs_from_labels
    from ..ldml.exact import LDMLData

    rng = np.random.RandomState(random_state)
    X, y = gaussian_classes(rng, n, D, 10, 0.5)
    p, lab = pairs_from_labels(y, P, random_state=random_state)
    return LDMLData(standardize(X), p, lab, lam=0.1, regularizer=regularizer)


def _n_pairs(problem, sizes):
    if problem.startswith("ldml-pairs"):
        return int(sizes["P"])
    return sizes["n"] * (sizes["n"] - 1) // 2


def _f_zero(labels):
    """``min_b F(0, b)`` over all pairs of ``labels``: every distance 0, so
    ``b = log(S / D)`` for ``S`` similar and ``D`` dissimilar pairs -- the
    value a fit has to beat."""
    counts = np.bincount(labels).astype(float)
    n = float(len(labels))
    S = float(np.sum(counts * (counts - 1)) / 2)
    Dn = n * (n - 1) / 2 - S
    return S * math.log1p(Dn / S) + Dn * math.log1p(S / Dn)


def _reset_peak():
    """Reset the peak resident set size (``VmHWM``) where Linux allows it;
    whether it did."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _vm_hwm_mb():
    """``VmHWM`` (peak resident set size) in MB, or ``None``."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def _step(loss, L, b):
    reset = _reset_peak()
    c0 = time.process_time()
    t0 = time.perf_counter()
    f, gL, gb = loss.value_grad(L, b)
    t1 = time.perf_counter()
    # one Armijo trial at a step of 10 % of ||L|| along the gradient
    step = 0.1 * float(np.linalg.norm(L)) / max(math.sqrt(float(np.sum(gL * gL))
                                                          + gb * gb), 1e-300)
    f_trial = loss.value_grad(L - step * gL, b - step * gb, grad=False)
    t2 = time.perf_counter()
    cpu = time.process_time() - c0
    return {"cpu_seconds": cpu, "objective": float(f_trial), "f_start": float(f),
            "grad_seconds": t1 - t0, "value_seconds": t2 - t1, "n_iter": 1,
            "step_peak_mb": _vm_hwm_mb() if reset else None, "status": "ok"}


def _solve(method, problem, data, max_time):
    from ..ldml._collection import LOWRANK_MAXITER
    from ..ldml.exact import solve_exact
    from ..ldml.fast import PairSet, fit_lowrank, solve_fast

    if method == "exact":
        return solve_exact(data)
    if method == "fast":
        return solve_fast(data, max_time=max_time, warn=False)
    if method == "lowrank" and problem.startswith("ldml-pairs"):
        loss = PairSet(data.X, data.pairs, data.s, lam=data.lam,
                       regularizer=data.regularizer)
        return fit_lowrank(loss, data.d, n_init=1, random_state=0,
                           maxiter=LOWRANK_MAXITER, max_time=max_time, warn=False)
    raise ValueError(f"method: unknown option {method!r} for {problem!r}.")


def run_case(case):
    """Run one case in this process: ``problem``, ``sizes``, ``method``,
    ``seed`` and optionally ``max_time``.  Returns a dict of measurements
    (``error`` when the run raised)."""
    problem, sizes, method = case["problem"], case["sizes"], case["method"]
    seed = case.get("seed", 0)
    t0 = time.perf_counter()
    if problem == "ldml-allpairs-step":
        data = step_data(sizes["n"], sizes["D"], sizes["rank"], sizes["classes"],
                         random_state=seed)
    elif problem == "ldml-allpairs-fit":
        data = fit_data(sizes["n"], sizes["D"], sizes["rank"], sizes["classes"],
                        random_state=seed)
    else:
        data = pairs_data(sizes["n"], sizes["D"], sizes["P"],
                          regularizer=sizes.get("regularizer", "trace"),
                          random_state=seed)
    out = {"setup_seconds": time.perf_counter() - t0, "base_mb": _max_rss_mb()}
    fields = timed_solve(out, lambda: _measure(problem, method, sizes, data, case))
    if fields is not None:
        out.update(fields)
        # the step resets the peak (VmHWM, which ru_maxrss reads on Linux)
        # after the setup: the process's peak is the larger of the two
        out["peak_mb"] = max(out["base_mb"], out["peak_mb"])
    return out


def _measure(problem, method, sizes, data, case):
    """The measurements of one run of :func:`run_case` on its ``data``."""
    if problem == "ldml-allpairs-step":
        return _step(*data)
    if problem == "ldml-allpairs-fit":
        from ..ldml.fast import fit_lowrank

        res = fit_lowrank(data, sizes["rank"], n_init=1, random_state=case.get("seed", 0),
                          maxiter=case.get("maxiter", FIT_MAXITER),
                          max_time=case.get("max_time"), warn=False)
        return {"objective": float(res.objective), "status": str(res.status),
                "n_iter": int(res.n_iter),
                "stationarity": float(res.info["stationarity"]),
                "f_zero": _f_zero(data.labels)}
    res = _solve(method, problem, data, case.get("max_time"))
    return result_fields(res)


def _status(problem, res):
    """The row's status with what the problem's runs measure."""
    status = res.get("status", "")
    if problem == "ldml-allpairs-step":
        t_max, b_max = STEP_TARGET
        met = res["seconds"] <= t_max and res["peak_mb"] <= b_max / 1024 ** 2
        own = res.get("step_peak_mb")
        return (f"{status} (gradient {res['grad_seconds']:.2f} s + trial "
                f"{res['value_seconds']:.2f} s"
                + f", {res['cpu_seconds']:.2f} CPU s"
                + ("" if own is None else f", step's own peak {own:.0f} MB")
                + f"; setup {res['setup_seconds']:.1f} s; target {t_max:g} s, "
                f"{b_max / 1024 ** 3:g} GiB: {'met' if met else 'NOT met'})")
    if problem == "ldml-allpairs-fit":
        return (f"{status} (F {res['objective']:.6g} after {res['n_iter']} "
                f"iterations, min_b F(0, b) = {res['f_zero']:.6g}; stationarity "
                f"{res['stationarity']:.1e})")
    return status


def run_bench(max_seconds=None, seed=0, callback=None, *, cases=BENCH_CASES,
              isolate=True):
    """Run the benchmark.

    Parameters
    ----------
    max_seconds : float, optional
        Per-run wall-clock limit (the run's process is killed; the row
        reports a timeout); the iterative solvers get ``0.9 max_seconds``
        as their own ``max_time``.
    seed : int
        ``random_state`` of the data.
    callback : callable, optional
        Called with each row when it is done.
    cases : sequence
        Default :data:`BENCH_CASES`.
    isolate : bool
        One process per run (own peak memory, killable).

    Returns
    -------
    list of dict
        ``problem``, ``method``, ``d``, ``N``, ``n``, ``objective``, ``gap``,
        ``gap_kind`` ("vs exact", "certified" or "" when there is none),
        ``seconds``, ``peak_mb``, ``base_mb``, ``status``, ``n_iter``,
        ``error``.
    """
    runs = Runs(__spec__.name, run_case, max_seconds=max_seconds, isolate=isolate,
                callback=callback, preexec_fn=memory_limit(MEMORY_LIMIT))
    for problem, sizes, methods in cases:
        results = {}
        for method in methods:
            case = {"problem": problem, "sizes": dict(sizes), "method": method,
                    "seed": seed}
            if max_seconds is not None and method != "exact":
                case["max_time"] = 0.9 * max_seconds
            results[method] = runs.run(case)
        f_exact = results.get("exact", {}).get("objective")
        for method in methods:
            res = results[method]
            row = bench_row(res, f_exact if method != "exact" else None,
                            problem=problem, method=method, d=sizes["D"],
                            N=_n_pairs(problem, sizes), n=sizes["n"])
            if row["error"] is None:
                row["status"] = _status(problem, res)
                if not problem.startswith("ldml-pairs"):  # nothing to compare with
                    row["gap"], row["gap_kind"] = None, ""
            runs.add(row)
    return runs.rows


if __name__ == "__main__":
    sys.exit(case_main(__spec__.name, run_case))

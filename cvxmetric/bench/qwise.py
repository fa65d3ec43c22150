"""Qwise's scaling benchmark (``cvxmetric bench --family qwise``).

``cvxmetric bench --family qwise`` (or ``--sizes``) prints, for each size
``(d, N)`` and method, the objective gap to the exact solution, the
wall-clock time and the peak memory.  Methods:

``exact``
    :func:`cvxmetric.qwise.solve_exact` (the default margin-set reduction,
    from the registry's warm start: ``formulation("qwise").solve_exact``).
``straightforward``
    ``solve_exact(data, reduce=False)``: the declared CVXPY model.
``fast``
    :class:`cvxmetric.qwise.QwiseDualSolver` with its default tolerance.
``fast@1e-4``
    The same with ``tol=1e-4``: the time to reach a ``1e-4`` relative
    duality gap.
``subgradient``
    :class:`cvxmetric.qwise.ProjectedSubgradient` (Algorithm 1).
``vector-exact``
    :func:`cvxmetric.qwise_vector.solve_exact` on the smoothed vector model
    (Eq. 27-30, ``psi="squared"``, :func:`vector_bench_data`), up to
    :data:`VECTOR_EXACT_MAX` entries of the feature matrix.
``newton``
    :class:`cvxmetric.qwise_vector.ProjectedNewton` (Algorithm 2) on the same data.
``structural-exact``
    :func:`cvxmetric.qwise_structural.solve_exact`: Eq. 16 (AUC loss,
    trace regulariser, quadruplet queries) in its closed hinge-sum form, up
    to :data:`EXACT_MAX_N` quadruplets (:func:`structural_bench_data`).
``structural-fast``
    :func:`cvxmetric.qwise_structural.solve_structural_fast`: the closed form as a
    weighted Qwise Eq. 8 problem, by the Qwise dual solver.
``structural``
    :class:`cvxmetric.qwise_structural.StructuralCuttingPlane`, the 1-slack
    cutting-plane method of Sec. 4.4, on the same data: time, number of
    cuts, final epsilon (in the status column).

Each model has its own default sizes (:data:`MODEL_SIZES`); ``--sizes``
runs every selected method at the sizes given.

Above :data:`EXACT_MAX_N` constraints no exact solve is attempted.  The
yardstick there is the default fast solver's objective when its certificate
shows a relative duality gap of at most :data:`~cvxmetric._tolerances.EXACT_GAP`
(the optimum to that accuracy): the other methods' gaps are measured against
it (``gap kind`` "vs fast"), and the fast row reports its own certified gap
("certified").  Without such a yardstick (the fast solve failed, or ran out
of time) every row reports its own certified relative duality gap, and so
does every row at smaller sizes when the exact solve failed or timed out.
Iterative solves above :data:`EXACT_MAX_N` run under the wall-clock budget
:data:`LARGE_SOLVER_SECONDS`; Algorithm 1 then runs until the budget (or
its default 20 000 iterations) ends it.

Each run is, by default, a separate Python process (``python -m
cvxmetric.bench.qwise --case ...``) so that its peak resident memory
(``ru_maxrss``) is its own and a run exceeding ``max_seconds`` can be
killed safely.  The peak includes the interpreter and the imported
libraries (about 150-250 MB); ``base MB`` is the peak before the solve
started (after building the data), so ``peak - base`` bounds the solve's
own extra memory from below.

Measured on the 2-core machine (2026-11-24): ``exact`` 0.12 s / 0.96 s /
4.4 s and ``straightforward`` 2.1 s / 28 s / 178 s (peak 0.2 / 0.5 / 1.1 GB)
at (20, 1000) / (40, 2000) / (60, 2000); ``fast`` 0.09 / 0.21 / 0.33 s
there (gap <= 2e-10) and ``fast@1e-4`` 0.06 / 0.15 / 0.21 s; ``fast``
10.7 s at (100, 1e5) and 70 s at (100, 1e6) (certified 1.7e-10 / 1.6e-10,
peak 1.0 GB; since then 5.2-5.4 s and about 50 s on one thread, see
docs/performance.md); Algorithm 1 stops at the :data:`LARGE_SOLVER_SECONDS` budget
there (4.9e-3 above the fast optimum at 1e6, peak 1.6 GB).  Use
``--skip-straightforward`` to save the three minutes of the declared model
at (60, 2000).
"""

import logging
import sys
import time

import numpy as np

from . import (Runs, _max_rss_mb, bench_row, case_main, check_known, result_fields,
               timed_solve)

__all__ = [
    "DEFAULT_SIZES",
    "VECTOR_SIZES",
    "STRUCTURAL_SIZES",
    "MODEL_SIZES",
    "VECTOR_EXACT_MAX",
    "vector_bench_data",
    "structural_bench_data",
    "bench_structural",
    "EXACT_MAX_N",
    "BENCH_METHODS",
    "LARGE_SOLVER_SECONDS",
    "bench_data",
    "run_case",
    "run_bench",
    "parse_sizes",
]

logger = logging.getLogger("cvxmetric")

#: The sizes ``(d, N)`` of ``cvxmetric bench``.
DEFAULT_SIZES = ((20, 1000), (40, 2000), (60, 2000), (100, 100_000),
                 (100, 1_000_000))

#: Largest number of quadruplets with an exact (CVXPY) solve.
EXACT_MAX_N = 10_000

#: The vector model's sizes ``(d, N)``: Newton at the paper's largest
#: vector size (d = 1000 with 10^4 constraints) and at 10^6 constraints.
VECTOR_SIZES = ((50, 2000), (1000, 10_000), (100, 1_000_000))

#: The structural model's sizes ``(d, N)`` (quadruplets).
STRUCTURAL_SIZES = ((20, 2000), (50, 100_000))

#: Largest ``N * d`` with an exact (CVXPY) solve of the vector model.
VECTOR_EXACT_MAX = 2_000_000

#: The methods of each model, in run order (the exact solve first: it is
#: the yardstick).
MODEL_METHODS = {
    "matrix": ("exact", "straightforward", "fast", "fast@1e-4", "subgradient"),
    "vector": ("vector-exact", "newton"),
    "structural": ("structural-exact", "structural-fast", "structural"),
}

#: Default sizes of each model.
MODEL_SIZES = {"matrix": DEFAULT_SIZES, "vector": VECTOR_SIZES,
               "structural": STRUCTURAL_SIZES}

#: Every method, in run order.
BENCH_METHODS = sum(MODEL_METHODS.values(), ())

_EXACT_METHODS = ("exact", "straightforward", "vector-exact", "structural-exact")

#: Wall-clock budget (seconds) of each iterative solve above ``EXACT_MAX_N``
#: constraints: with the data set-up (1.6 s at 10^6 quadruplets) and the
#: final full certificate (about 3 s there), a large run stays within two
#: minutes.  A solver that needs more stops with status
#: ``time_limit_reached`` and its certified gap.
LARGE_SOLVER_SECONDS = 100.0


def bench_data(d, N, *, random_state=0):
    """Deterministic synthetic Qwise data: ``N`` class quadruplets in ``d`` dims.

    ``n = max(200, N // 10)`` points in 5 balanced Gaussian classes whose
    means differ in the first ``min(d, 10)`` coordinates (the rest is unit
    noise); quadruplets from :func:`~cvxmetric.quadruplets_from_labels`,
    margins 1, trace regulariser, ``C_q = 1``.

    Returns
    -------
    QwiseData
    """
    from ..constraints import Quadruplets
    from ..qwise._problem import QwiseData

    X, _, quads = _points(d, N, random_state)
    return QwiseData.from_sets(Quadruplets.create(X, quads, 1.0),
                               regularizer="trace", C_q=1.0)


def _points(d, N, random_state):
    """``(X, y, quadruplets)`` of :func:`bench_data`."""
    from ..constraints import quadruplets_from_labels

    n = max(200, N // 10)
    rng = np.random.RandomState(random_state)
    n_classes = 5
    y = np.arange(n) % n_classes
    k = min(d, 10)
    means = np.zeros((n_classes, d))
    means[:, :k] = rng.normal(scale=1.5, size=(n_classes, k))
    X = means[y] + rng.normal(size=(n, d))
    return X, y, quadruplets_from_labels(y, N, random_state=random_state)


def vector_bench_data(d, N, *, random_state=0):
    """Deterministic synthetic data of the smoothed vector model.

    The points and quadruplets of :func:`bench_data` (margins alternately 1
    and 0, as the temporal sets A and B of Sec. 5.1) plus ``N // 10``
    labelled pairs, ``psi="squared"``, ``loss="huber"``, ``h = 0.05``,
    ``C_q = C_p = 1``.

    Returns
    -------
    QwiseVectorData
    """
    from ..constraints import LabeledPairs, Quadruplets, pairs_from_labels
    from ..qwise_vector._problem import QwiseVectorData

    X, y, quads = _points(d, N, random_state)
    delta = (np.arange(N) % 2 == 0).astype(float)
    p, lab = pairs_from_labels(y, max(2, N // 10), random_state=random_state + 1)
    return QwiseVectorData.from_sets(
        Quadruplets.create(X, quads, delta), LabeledPairs.create(X, p, lab),
        psi="squared", loss="huber", h=0.05, C_q=1.0, C_p=1.0)


def structural_bench_data(d, N, *, random_state=0):
    """The points and quadruplets of :func:`bench_data` read as structural
    quadruplet queries (Eq. 16-17), trace regulariser, ``C = 1``.

    Returns
    -------
    StructuralData
    """
    from ..constraints import Quadruplets, informative
    from ..qwise_structural import StructuralData

    X, _, quads = _points(d, N, random_state)
    quads = quads[informative(X, quads)]
    return StructuralData.from_quadruplets(Quadruplets.create(X, quads, 1.0),
                                           regularizer="trace", C=1.0)


def bench_structural(n_quadruplets=100_000, d=50, random_state=0, *, n_samples=500,
                     n_classes=5, separation=0.5, C=1.0, regularizer="trace",
                     epsilon=None, maxiter=500, max_time=None, trace_memory=False):
    """Time the cutting-plane solver on Gaussian classes (quadruplet reading).

    ``n_samples`` points in ``d`` dimensions, ``n_classes`` balanced
    Gaussian classes (:func:`cvxmetric.collection.gaussian_classes`,
    standardised), ``n_quadruplets`` quadruplets from the labels
    (:func:`~cvxmetric.quadruplets_from_labels`).

    Parameters
    ----------
    trace_memory : bool
        Measure the peak of Python-tracked allocations (numpy arrays
        included) with ``tracemalloc`` during the solve (slows CVXPY's
        compilation); the process's peak resident set size is always
        reported.

    Returns
    -------
    dict
        ``time`` (solve, seconds), ``setup_time``, ``rounds``, ``n_cuts``,
        ``epsilon`` (the final stopping threshold), ``final_violation``,
        ``objective``, ``lower``, ``rel_gap``, ``status``, ``n_queries``,
        ``n_terms``, ``peak_rss_mb``, ``peak_traced_mb`` (``None`` unless
        ``trace_memory``), ``round_seconds`` (summed over rounds: master
        solve plus oracle), ``oracle_seconds`` (one oracle call).
    """
    import resource
    import tracemalloc

    from ..collection import gaussian_classes, standardize
    from ..constraints import Quadruplets, informative, quadruplets_from_labels
    from ..qwise_structural import StructuralCuttingPlane, StructuralData

    rng = np.random.RandomState(random_state)
    X, y = gaussian_classes(rng, n_samples, d, n_classes, separation)
    X = standardize(X)
    t0 = time.perf_counter()
    idx = quadruplets_from_labels(y, n_quadruplets, random_state=rng)
    idx = idx[informative(X, idx)]
    data = StructuralData.from_quadruplets(Quadruplets.create(X, idx, 1.0),
                                           regularizer=regularizer, C=C)
    setup = time.perf_counter() - t0
    solver = StructuralCuttingPlane(epsilon=epsilon, maxiter=maxiter, max_time=max_time)
    if trace_memory:
        tracemalloc.start()
    t1 = time.perf_counter()
    data.oracle(np.eye(d))
    t_oracle = time.perf_counter() - t1
    t1 = time.perf_counter()
    result = solver.run(data, warn=False)
    elapsed = time.perf_counter() - t1
    traced = None
    if trace_memory:
        traced = tracemalloc.get_traced_memory()[1] / 2 ** 20
        tracemalloc.stop()
    info = result.info
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB -> MB on Linux
    return {
        "n_quadruplets": int(len(idx)), "d": d, "n_samples": n_samples,
        "n_queries": data.n_queries, "n_terms": data.n_terms,
        "n_pairs": data.op.n_pairs, "setup_time": setup, "time": elapsed,
        "oracle_seconds": t_oracle,
        "round_seconds": float(sum(h["seconds"] for h in info["history"])),
        "rounds": info["rounds"], "n_cuts": info["n_cuts"],
        "epsilon": info["epsilon"], "final_violation": info["final_violation"],
        "objective": result.objective, "lower": info["lower"],
        "rel_gap": result.certificate.rel_gap, "status": result.status,
        "peak_rss_mb": rss, "peak_traced_mb": traced,
    }


def _model(method):
    return next(m for m, methods in MODEL_METHODS.items() if method in methods)


def _solve(method, data, subgradient_maxiter, max_time=None):
    from ..formulations import formulation
    from ..qwise import ProjectedSubgradient, QwiseDualSolver
    from ..qwise_structural import StructuralCuttingPlane, solve_structural_fast
    from ..qwise_vector import ProjectedNewton

    budget = {"max_time": max_time}
    if subgradient_maxiter:
        sub_kw = dict(budget, maxiter=int(subgradient_maxiter))
    else:
        sub_kw = budget
    solvers = {
        # the exact paths as the estimators run them (the registry's)
        "exact": lambda: formulation("qwise").solve_exact(data),
        "straightforward": lambda: formulation("qwise").solve_exact(data, reduce=False),
        "fast": lambda: QwiseDualSolver(**budget).run(data),
        "fast@1e-4": lambda: QwiseDualSolver(tol=1e-4, **budget).run(data),
        "subgradient": lambda: ProjectedSubgradient(**sub_kw).run(data),
        "vector-exact": lambda: formulation("qwise_vector").solve_exact(data),
        "newton": lambda: ProjectedNewton(**budget).run(data),
        "structural-exact": lambda: formulation("qwise_structural").solve_exact(data),
        "structural-fast": lambda: solve_structural_fast(data, **budget),
        "structural": lambda: StructuralCuttingPlane(**budget).run(data),
    }
    if method not in solvers:
        raise ValueError(f"method: unknown option {method!r}; expected one of "
                         f"{BENCH_METHODS}.")
    return solvers[method]()


def run_case(case):
    """Run one benchmark case in this process.

    Parameters
    ----------
    case : dict
        ``d``, ``N``, ``method``, ``seed`` and optionally
        ``subgradient_maxiter``.

    Returns
    -------
    dict
        ``objective``, ``cert_rel_gap``, ``seconds``, ``setup_seconds``,
        ``status``, ``n_iter``, ``n``, ``peak_mb``, ``base_mb``; or
        ``error`` when the solve raised.
    """
    t0 = time.perf_counter()
    model = _model(case["method"])
    make = {"matrix": bench_data, "vector": vector_bench_data,
            "structural": structural_bench_data}[model]
    data = make(case["d"], case["N"], random_state=case.get("seed", 0))
    out = {"setup_seconds": time.perf_counter() - t0,
           "n": max(200, case["N"] // 10),
           "base_mb": _max_rss_mb()}
    res = timed_solve(out, lambda: _solve(case["method"], data,
                                          case.get("subgradient_maxiter"),
                                          case.get("max_time")))
    if res is None:
        return out
    out.update(result_fields(res))
    for key in ("n_cuts", "epsilon"):
        if key in res.info:
            out[key] = float(res.info[key])
    return out


def _method_label(method, N, subgradient_maxiter):
    if method == "subgradient":
        if subgradient_maxiter:
            return f"subgradient(maxiter={subgradient_maxiter})"
        return "subgradient"
    return method


def run_bench(sizes=None, methods=BENCH_METHODS, *, seed=0,
              skip_straightforward=False, max_seconds=None, isolate=True,
              subgradient_maxiter=None, callback=None):
    """Run the benchmark.

    Parameters
    ----------
    sizes : sequence of (d, N), optional
        Every selected method at these sizes; default: each model's
        :data:`MODEL_SIZES`.
    methods : sequence of str
        Among :data:`BENCH_METHODS`.
    seed : int
        ``random_state`` of the data.
    skip_straightforward : bool
    max_seconds : float, optional
        Per-run limit (only with ``isolate``): the run's process is killed
        and the row reports a timeout.
    isolate : bool
        Run each case in its own process (own peak memory, killable).
    subgradient_maxiter : int, optional
        Default: the solver's default (above :data:`EXACT_MAX_N`
        constraints the time budget usually ends the run first).
    callback : callable, optional
        Called with each row as soon as it is done.

    Returns
    -------
    list of dict
        Rows with ``problem``, ``method``, ``d``, ``N``, ``n``, ``gap``,
        ``gap_kind`` ("vs exact" or "certified"), ``seconds``,
        ``speedup_exact`` and ``speedup_declared`` (the ``exact`` /
        ``straightforward`` run's seconds divided by this run's, ``None``
        without them), ``peak_mb``, ``base_mb``, ``status``, ``error``.  The
        yardstick of ``gap`` is described in the module docstring.
    """
    check_known("methods", methods, BENCH_METHODS)
    runs = Runs(__spec__.name, run_case, max_seconds=max_seconds, isolate=isolate,
                callback=callback)
    for model, model_methods in MODEL_METHODS.items():
        order = [m for m in model_methods if m in methods]
        if order:
            _run_model(runs, model, order, MODEL_SIZES[model] if sizes is None
                       else sizes, seed, skip_straightforward, subgradient_maxiter)
    return runs.rows


def _too_large(method, d, N):
    """Whether ``method`` is an exact solve beyond its size limit."""
    if method in ("exact", "straightforward", "structural-exact"):
        return N > EXACT_MAX_N
    return method == "vector-exact" and N * d > VECTOR_EXACT_MAX


def _run_model(runs, model, order, sizes, seed, skip_straightforward,
               subgradient_maxiter):
    """:func:`run_bench`'s rows of one model, added to ``runs``."""
    from .._tolerances import EXACT_GAP

    problem = {"matrix": "qwise-synthetic", "vector": "qwise-vector",
               "structural": "qwise-structural"}[model]
    for d, N in sizes:
        d, N = int(d), int(N)
        todo = [m for m in order if not _too_large(m, d, N)
                and not (m == "straightforward" and skip_straightforward)]
        sub_iter = subgradient_maxiter
        f_ref, reference = None, "exact"
        size_rows = []
        for method in todo:
            case = {"d": d, "N": N, "method": method, "seed": seed,
                    "subgradient_maxiter": sub_iter,
                    "max_time": LARGE_SOLVER_SECONDS if N > EXACT_MAX_N else None}
            logger.info("bench: d=%d N=%d %s", d, N, method)
            res = runs.run(case)
            row = bench_row(
                res, f_ref, problem=problem,
                method=_method_label(method, N,
                                     sub_iter if method == "subgradient" else None),
                d=d, N=N, n=res.get("n", max(200, N // 10)), reference=reference)
            for key in ("n_cuts", "epsilon"):
                if key in res:
                    row[key] = res[key]
            if f_ref is None and res.get("error") is None:
                if method in _EXACT_METHODS:
                    f_ref = res.get("objective")
                    row["gap"], row["gap_kind"] = 0.0, "vs exact"
                elif (method == "fast" and res.get("status") == "optimal"
                      and res.get("cert_rel_gap", np.inf) <= EXACT_GAP):
                    # no exact solve at this size: the certified fast
                    # optimum is the yardstick of the rows that follow
                    f_ref, reference = res.get("objective"), "fast"
            size_rows.append(runs.add(row))
        # speedups need the exact runs' seconds, so they follow the size's runs
        _add_speedups(model, size_rows)


def _add_speedups(model, size_rows):
    """``speedup_exact`` and ``speedup_declared`` of one size's rows: the
    model's exact (and the declared, ``straightforward``) run's seconds
    divided by each row's, ``None`` without them."""
    t_ref = {r["method"]: r["seconds"] for r in size_rows
             if r["method"] in _EXACT_METHODS and r["error"] is None}
    exact = {"vector": "vector-exact", "structural": "structural-exact"}.get(model,
                                                                          "exact")
    for row in size_rows:
        for key, ref in (("speedup_exact", exact),
                         ("speedup_declared", "straightforward")):
            ok = ref in t_ref and row["error"] is None and row["seconds"]
            row[key] = t_ref[ref] / row["seconds"] if ok else None


def parse_sizes(text):
    """Parse ``"20x1000,40x2000"`` (``1e5`` accepted) into ``[(d, N), ...]``."""
    out = []
    for item in text.split(","):
        item = item.strip().lower()
        if not item:
            continue
        try:
            d, N = item.split("x")
            out.append((int(float(d)), int(float(N))))
        except ValueError:
            raise ValueError(
                f"sizes: cannot read {item!r}; expected DxN, e.g. 20x1000 or "
                f"100x1e5."
            ) from None
    if not out:
        raise ValueError("sizes: no size given.")
    return out



if __name__ == "__main__":
    sys.exit(case_main(__spec__.name, run_case))

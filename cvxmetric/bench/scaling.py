"""The scaling benchmark: ``cvxmetric bench --scaling``.

For each family's default fast solver, the solve is timed at a small grid
of sizes (:data:`GRIDS`): along an ``N``-like axis (constraints, pairs,
queries or samples) at a fixed dimension, and along the dimension ``d`` at
a fixed ``N``.  Each run is its own interpreter
(:func:`cvxmetric.bench.run_isolated`, killed after ``max_seconds``) and
runs on ONE BLAS thread (:func:`cvxmetric._solver.forced_blas_threads`), so
that the numbers do not depend on how busy the machine's other cores are
and compare across machines.  Per axis the table reports the least-squares
slope of ``log(seconds)`` against ``log(size)`` (:func:`loglog_slope`):
the empirical exponent of the solver's cost along that axis, and whether
the seconds are monotone along it (:func:`monotone_seconds`: ``yes`` or
``no`` with each run's seconds over the previous run's).

Floor per iteration
-------------------
Each run also measures, once per process and on one BLAS thread, the
machine's DGEMM rate (GF/s: the best of a few ``(1000 x 1000) @ (1000 x
1000)`` products, :func:`dgemm_gflops`) and the time of
:func:`numpy.linalg.eigh` on a random symmetric matrix of the size an
iteration decomposes (best of a few, :func:`eigh_seconds`).  From them, the
time one iteration cannot go below with its dense linear algebra, per
family:

``qwise``
    ``eigh(d) + (2 P d r + 2 P d^2) / rate`` (:func:`qwise_floor`): one
    projection onto the PSD cone, the ``(P x d) @ (d x r)`` distances and
    the ``(d x P) @ (P x d)`` update of ``S``.  ``P`` is the number of pairs
    of the final working set (twice its quadruplets, at most the data's
    pairs), or every pair (``data.op.n_pairs``) without a working set;
    ``r`` the numerical rank of the solution (eigenvalues above ``1e-7``
    times the largest, :func:`numerical_rank`).
``mmc``
    ``eigh(r) + 2 n_D r^2 / rate`` (:func:`mmc_floor`): the projection in
    the whitened space of dimension ``r = data.psi.shape[1]`` and the
    distances of the ``n_D = data.psi.shape[0]`` dissimilar pairs.
``slr``
    ``((n_iter + 1) 2 n^2 r + products 2 n^2 r) / rate / n_iter``
    (:func:`slr_floor`): every pass over the pairs (one per Newton iteration
    plus the last) and every Hessian product (``res.info
    ["hessian_products"]``) runs over the upper half of the ``n x n`` pairs
    -- ``n^2 r / 2`` multiply-adds, ``n^2 r`` flops per GEMM, two GEMMs
    each -- with ``r = data.rank``.
``constraintdml``, ``rankdml``
    No floor model (reported as "-").

``s/iter`` is the run's seconds over its iterations and ``x floor`` is
``s/iter`` over the floor: how far an iteration is from the machine's dense
linear algebra (1 would be all BLAS at full single-thread speed).
"""

import functools
import sys
import time
import warnings

import numpy as np

from . import _fmt, _status_text, case_main, format_columns, run_isolated

__all__ = [
    "GRIDS",
    "SOLVERS",
    "RANK_RTOL",
    "grid_runs",
    "run_case",
    "run_scaling",
    "scaling_slopes",
    "monotone_seconds",
    "loglog_slope",
    "numerical_rank",
    "dgemm_gflops",
    "eigh_seconds",
    "qwise_floor",
    "mmc_floor",
    "slr_floor",
    "format_scaling",
]

#: ``family: {axis: (values, fixed sizes)}``: each axis varies one size
#: over ``values`` with the others at ``fixed``.  A run shared by two axes
#: (the same sizes) is run once.  Sizes: ``qwise`` ``d``, ``N``
#: (quadruplets); ``mmc`` ``n`` (samples), ``d``, ``pairs`` (similar +
#: dissimilar); ``constraintdml`` the same; ``rankdml`` ``d``,
#: ``n_queries`` (``20 n_queries`` triplets); ``slr`` ``n``, ``d``.
GRIDS = {
    "qwise": {"N": ((1_000, 10_000, 100_000), {"d": 50}),
              "d": ((25, 50, 100), {"N": 10_000})},
    "mmc": {"pairs": ((200, 800, 3_200), {"n": 2_000, "d": 100}),
            "d": ((50, 100, 200), {"n": 2_000, "pairs": 800})},
    "constraintdml": {"pairs": ((1_000, 4_000, 16_000), {"n": 1_000, "d": 50}),
                      "d": ((25, 50, 100), {"n": 1_000, "pairs": 4_000})},
    "rankdml": {"n_queries": ((250, 1_000, 4_000), {"d": 100}),
                "d": ((50, 100, 200), {"n_queries": 1_000})},
    "slr": {"n": ((1_000, 2_000, 4_000), {"d": 200}),
            "d": ((100, 200, 400), {"n": 2_000})},
}

#: The default fast solver timed per family.
SOLVERS = {
    "qwise": "QwiseDualSolver",
    "mmc": "MMCProjectedGradient",
    "constraintdml": "ConstraintDualSolver",
    "rankdml": "DiagonalInteriorPoint",
    "slr": "SemismoothNewton",
}

#: Eigenvalues above this times the largest count in :func:`numerical_rank`.
RANK_RTOL = 1e-7

# the DGEMM of the rate: large enough to run at the BLAS kernel's speed
# (2e9 flops, about 0.05-0.1 s on one core), small enough to repeat
_GEMM_N = 1000
_REPEAT = 3


def _check_family(family, name="family"):
    if family not in GRIDS:
        raise ValueError(f"{name}: unknown {family!r}; expected one of "
                         f"{', '.join(GRIDS)}.")


def _class_data(rng, n, d, n_classes):
    """``(X, y)``: balanced Gaussian classes whose means differ in the first
    ``min(d, 10)`` coordinates (the data of :mod:`cvxmetric.bench.contended`)."""
    y = np.arange(n) % n_classes
    k = min(d, 10)
    means = np.zeros((n_classes, d))
    means[:, :k] = rng.normal(scale=1.5, size=(n_classes, k))
    return means[y] + rng.normal(size=(n, d)), y


def _problem(family, sizes, seed):
    """``(solver, data)`` of ``family`` at ``sizes`` (see :data:`GRIDS`)."""
    rng = np.random.RandomState(seed)
    if family == "qwise":
        from ..qwise import QwiseDualSolver
        from .qwise import bench_data

        return QwiseDualSolver(), bench_data(int(sizes["d"]), int(sizes["N"]),
                                             random_state=seed)
    if family == "mmc":
        from ..constraints import pairs_from_labels
        from ..mmc import MMCData, MMCProjectedGradient

        X, y = _class_data(rng, int(sizes["n"]), int(sizes["d"]), 4)
        pairs, labels = pairs_from_labels(y, int(sizes["pairs"]), random_state=seed)
        return MMCProjectedGradient(), MMCData.create(X, pairs, labels)
    if family == "constraintdml":
        from ..constraintdml import ConstraintData, ConstraintDualSolver
        from ..constraints import pairs_from_labels

        X, y = _class_data(rng, int(sizes["n"]), int(sizes["d"]), 5)
        pairs, labels = pairs_from_labels(y, int(sizes["pairs"]), random_state=seed)
        return ConstraintDualSolver(), ConstraintData.from_pairs(X, pairs, labels,
                                                                 hard=False)
    if family == "rankdml":
        from ..rankdml.fast import DiagonalInteriorPoint
        from .rankdml import bench_data

        return DiagonalInteriorPoint(), bench_data(
            "laplacian", True, int(sizes["d"]), int(sizes["n_queries"]),
            random_state=seed)
    if family == "slr":
        from ..slr import SemismoothNewton, SLRData
        from .slr import make_synthetic_classes

        X, y = make_synthetic_classes(int(sizes["n"]), int(sizes["d"]),
                                      int(sizes.get("classes", 20)), random_state=seed)
        return SemismoothNewton(), SLRData.from_labels(X, y)
    _check_family(family)


# ---------------------------------------------------------------------------
# The machine's floor
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def dgemm_gflops(n=_GEMM_N, repeat=_REPEAT):
    """The single-thread DGEMM rate of this machine (GF/s): the best of
    ``repeat`` ``(n x n) @ (n x n)`` products on one BLAS thread.  Measured
    once per process."""
    from .._solver import forced_blas_threads

    rng = np.random.RandomState(0)
    A, B = rng.normal(size=(n, n)), rng.normal(size=(n, n))
    best = np.inf
    with forced_blas_threads(1):
        A @ B  # the first call pays the pool's and the pages' set-up
        for _ in range(repeat):
            t0 = time.perf_counter()
            A @ B
            best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best / 1e9


@functools.lru_cache(maxsize=None)
def eigh_seconds(d, repeat=_REPEAT):
    """Seconds of :func:`numpy.linalg.eigh` on a random symmetric ``d x d``
    matrix, the best of ``repeat`` on one BLAS thread (0 for ``d = 0``).
    Measured once per process and size."""
    from .._solver import forced_blas_threads

    d = int(d)
    if d <= 0:
        return 0.0
    rng = np.random.RandomState(0)
    A = rng.normal(size=(d, d))
    A = A + A.T
    best = np.inf
    with forced_blas_threads(1):
        np.linalg.eigh(A)  # warm-up, as in dgemm_gflops
        for _ in range(repeat):
            t0 = time.perf_counter()
            np.linalg.eigh(A)
            best = min(best, time.perf_counter() - t0)
    return best


def numerical_rank(M, rtol=RANK_RTOL):
    """Eigenvalues of the symmetric part of ``M`` above ``rtol`` times the
    largest (0 when none is positive)."""
    M = np.asarray(M, dtype=float)
    if M.ndim == 1:  # a diagonal metric
        w = M
    else:
        w = np.linalg.eigvalsh(0.5 * (M + M.T))
    top = float(np.max(w)) if w.size else 0.0
    return int(np.sum(w > rtol * top)) if top > 0 else 0


def qwise_floor(d, n_pairs, rank, gflops, eigh_s):
    """Seconds per Qwise iteration: ``eigh_s + (2 P d r + 2 P d^2) / rate``
    (``P = n_pairs``, ``r = rank``, ``rate = gflops`` GF/s, ``eigh_s`` the
    seconds of one ``d x d`` eigendecomposition)."""
    flops = 2.0 * n_pairs * d * rank + 2.0 * n_pairs * d ** 2
    return eigh_s + flops / (gflops * 1e9)


def mmc_floor(rank, n_dissimilar, gflops, eigh_s):
    """Seconds per MMC iteration: ``eigh_s + 2 n_D r^2 / rate`` (``r =
    rank``, the whitened dimension; ``eigh_s`` of an ``r x r`` matrix)."""
    return eigh_s + 2.0 * n_dissimilar * rank ** 2 / (gflops * 1e9)


def slr_floor(n, rank, n_iter, hessian_products, gflops):
    """Seconds per SLR Newton iteration: ``((n_iter + 1) 2 n^2 r +
    products 2 n^2 r) / rate / n_iter``; ``None`` without iterations."""
    if n_iter <= 0:
        return None
    per_pass = 2.0 * n ** 2 * rank  # two GEMMs of n^2 r / 2 multiply-adds
    flops = (n_iter + 1) * per_pass + hessian_products * per_pass
    return flops / (gflops * 1e9) / n_iter


def _floor(family, data, res):
    """``(seconds per iteration or None, its inputs)`` of one solve."""
    if family == "qwise":
        d = int(data.n_features)
        rounds = res.info.get("working_set_rounds") or []
        # unique pairs can be fewer than twice the quadruplets: cap by the data's
        P = (min(2 * int(rounds[-1]["size"]), int(data.op.n_pairs)) if rounds
             else int(data.op.n_pairs))
        r = numerical_rank(res.M)
        rate, eig = dgemm_gflops(), eigh_seconds(d)
        return qwise_floor(d, P, r, rate, eig), {"P": P, "r": r, "eigh_s": eig}
    if family == "mmc":
        n_D, r = (int(s) for s in data.psi.shape)
        if r == 0:  # degenerate data: no iteration to model
            return None, {"n_D": n_D, "r": r}
        rate, eig = dgemm_gflops(), eigh_seconds(r)
        return mmc_floor(r, n_D, rate, eig), {"n_D": n_D, "r": r, "eigh_s": eig}
    if family == "slr":
        n, r = int(data.n_samples), int(data.rank)
        products = int(res.info.get("hessian_products", 0) or 0)
        return (slr_floor(n, r, int(res.n_iter), products, dgemm_gflops()),
                {"n": n, "r": r, "hessian_products": products})
    return None, {}


# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------


def run_case(case):
    """Time one solve in this process, on one BLAS thread.

    Parameters
    ----------
    case : dict
        ``family``, ``sizes`` (a dict, see :data:`GRIDS`) and optionally
        ``seed``.

    Returns
    -------
    dict
        ``seconds``, ``n_iter``, ``status``, ``rel_gap`` (certified),
        ``gflops`` (this machine's single-thread DGEMM rate), ``floor``
        (seconds per iteration, ``None`` without a model) and
        ``floor_inputs``; ``error`` when building or solving raised.
    """
    from .._solver import forced_blas_threads

    family = case["family"]
    _check_family(family, "case['family']")
    try:
        solver, data = _problem(family, case["sizes"], case.get("seed", 0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the status word reports it
            with forced_blas_threads(1):
                t0 = time.perf_counter()
                res = solver.run(data)
                seconds = time.perf_counter() - t0
    except Exception as exc:  # a row, never a crash of the benchmark
        return {"error": f"{type(exc).__name__}: {exc}"}
    out = {"seconds": seconds, "n_iter": int(res.n_iter), "status": str(res.status),
           "rel_gap": float(res.certificate.rel_gap)}
    # measured after the solve: the solve's timing starts from the same
    # cold process in every run
    floor, inputs = _floor(family, data, res)
    out.update(gflops=dgemm_gflops(), floor=floor, floor_inputs=inputs)
    return out


def grid_runs(family, grids=None):
    """The distinct runs of ``family``'s grid, in order: a list of ``(sizes,
    axes)``, ``axes`` the grid axes the run belongs to."""
    grids = GRIDS if grids is None else grids
    if family not in grids:
        raise ValueError(f"families: unknown {family!r}; expected among "
                         f"{', '.join(grids)}.")
    runs, index = [], {}
    for axis, (values, fixed) in grids[family].items():
        for value in values:
            sizes = {**fixed, axis: value}
            key = tuple(sorted(sizes.items()))
            if key in index:
                runs[index[key]][1].append(axis)
            else:
                index[key] = len(runs)
                runs.append((sizes, [axis]))
    return runs


def _row(family, sizes, axes, out, max_seconds):
    row = {"family": family, "solver": SOLVERS.get(family, ""), "axes": list(axes),
           "sizes": dict(sizes), "seconds": out.get("seconds"),
           "n_iter": out.get("n_iter"), "s_per_iter": None,
           "floor": out.get("floor"), "x_floor": None, "rel_gap": out.get("rel_gap"),
           "gflops": out.get("gflops"), "floor_inputs": out.get("floor_inputs"),
           "status": out.get("status", ""), "error": out.get("error")}
    if row["error"] is not None:
        # a killed run took at least the budget: kept as a lower bound
        row["status"] = "timeout" if out.get("timeout") else "error"
        row["seconds"] = float(max_seconds) if out.get("timeout") else None
        return row
    if row["n_iter"]:
        row["s_per_iter"] = row["seconds"] / row["n_iter"]
        if row["floor"]:
            row["x_floor"] = row["s_per_iter"] / row["floor"]
    return row


def loglog_slope(sizes, seconds):
    """Least-squares slope of ``log(seconds)`` against ``log(sizes)``.

    Returns
    -------
    float or None
        ``None`` with fewer than two distinct positive sizes.
    """
    x = np.asarray(sizes, dtype=float)
    y = np.asarray(seconds, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"seconds: expected {x.size} values (one per size), "
                         f"got {y.size}.")
    ok = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
    if np.unique(x[ok]).size < 2:
        return None
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def scaling_slopes(rows, grids=None):
    """Per family and axis, the log-log slope of seconds against the axis'
    size over the runs that finished (errors and timeouts are left out).

    Returns
    -------
    list of dict
        ``family``, ``axis``, ``fixed`` (the other sizes), ``slope``
        (``None`` with fewer than two finished runs), ``runs`` (used).
    """
    grids = GRIDS if grids is None else grids
    out = []
    for family in dict.fromkeys(r["family"] for r in rows):
        for axis, (_, fixed) in grids[family].items():
            used = [r for r in rows if r["family"] == family and axis in r["axes"]
                    and r["error"] is None and r["seconds"]]
            out.append({"family": family, "axis": axis, "fixed": dict(fixed),
                        "slope": loglog_slope([r["sizes"][axis] for r in used],
                                              [r["seconds"] for r in used]),
                        "runs": len(used),
                        **monotone_seconds([r["sizes"][axis] for r in used],
                                           [r["seconds"] for r in used])})
    return out


def monotone_seconds(sizes, seconds):
    """Whether the seconds never fall as the size grows.

    A larger problem of the same generator should never be solved faster:
    a fall marks a size where the solver loses time (a slow start, a
    stage too many) that the larger size does not.

    Returns
    -------
    dict
        ``monotone``: ``True`` when the seconds, in increasing order of
        the sizes, never decrease (``None`` with fewer than two runs);
        ``ratios``: each run's seconds over the previous one's.
    """
    order = np.argsort(np.asarray(sizes, dtype=float), kind="stable")
    t = np.asarray(seconds, dtype=float)[order]
    ratios = [float(b / a) for a, b in zip(t[:-1], t[1:])]
    return {"monotone": bool(np.all(np.diff(t) >= 0)) if len(t) > 1 else None,
            "ratios": ratios}


def run_scaling(families=tuple(GRIDS), *, max_seconds=300.0, seed=0, grids=None,
                callback=None):
    """Time every family's fast solver over its size grid, one process and
    one BLAS thread per run.

    Parameters
    ----------
    families : sequence of str
        Among the keys of ``grids``.
    max_seconds : float
        A run's process is killed after this many seconds (reported as
        ``timeout``, its seconds the budget, left out of the slopes).
    seed : int
        ``random_state`` of the data.
    grids : dict, optional
        Default :data:`GRIDS` (same shape).
    callback : callable, optional
        Called with each run's row when it is done.

    Returns
    -------
    dict
        ``runs``: one row per run (``family``, ``solver``, ``axes``,
        ``sizes``, ``seconds``, ``n_iter``, ``s_per_iter``, ``floor``,
        ``x_floor``, ``rel_gap``, ``gflops``, ``floor_inputs``, ``status``,
        ``error``); ``slopes``: :func:`scaling_slopes` of the runs.
    """
    grids = GRIDS if grids is None else grids
    unknown = [f for f in families if f not in grids]
    if unknown:
        raise ValueError(f"families: unknown {unknown}; expected among "
                         f"{', '.join(grids)}.")
    if not max_seconds or max_seconds <= 0:
        raise ValueError(f"max_seconds: must be > 0, got {max_seconds!r}.")
    rows = []
    for family in families:
        for sizes, axes in grid_runs(family, grids):
            out = run_isolated({"family": family, "sizes": sizes, "seed": seed},
                               max_seconds, "cvxmetric.bench.scaling")
            row = _row(family, sizes, axes, out, max_seconds)
            rows.append(row)
            if callback is not None:
                callback(row)
    return {"runs": rows, "slopes": scaling_slopes(rows, grids)}


def _sizes_text(sizes):
    return " ".join(f"{k}={v:g}" for k, v in sizes.items())


def format_scaling(result):
    """The runs of :func:`run_scaling` as a text table, then the slopes."""
    headers = ["family", "solver", "axis", "sizes", "seconds", "iters", "s/iter",
               "floor s/iter", "x floor", "GF/s", "rel gap", "status"]
    body = []
    for r in result["runs"]:
        status = _status_text(r)
        body.append([r["family"], r["solver"], ",".join(r["axes"]),
                     _sizes_text(r["sizes"]), _fmt(r["seconds"], ".3g"),
                     _fmt(r["n_iter"], "d"), _fmt(r["s_per_iter"], ".2e"),
                     _fmt(r["floor"], ".2e"), _fmt(r["x_floor"], ".3g"),
                     _fmt(r["gflops"], ".1f"), _fmt(r["rel_gap"], ".1e"), status])
    slopes = [[s["family"], s["axis"], _sizes_text(s["fixed"]),
               _fmt(s["slope"], ".2f"), str(s["runs"]), _monotone_text(s)]
              for s in result["slopes"]]
    return (format_columns(headers, body) + "\n\n"
            + format_columns(["family", "axis", "at", "slope", "runs",
                              "monotone (ratios)"], slopes))


def _monotone_text(slope):
    """``yes (1.3, 2.1)`` / ``no (0.78, 4.9)``: :func:`monotone_seconds`."""
    mono = slope.get("monotone")
    if mono is None:
        return "-"
    ratios = ", ".join(f"{r:.2f}" for r in slope.get("ratios", ()))
    return f"{'yes' if mono else 'no'} ({ratios})"


if __name__ == "__main__":  # pragma: no cover - the child of run_isolated
    sys.exit(case_main("cvxmetric.bench.scaling", run_case))

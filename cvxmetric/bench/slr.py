"""Benchmark of SLR's scalable algorithms, synthetic data and mAP evaluation.

``cvxmetric bench --family slr`` runs :func:`run_bench`: two synthetic
problems shaped like the paper's data sets (:func:`make_synthetic_classes`,
rows of unit norm like L2-normalised image descriptors):

``caltech-like``
    ``n = 6000`` training samples (plus 2600 test queries), ``d = 1000``,
    100 classes (Caltech101: 8677 images, 70 % for training, PCA to 1000).
    Target: every method within 20 s.
``imagenet-like``
    ``n = 71000`` training samples (plus 1000 test queries), ``d = 1000``,
    50 classes (ImageNet50: 101 687 images, 70 % for training), with
    ``m = 20 000`` sampled columns and ``T = 5`` as in the paper (its
    "SLR-C-20k").  Target: within 5 minutes and 8 GiB.
``backends``
    ``n = 4000``, ``d = 200``, 20 classes: ``newton`` on NumPy and
    ``newton[dask]``, the same solver on a ``dask.array`` chunked by rows
    (4 chunks) on a ``distributed`` LocalCluster of 2 in-process workers
    (the ``[dask]`` extra; the cluster starts before the timed solve).

Methods (``method`` column; ``T`` iterations, rank ``r``, ``m`` sketch):

* ``euclid``: no learning; mAP of the Euclidean-distance ranking.
* ``slr-whole``: Eq. 3 on the Eq. 2 target (:func:`~.baselines.slr_whole`).
* ``slr-fixed(r)``: Algorithm 3, fixed target (:func:`~.baselines.slr_fixed`).
* ``slr(r)``: Algorithm 3, adaptive targets, no compression
  (:func:`~.lowrank.lowrank_slr`): the paper's SLR.
* ``slr-c-m(r)`` / ``slr-g-m(r)``: Algorithm 3 with column sampling /
  Gaussian projection of size ``m`` per half step (the paper's SLR-C-* and
  SLR-G-*).
* ``alg2-c-m`` / ``alg2-g-m``: Algorithm 2 (full-rank ``M``) with column
  sampling / Gaussian sketches (:func:`~.randomized.randomized_slr`).
* ``oasis(N)``: OASIS with ``N`` triplets (:func:`~.oasis.oasis`), float32.
* ``newton``: the default ``SLR()`` solver, :class:`~.fast.SemismoothNewton`
  (matrix-free CG at this size): the certified optimum of Eq. 4, the
  yardstick of the ``gap`` column (measured at ``n = 6000, d = 1000`` on
  the idle machine: 6 Newton iterations, 21 Hessian products, certified
  ``4.5e-12``, 19.6 s wall, 39 CPU seconds, peak 0.61 GB).

The pair passes of ``slr``, ``slr-c`` and ``alg2-*`` run in float32
(``dtype="float32"``: half the time, sums in float64).

Columns: ``objective`` is Eq. 4 (delta1 = 1, delta2 = 0) at the learned
``M`` over all ``n^2`` training pairs, computed after the timed solve (for
``n > 20000`` an unbiased estimate from 1000 random rows, ``gap_kind``
then says "estimate"); ``gap`` is ``(f - f_best) / max(1, f_best)`` against
the best objective of the same problem's rows (the ``newton`` row is the
certified optimum; the exact CVXPY path of :mod:`.exact` does not fit at
this size); ``map`` is the mean average
precision of the test queries ranking the training set (relevant = same
class); ``seconds`` is the solve's wall-clock time and ``cpu_seconds`` its
CPU time (all threads; on a shared machine the wall time also counts
waiting for a core); ``peak_mb`` / ``base_mb`` are the
run's process ``ru_maxrss`` at the end / after building the data (each
case runs in its own interpreter, as in :mod:`cvxmetric.bench`).
"""

import logging
import sys
import time
import warnings

import numpy as np
from sklearn.utils import check_random_state

from ..metrics import average_precision
from ..slr.randomized import _check_int
from . import (Runs, _fmt, _max_rss_mb, _status_text, case_main, check_known,
               format_columns)

__all__ = [
    "BENCH_PROBLEMS",
    "make_synthetic_classes",
    "train_test_split_indices",
    "retrieval_map",
    "run_case",
    "run_bench",
    "format_table",
    "text_table",
]

logger = logging.getLogger("cvxmetric")


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


def make_synthetic_classes(n, d, n_classes, random_state=None, *, n_signal=30,
                           n_nuisance=60, class_spread=1.0, within=1.0,
                           nuisance=1.5, noise=0.3):
    """Class-structured high-dimensional data with unit-norm rows.

    Each sample has ``n_signal`` latent coordinates ``mu_y + within * z``
    (class means ``mu_c ~ N(0, class_spread^2 I)``), ``n_nuisance`` latent
    coordinates of class-independent variance (scales decreasing linearly
    from ``nuisance`` to ``0.3 nuisance``: the directions a Euclidean
    ranking is distracted by), mapped into ``R^d`` by a random orthonormal
    map, plus isotropic noise ``noise^2 I_d``; rows are then scaled to unit
    norm (like L2-normalised descriptors, so the thresholds ``delta1 = 1``,
    ``delta2 = 0`` are on the scale of ``x_i^T x_j`` at ``M_0 = I``).
    Classes are balanced (sizes differ by at most one) and shuffled.

    Parameters
    ----------
    n, d, n_classes : int
        ``2 <= n_classes <= n``.
    random_state : int, RandomState or None
    n_signal, n_nuisance : int
        Latent dimensions (clipped so that their sum is at most ``d``).
    class_spread, within, nuisance, noise : float

    Returns
    -------
    X : ndarray of shape (n, d)
    y : ndarray of int, shape (n,)
    """
    n = _check_int(n, "n", 2)
    d = _check_int(d, "d", 1)
    n_classes = _check_int(n_classes, "n_classes", 2, n)
    rng = check_random_state(random_state)
    k_s = min(n_signal, d)
    k_n = min(n_nuisance, d - k_s)
    y = rng.permutation(np.arange(n) % n_classes)
    mu = class_spread * rng.standard_normal((n_classes, k_s))
    Z = np.empty((n, k_s + k_n))
    Z[:, :k_s] = mu[y] + within * rng.standard_normal((n, k_s))
    Z[:, k_s:] = rng.standard_normal((n, k_n)) * (
        nuisance * np.linspace(1.0, 0.3, k_n))
    Qm, _ = np.linalg.qr(rng.standard_normal((d, k_s + k_n)))  # (d, k)
    X = Z @ Qm.T
    X += noise * rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, y


def train_test_split_indices(n, test_fraction=0.3, random_state=None):
    """Random ``(train, test)`` index arrays (the paper's 70 / 30 split)."""
    n = _check_int(n, "n", 2)
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction: must be in (0, 1), got {test_fraction}.")
    perm = check_random_state(random_state).permutation(n)
    n_test = max(1, min(n - 1, int(round(test_fraction * n))))
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


# ---------------------------------------------------------------------------
# Evaluation: mAP of a ranking of the training set by each test query
# ---------------------------------------------------------------------------


def retrieval_map(X_train, y_train, X_test, y_test, M=None, *, factors=None,
                  kind="bilinear", chunk=256, max_queries=None,
                  random_state=None):
    """Mean average precision of retrieval, the paper's evaluation.

    Each test item queries the training set; the items of its class are
    relevant; the ranking is by ``x_q^T M x`` (``kind="bilinear"``, higher
    first) or by the Euclidean distance (``kind="euclidean"``, smaller
    first; ``M`` unused).  Scores are computed ``chunk`` queries at a time
    (``O(chunk n_train)`` memory) and the average precision of each query
    comes from :func:`cvxmetric.metrics.average_precision` (ties ranked
    pessimistically); queries without a relevant item are skipped.

    Parameters
    ----------
    X_train : ndarray of shape (n_train, d)
    y_train : ndarray of shape (n_train,)
    X_test : ndarray of shape (n_test, d)
    y_test : ndarray of shape (n_test,)
    M : ndarray of shape (d, d), optional
        Default the identity.
    factors : (L, R), optional
        ``M = L R^T`` without forming it.
    kind : {"bilinear", "euclidean"}
    chunk : int
    max_queries : int, optional
        Evaluate a random subset of this many test queries.
    random_state : int, RandomState or None
        The subset.

    Returns
    -------
    float
    """
    from .._validation import check_option

    check_option(kind, "kind", ("bilinear", "euclidean"))
    X_train = np.asarray(X_train, dtype=float)
    X_test = np.asarray(X_test, dtype=float)
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    if max_queries is not None and max_queries < len(y_test):
        sel = np.sort(check_random_state(random_state).choice(
            len(y_test), size=int(max_queries), replace=False))
        X_test, y_test = X_test[sel], y_test[sel]
    if kind == "euclidean":
        Qt, T = X_test, X_train
        sq = np.einsum("ij,ij->i", X_train, X_train)
    elif factors is not None:
        L, R = factors
        Qt, T = X_test @ L, X_train @ R
    else:
        Qt = X_test if M is None else X_test @ M
        T = X_train
    aps = []
    for s in range(0, len(y_test), int(chunk)):
        S = Qt[s:s + chunk] @ T.T  # (chunk, n_train)
        if kind == "euclidean":
            S = 2.0 * S - sq[None, :]  # -||q - x||^2 + ||q||^2
        rel = y_test[s:s + chunk, None] == y_train[None, :]
        aps.append(average_precision(S, rel))
    ap = np.concatenate(aps)
    if np.all(np.isnan(ap)):
        raise ValueError("y_test: no query has a relevant training item.")
    return float(np.nanmean(ap))


# ---------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------

#: Problems: data sizes and the methods run on them.
BENCH_PROBLEMS = {
    "caltech-like": {
        "n_train": 6000, "n_test": 2600, "d": 1000, "n_classes": 100,
        "methods": [
            {"method": "euclid"},
            {"method": "slr-whole"},
            {"method": "slr-fixed", "rank": 100, "n_iter": 10},
            {"method": "slr", "rank": 100, "n_iter": 10, "dtype": "float32"},
            {"method": "slr-c", "rank": 100, "n_iter": 10, "m": 2000,
             "dtype": "float32"},
            {"method": "alg2-c", "n_iter": 10, "m": 4000, "dtype": "float32"},
            {"method": "alg2-g", "n_iter": 3, "m": 2000, "dtype": "float32"},
            {"method": "oasis", "n_steps": 20000},
            {"method": "newton"},
        ],
    },
    "imagenet-like": {
        "n_train": 71000, "n_test": 1000, "d": 1000, "n_classes": 50,
        "methods": [
            {"method": "euclid"},
            {"method": "slr-whole"},
            {"method": "slr-fixed", "rank": 100, "n_iter": 5},
            {"method": "slr-c", "rank": 100, "n_iter": 5, "m": 20000,
             "dtype": "float32"},
            {"method": "alg2-c", "n_iter": 5, "m": 20000, "dtype": "float32"},
        ],
    },
    # the certified Newton method on NumPy and on a dask.array chunked by
    # rows (4 chunks) on a LocalCluster of 2 in-process workers (started
    # before the timed solve; the [dask] extra)
    "backends": {
        "n_train": 4000, "n_test": 400, "d": 200, "n_classes": 20,
        "methods": [
            {"method": "newton"},
            {"method": "newton", "backend": "dask"},
        ],
    },
}

#: Above this many training samples the row objective is a sampled estimate.
EXACT_OBJECTIVE_MAX_N = 20_000


def _label(spec):
    m, r = spec.get("m"), spec.get("rank")
    name = spec["method"]
    if name in ("slr-c", "slr-g"):
        return f"{name}-{m}(r={r},T={spec['n_iter']})"
    if name in ("slr", "slr-fixed"):
        return f"{name}(r={r},T={spec['n_iter']})"
    if name in ("alg2-c", "alg2-g"):
        return f"{name}-{m}(T={spec['n_iter']})"
    if name == "oasis":
        return f"oasis(N={spec['n_steps']})"
    if spec.get("backend"):
        return f"{name}[{spec['backend']}]"
    return name


_CLIENT = []


def _scheduler(spec):
    """A ``distributed`` client on a LocalCluster of 2 in-process workers for
    a ``backend: dask`` case (one per process, closed at exit), before the
    timed solve."""
    if spec.get("backend") != "dask" or _CLIENT:
        return
    import atexit

    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                           dashboard_address=None)
    _CLIENT.extend([Client(cluster), cluster])
    atexit.register(lambda: [c.close() for c in _CLIENT])


def _problem_data(problem, seed):
    p = BENCH_PROBLEMS[problem]
    X, y = make_synthetic_classes(p["n_train"] + p["n_test"], p["d"],
                                  p["n_classes"], random_state=seed)
    n = p["n_train"]
    return X[:n], y[:n], X[n:], y[n:]


def _solve(spec, X, y, seed):
    """Run one method; returns ``(M or None, factors or None, result or None)``."""
    from ..experiments.slr.baselines import slr_fixed, slr_whole
    from ..slr.lowrank import lowrank_slr
    from ..slr.oasis import oasis
    from ..slr.randomized import randomized_slr

    name = spec["method"]
    dtype = spec.get("dtype", "float64")
    # evaluate=False: the Eq. 4 pass is done by run_case, outside the timing
    if name == "euclid":
        return None, None, None
    if name == "slr-whole":
        res = slr_whole(X, y, evaluate=False)
        return res.M, None, res
    if name == "slr-fixed":
        res = slr_fixed(X, y, spec["rank"], n_iter=spec["n_iter"], evaluate=False,
                        random_state=seed)
        return None, (res.info["L"], res.info["R"]), res
    if name in ("slr", "slr-c", "slr-g"):
        kw = {}
        if name != "slr":
            kw = {"n_sketch": spec["m"],
                  "sketch": "columns" if name == "slr-c" else "gaussian"}
        res = lowrank_slr(X, y, spec["rank"], n_iter=spec["n_iter"], dtype=dtype,
                          evaluate=False, random_state=seed, **kw)
        return None, (res.info["L"], res.info["R"]), res
    if name in ("alg2-c", "alg2-g"):
        res = randomized_slr(X, y, spec["m"],
                             sketch="columns" if name == "alg2-c" else "gaussian",
                             n_iter=spec["n_iter"], dtype=dtype, evaluate=False,
                             random_state=seed)
        return None, (res.info["L"], res.info["R"]), res
    if name == "oasis":
        return oasis(X, y, spec["n_steps"], random_state=seed,
                     dtype=np.float32), None, None
    if name == "newton":
        from ..slr._problem import SLRData
        from ..slr.fast import SemismoothNewton

        if spec.get("backend") == "dask":
            import dask.array as da

            X = da.from_array(X, chunks=(-(-X.shape[0] // 4), X.shape[1]))
        res = SemismoothNewton().run(SLRData.from_labels(X, y))
        return res.M, None, res
    raise ValueError(f"method: unknown {name!r}.")


def run_case(case):
    """Run one benchmark case in this process.

    Parameters
    ----------
    case : dict
        ``problem`` (a key of :data:`BENCH_PROBLEMS`), ``spec`` (one of its
        method dicts), ``seed``, optionally ``blas_threads``.

    Returns
    -------
    dict
        ``seconds`` (solve only), ``objective`` (Eq. 4 at ``M``),
        ``objective_kind``, ``map``, ``map_seconds``, ``status``,
        ``n_iter``, ``n``, ``peak_mb``, ``base_mb``; or ``error``.
    """
    from ..slr.randomized import _objective_report

    threads = case.get("blas_threads")
    if threads is not None:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=int(threads), user_api="blas"):
            return run_case({k: v for k, v in case.items() if k != "blas_threads"})
    seed = int(case.get("seed", 0))
    spec = case["spec"]
    t0 = time.perf_counter()
    Xtr, ytr, Xte, yte = _problem_data(case["problem"], seed)
    _scheduler(spec)
    out = {"setup_seconds": time.perf_counter() - t0, "n": int(Xtr.shape[0]),
           "base_mb": _max_rss_mb()}
    t0 = time.perf_counter()
    c0 = time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            M, factors, res = _solve(spec, Xtr, ytr, seed)
    except Exception as exc:  # reported in the table, never a crash
        out.update(error=f"{type(exc).__name__}: {exc}",
                   seconds=time.perf_counter() - t0, peak_mb=_max_rss_mb())
        return out
    out["seconds"] = time.perf_counter() - t0
    # CPU seconds of all threads: on a shared machine wall time includes
    # waiting for a core
    out["cpu_seconds"] = time.process_time() - c0
    out["status"] = "ok" if res is None else str(res.status)
    out["n_iter"] = None if res is None else int(res.n_iter)
    out["peak_mb"] = _max_rss_mb()
    # evaluation, after the timed solve
    t0 = time.perf_counter()
    if spec["method"] == "euclid":
        out["map"] = retrieval_map(Xtr, ytr, Xte, yte, kind="euclidean")
    else:
        out["map"] = retrieval_map(Xtr, ytr, Xte, yte, M, factors=factors)
    out["map_seconds"] = time.perf_counter() - t0
    if spec["method"] != "euclid":
        codes = np.unique(ytr, return_inverse=True)[1]
        L, R = factors if factors is not None else (M, np.eye(M.shape[0]))
        t0 = time.perf_counter()
        f, info = _objective_report(Xtr, codes, L, R, 1.0, 0.0,
                                    objective_max_n=EXACT_OBJECTIVE_MAX_N,
                                    rng=check_random_state(seed))
        out["objective_seconds"] = time.perf_counter() - t0
        if np.isfinite(f):
            out["objective"], out["objective_kind"] = float(f), "exact"
        else:
            out["objective"] = info["objective_estimate"]
            out["objective_se"] = info["objective_estimate_se"]
            out["objective_kind"] = "estimate"
    return out


def run_bench(max_seconds=None, seed=0, callback=None, *,
              problems=tuple(BENCH_PROBLEMS), isolate=True, blas_threads=None):
    """Run the benchmark.

    Parameters
    ----------
    max_seconds : float, optional
        Per-case limit (isolated runs are killed and reported as timeouts).
    seed : int
        Data, split and algorithms' ``random_state``.
    callback : callable, optional
        Called with each row when it is done.
    problems : sequence of str
        Keys of :data:`BENCH_PROBLEMS` (default both; the second takes
        minutes).
    isolate : bool
        One process per case (own peak memory, killable).
    blas_threads : int, optional
        Limit BLAS threads in each case (default: the library's default).

    Returns
    -------
    list of dict
        Rows with ``problem``, ``method``, ``d``, ``N`` (training pairs
        ``n^2``), ``n``, ``objective``, ``gap``, ``gap_kind``, ``seconds``,
        ``peak_mb``, ``base_mb``, ``status``, ``n_iter``, ``error``, and
        ``map``, ``objective_kind``.
    """
    check_known("problems", problems, tuple(BENCH_PROBLEMS))
    runs = Runs(__spec__.name, run_case, max_seconds=max_seconds, isolate=isolate,
                callback=callback)
    for problem in problems:
        p = BENCH_PROBLEMS[problem]
        prow = []
        for spec in p["methods"]:
            case = {"problem": problem, "spec": spec, "seed": int(seed),
                    "blas_threads": blas_threads}
            logger.info("bench: %s %s", problem, _label(spec))
            res = runs.run(case)
            row = {
                "problem": problem, "method": _label(spec), "d": p["d"],
                "N": p["n_train"] ** 2, "n": p["n_train"],
                "objective": res.get("objective"), "gap": None, "gap_kind": "",
                "seconds": res.get("seconds"), "peak_mb": res.get("peak_mb"),
                "base_mb": res.get("base_mb"), "status": res.get("status", ""),
                "n_iter": res.get("n_iter"), "error": res.get("error"),
                "map": res.get("map"), "objective_kind": res.get("objective_kind"),
                "cpu_seconds": res.get("cpu_seconds"),
            }
            if row["error"] is not None:
                row["status"] = "timeout" if res.get("timeout") else "error"
            prow.append(runs.add(row))
        fs = [r["objective"] for r in prow if r["objective"] is not None]
        if fs:
            best = min(fs)
            for r in prow:
                if r["objective"] is not None:
                    r["gap"] = (r["objective"] - best) / max(1.0, abs(best))
                    r["gap_kind"] = ("vs best row" if r["objective_kind"] == "exact"
                                     else "vs best row (estimate)")
    return runs.rows


#: Left-aligned plain-text table of ``str`` cells (used by the examples).
text_table = format_columns


def format_table(rows):
    """Plain-text table of :func:`run_bench` rows (with the mAP column)."""
    headers = ["problem", "method", "n", "d", "Eq. 4", "gap", "gap kind", "mAP",
               "seconds", "cpu s", "peak MB", "base MB", "status"]
    body = []
    for r in rows:
        status = _status_text(r)
        body.append([
            r["problem"], r["method"], str(r["n"]), str(r["d"]),
            _fmt(r["objective"], ".4g"), _fmt(r["gap"], ".2e"),
            r["gap_kind"] or "-", _fmt(r.get("map"), ".3f"),
            _fmt(r["seconds"], ".2f"), _fmt(r.get("cpu_seconds"), ".2f"),
            _fmt(r["peak_mb"], ".0f"),
            _fmt(r["base_mb"], ".0f"), status,
        ])
    return format_columns(headers, body)


if __name__ == "__main__":
    sys.exit(case_main(__spec__.name, run_case))

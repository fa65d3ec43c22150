"""Benchmarks: the methods on the collection, and Qwise's scaling benchmark.

``cvxmetric bench`` (no option) times every method -- the certified exact
solve and each registered fast method -- on every instance of the problem
collection (:func:`run_collection_bench`, a few tens of seconds).

``cvxmetric bench --family qwise`` (or ``--sizes``) prints, for each size ``(d, N)`` and method, the
objective gap to the exact solution, the wall-clock time and the peak
memory.  Methods:

``exact``
    :func:`cvxmetric.qwise.solve_exact` (the default margin-set reduction).
``straightforward``
    ``solve_exact(data, reduce=False)``: the declared CVXPY model.
``fast``
    :class:`cvxmetric.qwise.QwiseDualSolver` with its default tolerance.
``fast@1e-4``
    The same with ``tol=1e-4``: the time to reach a ``1e-4`` relative
    duality gap.
``subgradient``
    :class:`cvxmetric.qwise.ProjectedSubgradient` (Algorithm 1).

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
cvxmetric.bench --case ...``) so that its peak resident memory
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
peak 1.0 GB); Algorithm 1 stops at the :data:`LARGE_SOLVER_SECONDS` budget
there (4.9e-3 above the fast optimum at 1e6, peak 1.6 GB).  Use
``--skip-straightforward`` to save the three minutes of the declared model
at (60, 2000).
"""

import json
import logging
import os
import resource
import subprocess
import sys
import time
import warnings

import numpy as np

__all__ = [
    "DEFAULT_SIZES",
    "EXACT_MAX_N",
    "BENCH_METHODS",
    "LARGE_SOLVER_SECONDS",
    "bench_data",
    "bench_row",
    "run_case",
    "run_bench",
    "format_columns",
    "format_table",
    "parse_sizes",
    "run_collection_bench",
    "format_collection_table",
]

logger = logging.getLogger("cvxmetric")

#: The sizes ``(d, N)`` of ``cvxmetric bench``.
DEFAULT_SIZES = ((20, 1000), (40, 2000), (60, 2000), (100, 100_000),
                 (100, 1_000_000))

#: Largest number of quadruplets with an exact (CVXPY) solve.
EXACT_MAX_N = 10_000

#: Every method, in run order (the exact solve first: it is the yardstick).
BENCH_METHODS = ("exact", "straightforward", "fast", "fast@1e-4", "subgradient")

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
    from .constraints import Quadruplets, quadruplets_from_labels
    from .qwise import QwiseData

    n = max(200, N // 10)
    rng = np.random.RandomState(random_state)
    n_classes = 5
    y = np.arange(n) % n_classes
    k = min(d, 10)
    means = np.zeros((n_classes, d))
    means[:, :k] = rng.normal(scale=1.5, size=(n_classes, k))
    X = means[y] + rng.normal(size=(n, d))
    quads = quadruplets_from_labels(y, N, random_state=random_state)
    return QwiseData.from_sets(Quadruplets.create(X, quads, 1.0),
                               regularizer="trace", C_q=1.0)


def _max_rss_mb():
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # kilobytes on Linux, bytes on macOS
    return rss / (1024.0 ** 2) if sys.platform == "darwin" else rss / 1024.0


def _solve(method, data, subgradient_maxiter, max_time=None):
    from .qwise import ProjectedSubgradient, QwiseDualSolver, solve_exact

    if method == "exact":
        return solve_exact(data)
    if method == "straightforward":
        return solve_exact(data, reduce=False)
    if method == "fast":
        return QwiseDualSolver(max_time=max_time).run(data)
    if method == "fast@1e-4":
        return QwiseDualSolver(tol=1e-4, max_time=max_time).run(data)
    if method == "subgradient":
        if subgradient_maxiter:
            return ProjectedSubgradient(maxiter=int(subgradient_maxiter),
                                        max_time=max_time).run(data)
        return ProjectedSubgradient(max_time=max_time).run(data)
    raise ValueError(f"method: unknown option {method!r}; expected one of "
                     f"{BENCH_METHODS}.")


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
    data = bench_data(case["d"], case["N"], random_state=case.get("seed", 0))
    out = {"setup_seconds": time.perf_counter() - t0, "n": int(data.X.shape[0]),
           "base_mb": _max_rss_mb()}
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the status word reports it
            res = _solve(case["method"], data, case.get("subgradient_maxiter"),
                         case.get("max_time"))
    except Exception as exc:  # reported in the table, never a crash
        out.update(error=f"{type(exc).__name__}: {exc}",
                   seconds=time.perf_counter() - t0, peak_mb=_max_rss_mb())
        return out
    out.update(
        seconds=time.perf_counter() - t0,
        objective=float(res.objective),
        cert_rel_gap=float(res.certificate.rel_gap),
        status=str(res.status),
        n_iter=int(res.n_iter),
        peak_mb=_max_rss_mb(),
    )
    return out


def run_isolated(case, max_seconds, module="cvxmetric.bench", preexec_fn=None):
    """``module``'s ``run_case`` in a fresh interpreter; JSON in, JSON out
    (no pickling).  ``module`` is run as ``python -m module --case JSON``
    (see :func:`case_main`); ``preexec_fn`` runs in the child before it
    starts (e.g. a memory limit).  A run killed after ``max_seconds`` or
    failing is reported as a dict with ``error``, never raised."""
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (pkg_parent, env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-m", module, "--case", json.dumps(case)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=max_seconds, preexec_fn=preexec_fn)
    except subprocess.TimeoutExpired:
        # subprocess.run has killed the child (and only it)
        return {"error": f"killed after {max_seconds:g} s", "timeout": True,
                "seconds": float(max_seconds)}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.strip().splitlines()[-3:]
        return {"error": f"exit code {proc.returncode}: {' | '.join(tail)}"}
    return json.loads(lines[-1])


def _run_isolated(case, max_seconds):
    return run_isolated(case, max_seconds)


def _method_label(method, N, subgradient_maxiter):
    if method == "subgradient":
        if subgradient_maxiter:
            return f"subgradient(maxiter={subgradient_maxiter})"
        return "subgradient"
    return method


def bench_row(res, f_exact, *, problem, method, d, N, n, relative_to_optimum=False,
              reference="exact"):
    """One benchmark table row from a run's result dict ``res``.

    ``gap`` is ``(f - f_exact) / max(1, |f_exact|)`` (with
    ``relative_to_optimum``: ``/ |f_exact|``, for optima far below 1) when an
    exact objective is known, else the run's own certified relative gap
    (``cert_rel_gap``); ``gap_kind`` says which ("vs <reference>" or
    "certified").  A failed or killed run gets status ``error`` /
    ``timeout``.
    """
    row = {
        "problem": problem, "method": method, "d": d, "N": N, "n": n,
        "objective": res.get("objective"), "gap": None, "gap_kind": "",
        "seconds": res.get("seconds"), "peak_mb": res.get("peak_mb"),
        "base_mb": res.get("base_mb"), "status": res.get("status", ""),
        "n_iter": res.get("n_iter"), "error": res.get("error"),
    }
    if row["error"] is not None:
        row["status"] = "timeout" if res.get("timeout") else "error"
        return row
    if f_exact is not None and not (relative_to_optimum and f_exact == 0):
        scale = abs(f_exact) if relative_to_optimum else max(1.0, abs(f_exact))
        row["gap"] = (row["objective"] - f_exact) / scale
        row["gap_kind"] = f"vs {reference}"
    else:
        row["gap"] = res.get("cert_rel_gap")
        row["gap_kind"] = "certified"
    row["status"] = row["status"] or "ok"
    return row


def run_bench(sizes=DEFAULT_SIZES, methods=BENCH_METHODS, *, seed=0,
              skip_straightforward=False, max_seconds=None, isolate=True,
              subgradient_maxiter=None, callback=None):
    """Run the benchmark.

    Parameters
    ----------
    sizes : sequence of (d, N)
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
    from ._tolerances import EXACT_GAP

    unknown = [m for m in methods if m not in BENCH_METHODS]
    if unknown:
        raise ValueError(f"methods: unknown {unknown}; expected among "
                         f"{BENCH_METHODS}.")
    if max_seconds is not None and not isolate:
        raise ValueError("max_seconds: needs isolate=True (a run in this process "
                         "cannot be stopped safely).")
    order = [m for m in BENCH_METHODS if m in methods]
    rows = []
    for d, N in sizes:
        d, N = int(d), int(N)
        todo = [m for m in order
                if not (m in ("exact", "straightforward") and N > EXACT_MAX_N)
                and not (m == "straightforward" and skip_straightforward)]
        sub_iter = subgradient_maxiter
        f_ref, reference = None, "exact"
        size_rows = []
        for method in todo:
            case = {"d": d, "N": N, "method": method, "seed": seed,
                    "subgradient_maxiter": sub_iter,
                    "max_time": LARGE_SOLVER_SECONDS if N > EXACT_MAX_N else None}
            logger.info("bench: d=%d N=%d %s", d, N, method)
            res = _run_isolated(case, max_seconds) if isolate else run_case(case)
            row = bench_row(
                res, f_ref, problem="qwise-synthetic",
                method=_method_label(method, N,
                                     sub_iter if method == "subgradient" else None),
                d=d, N=N, n=res.get("n", max(200, N // 10)), reference=reference)
            if f_ref is None and res.get("error") is None:
                if method in ("exact", "straightforward"):
                    f_ref = res.get("objective")
                    row["gap"], row["gap_kind"] = 0.0, "vs exact"
                elif (method == "fast" and res.get("status") == "optimal"
                      and res.get("cert_rel_gap", np.inf) <= EXACT_GAP):
                    # no exact solve at this size: the certified fast
                    # optimum is the yardstick of the rows that follow
                    f_ref, reference = res.get("objective"), "fast"
            size_rows.append(row)
            if callback is not None:
                callback(row)
        # speedups need the exact runs' seconds, so they follow the size's runs
        t_ref = {r["method"]: r["seconds"] for r in size_rows
                 if r["method"] in ("exact", "straightforward") and r["error"] is None}
        for row in size_rows:
            for key, ref in (("speedup_exact", "exact"),
                             ("speedup_declared", "straightforward")):
                ok = ref in t_ref and row["error"] is None and row["seconds"]
                row[key] = t_ref[ref] / row["seconds"] if ok else None
        rows.extend(size_rows)
    return rows


def _best_run(run, repeat):
    """``(result, seconds)``: ``run()`` ``repeat`` times, the fastest kept."""
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = run()
        seconds = time.perf_counter() - t0
        if best is None or seconds < best[1]:
            best = (res, seconds)
    return best


def run_collection_bench(root, family=None, methods=None, only=None, *, repeat=1,
                         callback=None):
    """Time the exact solve and every registered method on the collection.

    Each instance of ``problems/`` is solved in this process by ``exact``
    (the family's default certified exact path, ``FamilySpec.exact``) and by
    every fast method registered for its family
    (:data:`cvxmetric.collection.METHODS`) that applies to it.

    Parameters
    ----------
    root : str or Path
        Collection root.
    family : str, optional
        Only this family.
    methods : sequence of str, optional
        Only these methods (``"exact"`` and registered method names).
    only : sequence of str, optional
        Only these instances.
    repeat : int
        Runs per method; the fastest is reported.
    callback : callable, optional
        Called with each row when it is done.

    Returns
    -------
    list of dict
        Rows with ``family``, ``instance``, ``method``, ``n``, ``d``,
        ``seconds``, ``speedup_exact`` (this run's exact seconds divided by
        the row's), ``objective`` (recomputed from ``M`` by the family, as
        ``cvxmetric verify`` does), ``gap`` and ``gap_kind`` (``(f - f_ref)
        / max(1, |f_ref|)`` against the stored reference when it is current,
        "vs reference", else against this run's exact solve, "vs exact"),
        ``status`` and ``error``.
    """
    from . import collection as col

    if int(repeat) < 1:
        raise ValueError(f"repeat: must be >= 1, got {repeat!r}.")
    if methods:
        known = {"exact"}.union(*(set(m) for m in col.METHODS.values()))
        unknown = sorted(set(methods) - known)
        if unknown:
            raise ValueError(f"methods: unknown {unknown}; the collection's methods "
                             f"are {sorted(known)}.")
    rows = []
    for inst in col.iter_instances(root, family, only):
        spec = inst.spec
        names = ["exact"] + list(col.METHODS.get(inst.family, {}))
        if spec.applies is not None:
            names = [m for m in names
                     if m == "exact" or spec.applies(m, inst.hyperparameters)]
        if methods:
            names = [m for m in names if m in methods]
        status, ref = col.reference_status(root, inst)
        f_ref = ref.objective if status == "current" else None
        sizes = inst.sizes
        try:
            data = inst.to_data()
        except col.CollectionError as exc:
            data, setup_error = None, f"instance invalid: {exc}"
        inst_rows = []
        for method in names:
            row = {"family": inst.family, "instance": inst.name, "method": method,
                   "n": sizes.get("n"), "d": sizes.get("d"), "seconds": None,
                   "speedup_exact": None, "objective": None, "gap": None,
                   "gap_kind": "", "status": "", "error": None}
            if data is None:
                row.update(status="error", error=setup_error)
            else:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # the status word says it
                        if method == "exact":
                            res, seconds = _best_run(lambda: spec.exact(data), repeat)
                        else:
                            res, seconds = _best_run(
                                lambda: col.run_method(inst.family, method, data),
                                repeat)
                    M = np.asarray(res.M, dtype=float)
                    if spec.psd:
                        M = 0.5 * (M + M.T)
                    row.update(seconds=seconds, status=str(res.status),
                               objective=float(spec.objective(data, M)))
                except Exception as exc:  # a failed run is a row, not a crash
                    row.update(status="error", error=f"{type(exc).__name__}: {exc}")
            inst_rows.append(row)
            if f_ref is None and method == "exact" and row["error"] is None:
                f_ref, status = row["objective"], "exact"
            if row["objective"] is not None and f_ref is not None:
                row["gap"] = (row["objective"] - f_ref) / max(1.0, abs(f_ref))
                row["gap_kind"] = ("vs reference" if status == "current"
                                   else "vs exact")
            if callback is not None:
                callback(row)
        t_exact = next((r["seconds"] for r in inst_rows
                        if r["method"] == "exact" and r["error"] is None), None)
        for row in inst_rows:
            if t_exact is not None and row["seconds"]:
                row["speedup_exact"] = t_exact / row["seconds"]
        rows.extend(inst_rows)
    return rows


def format_collection_table(rows):
    """Plain-text table of :func:`run_collection_bench` rows."""
    headers = ["family", "instance", "method", "n", "d", "seconds", "x exact",
               "gap", "gap kind", "status"]
    body = []
    for r in rows:
        status = r["status"] if not r.get("error") else f"{r['status']}: {r['error']}"
        body.append([
            r["family"], r["instance"], r["method"], _fmt(r["n"], "d"),
            _fmt(r["d"], "d"), _fmt(r["seconds"], ".3f"),
            _fmt(r["speedup_exact"], ".2g"), _fmt(r["gap"], ".2e"),
            r["gap_kind"] or "-", status,
        ])
    return format_columns(headers, body)


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


def _fmt(x, spec):
    return "-" if x is None else format(x, spec)


def format_columns(headers, body):
    """Left-aligned text columns: a header line, a rule, then ``body`` (a
    list of rows of strings)."""
    widths = [max(len(h), *(len(b[k]) for b in body)) if body else len(h)
              for k, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)).rstrip() for b in body]
    return "\n".join(lines)


def format_table(rows):
    """Plain-text table of :func:`run_bench` rows."""
    headers = ["problem", "method", "d", "N", "n", "gap", "gap kind", "seconds",
               "x exact", "x declared", "peak MB", "base MB", "status"]
    body = []
    for r in rows:
        status = r["status"] if not r.get("error") else f"{r['status']}: {r['error']}"
        body.append([
            r["problem"], r["method"], str(r["d"]), str(r["N"]), str(r["n"]),
            _fmt(r["gap"], ".2e"), r["gap_kind"] or "-", _fmt(r["seconds"], ".2f"),
            _fmt(r.get("speedup_exact"), ".1f"), _fmt(r.get("speedup_declared"), ".1f"),
            _fmt(r["peak_mb"], ".0f"), _fmt(r["base_mb"], ".0f"), status,
        ])
    return format_columns(headers, body)


def case_main(module, run_case, argv=None):
    """Entry point of an isolated run, ``python -m module --case JSON``:
    ``run_case(case)`` as one JSON line on stdout (the parent reads the
    last line)."""
    import argparse

    parser = argparse.ArgumentParser(prog=f"python -m {module}")
    parser.add_argument("--case", required=True, help="JSON case description")
    args = parser.parse_args(argv)
    sys.stdout.write(json.dumps(run_case(json.loads(args.case))) + "\n")
    return 0


def _case_main(argv=None):
    return case_main("cvxmetric.bench", run_case, argv)


if __name__ == "__main__":
    sys.exit(_case_main())

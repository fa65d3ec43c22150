"""Benchmark helpers every family uses, and the collection benchmark.

``cvxmetric bench`` (no option) times every method -- the certified exact
solve and each registered fast method -- on every instance of the problem
collection (:func:`run_collection_bench`; 131 runs, about 30 s of CPU
time).

Each family's synthetic benchmark is a module of this package
(``cvxmetric/bench/<family>.py``, ``cvxmetric bench --family F``), as are
the real-data conformance suite (:mod:`cvxmetric.bench.conformance`) and
the threading and scaling benchmarks (:mod:`cvxmetric.bench.contended`,
:mod:`cvxmetric.bench.scaling`); none is loaded by ``import cvxmetric``.
They share the helpers here: :func:`run_isolated` runs a case in a fresh
interpreter (``python -m <module> --case JSON``, :func:`case_main`), so
that its peak resident memory (``ru_maxrss``) is its own and a run
exceeding its budget can be killed safely; :func:`bench_row` makes a
table row of a run's result and :func:`format_table` /
:func:`format_columns` print them.
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
    "Runs",
    "bench_row",
    "case_main",
    "check_known",
    "memory_limit",
    "result_fields",
    "run_isolated",
    "timed_solve",
    "run_cases",
    "format_columns",
    "format_table",
    "plan_collection_bench",
    "run_collection_bench",
    "format_collection_table",
]

logger = logging.getLogger("cvxmetric")

def _max_rss_mb():
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # kilobytes on Linux, bytes on macOS
    return rss / (1024.0 ** 2) if sys.platform == "darwin" else rss / 1024.0


def run_isolated(case, max_seconds, module, preexec_fn=None):
    """``module``'s ``run_case`` in a fresh interpreter; JSON in, JSON out
    (no pickling).  ``module`` is run as ``python -m module --case JSON``
    (see :func:`case_main`); ``preexec_fn`` runs in the child before it
    starts (e.g. a memory limit).  A run killed after ``max_seconds`` or
    failing is reported as a dict with ``error``, never raised."""
    # the directory holding the cvxmetric package (cvxmetric/bench/__init__.py)
    pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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


def check_known(name, given, known):
    """Refuse the items of ``given`` not in ``known``: a ``ValueError``
    naming the argument ``name``, the unknown items and the known ones."""
    unknown = [v for v in given or () if v not in known]
    if unknown:
        raise ValueError(f"{name}: unknown {unknown}; expected among {known}.")


def memory_limit(nbytes):
    """A ``preexec_fn`` of :func:`run_isolated` limiting the child's address
    space to ``nbytes`` (an out-of-memory then ends that run, not the
    machine); ``None`` when ``nbytes`` is ``None`` or 0 (no limit)."""
    if not nbytes:
        return None

    def limit():  # pragma: no cover - runs in the child
        try:
            resource.setrlimit(resource.RLIMIT_AS, (int(nbytes), int(nbytes)))
        except (ValueError, OSError):
            pass  # a platform without the limit runs unlimited

    return limit


class Runs:
    """The runs of one benchmark and the rows they make.

    Each case is run by ``run_case`` in a fresh interpreter
    (:func:`run_isolated` of ``module``, killed after ``max_seconds``) or,
    with ``isolate=False``, in this process; each row is kept in
    :attr:`rows` and handed to ``callback`` as soon as it is made.

    Parameters
    ----------
    module : str
        The module run as ``python -m module --case JSON``.
    run_case : callable
        ``run_case(case) -> dict``, the same function the child runs.
    max_seconds : float, optional
        Per-run wall-clock limit; needs ``isolate``.
    isolate : bool
    callback : callable, optional
    preexec_fn : callable, optional
        Run in each child before it starts (:func:`memory_limit`).

    Raises
    ------
    ValueError
        ``max_seconds`` without ``isolate`` (a run in this process cannot
        be stopped safely).
    """

    def __init__(self, module, run_case, *, max_seconds=None, isolate=True,
                 callback=None, preexec_fn=None):
        if max_seconds is not None and not isolate:
            raise ValueError("max_seconds: needs isolate=True (a run in this process "
                             "cannot be stopped safely).")
        self.module, self.run_case = module, run_case
        self.max_seconds, self.isolate = max_seconds, isolate
        self.callback, self.preexec_fn = callback, preexec_fn
        self.rows = []

    def run(self, case, max_seconds=...):
        """The result dict of ``case`` (a failed or killed run is a dict
        with ``error``); ``max_seconds`` overrides the limit of this run."""
        if not self.isolate:
            return self.run_case(case)
        limit = self.max_seconds if max_seconds is ... else max_seconds
        return run_isolated(case, limit, self.module, preexec_fn=self.preexec_fn)

    def add(self, row):
        """Keep ``row`` and report it; returns it."""
        self.rows.append(row)
        if self.callback is not None:
            self.callback(row)
        return row


def timed_solve(out, solve):
    """``solve()`` timed into ``out``, its warnings silenced (the status
    word reports them).

    Sets ``out["seconds"]`` and ``out["peak_mb"]``; when ``solve`` raises,
    also ``out["error"]`` (the exception's type and message: a row of the
    table, never a crash).

    Returns
    -------
    object or None
        What ``solve`` returned, ``None`` when it raised.
    """
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = solve()
    except Exception as exc:
        out.update(error=f"{type(exc).__name__}: {exc}",
                   seconds=time.perf_counter() - t0, peak_mb=_max_rss_mb())
        return None
    out.update(seconds=time.perf_counter() - t0, peak_mb=_max_rss_mb())
    return res


def result_fields(res):
    """The fields of a run's row read from its solver result: ``objective``,
    ``cert_rel_gap``, ``status``, ``n_iter``."""
    return {"objective": float(res.objective),
            "cert_rel_gap": float(res.certificate.rel_gap),
            "status": str(res.status), "n_iter": int(res.n_iter)}


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


def run_cases(module, run_case, cases, status, *, seed=0, max_seconds=None,
              callback=None, isolate=True, preexec_fn=None, pass_max_time=False,
              on_error=None):
    """The benchmark loop of the families whose cases are ``(problem,
    methods)``: one run per method (:class:`Runs`: in its own process
    unless ``isolate`` is false), each a :func:`bench_row` with the run's
    ``d``, ``N`` and ``n`` and, where the run raised nothing, the status
    ``status(problem, method, res)``; ``on_error(row)``, when given, may
    give the status of a row that carries an error (``None``: unchanged).
    ``pass_max_time``: the solvers get ``0.9 max_seconds`` as their own
    ``max_time``."""
    runs = Runs(module, run_case, max_seconds=max_seconds, isolate=isolate,
                callback=callback, preexec_fn=preexec_fn)
    for problem, methods in cases:
        for method in methods:
            case = {"problem": problem, "method": method, "seed": seed}
            if pass_max_time and max_seconds is not None:
                case["max_time"] = 0.9 * max_seconds
            res = runs.run(case)
            row = bench_row(res, None, problem=problem, method=method, d=res.get("d"),
                            N=res.get("N"), n=res.get("n"))
            text = (status(problem, method, res) if row["error"] is None
                    else on_error(row) if on_error is not None else None)
            if text is not None:
                row["status"] = text
            runs.add(row)
    return runs.rows


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


def plan_collection_bench(root, family=None, methods=None, only=None):
    """The runs :func:`run_collection_bench` makes, without running them.

    Parameters
    ----------
    root, family, methods, only
        As in :func:`run_collection_bench`.

    Returns
    -------
    list of (Instance, list of str)
        Each selected instance and its methods (``"exact"`` first);
        instances none of ``methods`` applies to are left out.

    Raises
    ------
    ValueError
        An unknown method name, or a selection without any run.
    """
    from .. import collection as col

    if methods is not None:
        methods = list(methods)
        known = {"exact"}.union(*(set(m) for m in col.METHODS.values()))
        unknown = sorted(set(methods) - known)
        if not methods:
            raise ValueError("methods: an empty list selects nothing.")
        if unknown:
            raise ValueError(f"methods: unknown {unknown}; the collection's methods "
                             f"are {sorted(known)}.")
    plan = []
    for inst in col.iter_instances(root, family, only):
        spec = inst.spec
        names = ["exact"] + list(col.METHODS.get(inst.family, {}))
        if spec.applies is not None:
            names = [m for m in names
                     if m == "exact" or spec.applies(m, inst.hyperparameters)]
        if methods is not None:
            names = [m for m in names if m in methods]
        if names:
            plan.append((inst, names))
    if not plan:
        raise ValueError(
            f"methods: no selected instance has method(s) {methods} (each "
            f"family's methods: "
            + "; ".join(f"{f}: {', '.join(['exact', *col.METHODS.get(f, {})])}"
                        for f in ([family] if isinstance(family, str) else
                                  family or sorted(col.FAMILIES)))
            + "); nothing to run.")
    return plan


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
    family : str or sequence of str, optional
        Only this family (these families).
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

    Raises
    ------
    ValueError
        ``repeat`` below 1, an unknown method, or a selection without any
        run (:func:`plan_collection_bench`).
    """
    from .. import collection as col

    if isinstance(repeat, bool) or int(repeat) != repeat or repeat < 1:
        raise ValueError(f"repeat: must be an integer >= 1, got {repeat!r}.")
    rows = []
    for inst, names in plan_collection_bench(root, family, methods, only):
        status, ref = col.reference_status(root, inst)
        f_ref = ref.objective if status == "current" else None
        try:
            data, setup_error = inst.to_data(), None
        except col.CollectionError as exc:
            data, setup_error = None, f"instance invalid: {exc}"
        inst_rows = []
        for method in names:
            row = _collection_row(inst, method, data, setup_error, repeat)
            inst_rows.append(row)
            if f_ref is None and method == "exact" and row["error"] is None:
                # no current reference: this run's exact solve is the yardstick
                f_ref, status = row["objective"], "exact"
            if row["objective"] is not None and f_ref is not None:
                row["gap"] = (row["objective"] - f_ref) / max(1.0, abs(f_ref))
                row["gap_kind"] = ("vs reference" if status == "current"
                                   else "vs exact")
            if callback is not None:
                callback(row)
        _add_speedups(inst_rows)
        rows.extend(inst_rows)
    return rows


def _add_speedups(inst_rows):
    """``speedup_exact`` of one instance's rows: its exact run's seconds
    divided by each row's (``None`` without a finished exact run)."""
    t_exact = next((r["seconds"] for r in inst_rows
                    if r["method"] == "exact" and r["error"] is None), None)
    for row in inst_rows:
        if t_exact is not None and row["seconds"]:
            row["speedup_exact"] = t_exact / row["seconds"]


def _collection_row(inst, method, data, setup_error, repeat):
    """One row of :func:`run_collection_bench` before its gap: ``method``
    run on ``inst``'s ``data`` (``None``: the instance is invalid, said by
    ``setup_error``), the fastest of ``repeat`` runs, its objective
    recomputed from ``M`` by the family."""
    from .. import collection as col

    spec, sizes = inst.spec, inst.sizes
    row = {"family": inst.family, "instance": inst.name, "method": method,
           "n": sizes.get("n"), "d": sizes.get("d"), "seconds": None,
           "speedup_exact": None, "objective": None, "gap": None,
           "gap_kind": "", "status": "", "error": None}
    if data is None:
        row.update(status="error", error=setup_error)
        return row
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the status word says it
            if method == "exact":
                res, seconds = _best_run(lambda: spec.exact(data), repeat)
            else:
                res, seconds = _best_run(
                    lambda: col.run_method(inst.family, method, data), repeat)
        M = np.asarray(res.M, dtype=float)
        if spec.psd:
            M = 0.5 * (M + M.T)
        row.update(seconds=seconds, status=str(res.status),
                   objective=float(spec.objective(data, M)))
    except Exception as exc:  # a failed run is a row, not a crash
        row.update(status="error", error=f"{type(exc).__name__}: {exc}")
    return row


def format_collection_table(rows):
    """Plain-text table of :func:`run_collection_bench` rows."""
    headers = ["family", "instance", "method", "n", "d", "seconds", "x exact",
               "gap", "gap kind", "status"]
    body = []
    for r in rows:
        status = _status_text(r)
        body.append([
            r["family"], r["instance"], r["method"], _fmt(r["n"], "d"),
            _fmt(r["d"], "d"), _fmt(r["seconds"], ".3f"),
            _fmt(r["speedup_exact"], ".2g"), _fmt(r["gap"], ".2e"),
            r["gap_kind"] or "-", status,
        ])
    return format_columns(headers, body)


def _fmt(x, spec):
    return "-" if x is None else format(x, spec)


def _status_text(row):
    """A row's status word, with its error when the run failed."""
    return f"{row['status']}: {row['error']}" if row.get("error") else row["status"]


def format_columns(headers, body):
    """Left-aligned text columns: a header line, a rule, then ``body`` (a
    list of rows; each cell printed as ``str(cell)``)."""
    body = [[str(c) for c in b] for b in body]
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
        status = _status_text(r)
        if r.get("n_cuts") is not None:  # the cutting-plane method's record
            status += f" ({r['n_cuts']:.0f} cuts, epsilon {r['epsilon']:.1e})"
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



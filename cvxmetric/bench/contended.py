"""The threading benchmark: ``cvxmetric bench --contended``.

For each family's default fast solver, on one problem of a few seconds,
and for one whole estimator fit (``mmc-fit``: ``MMC(solver="fast")`` from
the samples and pair indices, so that data preparation -- whitening,
Gram products, the threshold's calibration -- is timed with the solve),
the run is timed three ways in the same run: under the package's BLAS
policy (:func:`cvxmetric._solver.blas_threads`), forced to one BLAS thread
and forced to every thread (:func:`~cvxmetric._solver.forced_blas_threads`)
-- first on the idle machine, then next to a CPU-bound neighbour process
(a busy loop in another interpreter), the situation of a CI job, a second
user or ``GridSearchCV(n_jobs=2)``.  ``ratio`` is the policy's time over
the best of the two forced ones: 1 means the policy picked the faster
setting, the target is at most 1.1 in both conditions.

Each solve runs in its own interpreter (:func:`cvxmetric.bench.run_isolated`),
so no thread pool or cache carries over, and is killed after
``max_seconds`` (its time is then reported as that budget, a lower bound).
"""

import os
import subprocess
import sys
import time
import warnings

import numpy as np

from . import case_main, format_columns, run_isolated

__all__ = ["CASES", "THREADS", "run_case", "run_contended", "format_contended"]

#: ``family: (solver, problem)`` of the benchmark (sizes where a solve
#: takes seconds and threads could matter).
CASES = {
    "qwise": ("QwiseDualSolver", "d = 100, N = 10 000 quadruplets"),
    "mmc": ("MMCProjectedGradient", "d = 300, 400 + 400 pairs of 2 000 samples"),
    "constraintdml": ("ConstraintDualSolver", "d = 100, 5 000 soft pairs"),
    "rankdml": ("DiagonalInteriorPoint", "d = 272 diagonal, 20 000 triplets"),
    "slr": ("SemismoothNewton", "n = 3 000, d = 500, 50 classes"),
    "mmc-fit": ("MMC.fit", "600 x 120 samples, 800 pairs, whole fit"),
}

#: The three settings timed per family and condition.
THREADS = ("policy", 1, "all")

_NEIGHBOUR = "while True: pass"


#: The sizes of each family's case, in :func:`cvxmetric.bench.scaling`'s terms.
SIZES = {
    "qwise": {"d": 100, "N": 10_000},
    "mmc": {"n": 2000, "d": 300, "pairs": 800},
    "constraintdml": {"n": 1000, "d": 100, "pairs": 5000},
    "rankdml": {"d": 272, "n_queries": 1000},
    "slr": {"n": 3000, "d": 500, "classes": 50},
    "mmc-fit": {"n": 600, "d": 120, "pairs": 800},
}

#: Cases that time an estimator's whole ``fit`` rather than a solver's run.
FIT_CASES = ("mmc-fit",)


def _fit_case(family, seed):
    """A callable running ``family``'s estimator fit (a FIT_CASES entry):
    Gaussian classes whose means differ in the first 10 features."""
    from ..constraints import pairs_from_labels
    from ..mmc.estimator import MMC

    size = SIZES[family]
    rng = np.random.RandomState(seed)
    n_classes = 4
    y = np.arange(size["n"]) % n_classes
    means = np.zeros((n_classes, size["d"]))
    means[:, :10] = rng.normal(scale=1.5, size=(n_classes, 10))
    X = means[y] + rng.normal(size=(size["n"], size["d"]))
    pairs, labels = pairs_from_labels(y, size["pairs"], random_state=seed)
    return lambda: MMC(solver="fast", preprocessor=X).fit(pairs, labels)


def _problem(family, seed):
    """``(solver, data)`` of ``family``'s case (the scaling benchmark's
    generators at :data:`SIZES`)."""
    from .scaling import _problem as scaled_problem

    if family not in CASES:
        raise ValueError(f"family: unknown {family!r}; expected one of "
                         f"{sorted(CASES)}.")
    return scaled_problem(family, SIZES[family], seed)


def run_case(case):
    """Time one solve in this process: ``family``, ``threads`` (one of
    :data:`THREADS`), ``seed``."""
    from .._solver import forced_blas_threads

    family, seed = case["family"], case.get("seed", 0)
    if family in FIT_CASES:
        fit = _fit_case(family, seed)
        run = lambda: fit().result_  # noqa: E731
    else:
        solver, data = _problem(family, seed)
        run = lambda: solver.run(data)  # noqa: E731
    threads = case["threads"]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the status word reports it
        if threads == "policy":
            res = run()
        else:
            n = (os.cpu_count() or 1) if threads == "all" else int(threads)
            with forced_blas_threads(n):
                res = run()
    return {"seconds": time.perf_counter() - t0, "status": str(res.status),
            "rel_gap": float(res.certificate.rel_gap), "n_iter": int(res.n_iter)}


def run_contended(families=tuple(CASES), *, max_seconds=300.0, seed=0,
                  conditions=("idle", "contended"), repeat=1, callback=None):
    """Time every family's fast solver under the policy and forced thread
    counts, idle and next to a CPU-bound neighbour.

    Parameters
    ----------
    repeat : int
        Runs per setting, the fastest kept (two identical settings differ
        by up to 15 % on a loaded 2-core machine).

    Returns
    -------
    list of dict
        One row per family and condition: ``family``, ``solver``,
        ``problem``, ``condition``, ``policy`` / ``one`` / ``all`` (seconds,
        ``max_seconds`` for a run that was killed), ``ratio`` (policy over
        the best forced time), ``status`` (of the policy's run; ``error``
        when any of the row's runs raised), ``error`` (their messages, or
        ``None``).
    """
    rows = []
    for condition in conditions:
        neighbour = None
        if condition == "contended":
            neighbour = subprocess.Popen([sys.executable, "-c", _NEIGHBOUR])
            time.sleep(1.0)  # let it occupy a core (and the load sample see it)
        try:
            for family in families:
                times, status, errors = {}, None, []
                for _ in range(repeat):
                    # interleaved, so that a change of load hits all three
                    for threads in THREADS:
                        out = run_isolated({"family": family, "threads": threads,
                                            "seed": seed}, max_seconds,
                                           "cvxmetric.bench.contended")
                        t = float(out.get("seconds", max_seconds))
                        times[threads] = min(times.get(threads, np.inf), t)
                        if out.get("error") is not None and not out.get("timeout"):
                            errors.append(f"{threads}: {out['error']}")
                        if threads == "policy":
                            status = out.get("status") or out.get("error")
                best = min(times[1], times["all"])
                row = {"family": family, "solver": CASES[family][0],
                       "problem": CASES[family][1], "condition": condition,
                       "policy": times["policy"], "one": times[1],
                       "all": times["all"], "ratio": times["policy"] / best,
                       "status": "error" if errors else status,
                       "error": "; ".join(errors) if errors else None}
                rows.append(row)
                if callback is not None:
                    callback(row)
        finally:
            if neighbour is not None:
                neighbour.kill()
                neighbour.wait()
    return rows


def format_contended(rows):
    """The rows as a text table."""
    headers = ["family", "solver", "problem", "condition", "policy s", "1 thread s",
               "all threads s", "ratio", "status"]
    body = [[r["family"], r["solver"], r["problem"], r["condition"],
             f"{r['policy']:.2f}", f"{r['one']:.2f}", f"{r['all']:.2f}",
             f"{r['ratio']:.2f}", r["status"]] for r in rows]
    return format_columns(headers, body)


if __name__ == "__main__":  # pragma: no cover - the child of run_isolated
    sys.exit(case_main("cvxmetric.bench.contended", run_case))

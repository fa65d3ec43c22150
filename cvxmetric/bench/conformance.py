"""Real-data conformance suite: every estimator and solver on scikit-learn's data.

``cvxmetric bench --suite real`` fits every estimator of the families of
:data:`FAMILIES` with every solver option, at default settings, on
scikit-learn's bundled iris, wine, breast_cancer and digits (and digits
reduced to 30 dimensions by PCA), over several seeds, with constraints
generated as a user would:

* the supervised estimators (``QwiseSupervised``, ``QwiseVectorSupervised``,
  ``QwiseStructuralSupervised``, ``MMCSupervised``,
  ``ConstraintDMLSupervised``, ``RankDMLSupervised``, ``SLR``,
  ``LDMLSupervised`` -- every pair of samples) with their own default
  constraint generation;
* ``OMDML`` on the dataset's features scaled to [0, 1] (the paper's
  protocol) and split into (at most) three contiguous groups, its views,
  with :data:`N_TUPLES` triplets;
* the pair learners (``MMC``, ``ConstraintDML``, ``LDML``) on metric-learn's
  ``20 * n_classes^2`` pairs from :func:`~cvxmetric.pairs_from_labels`;
* the tuple learners (``Qwise``, ``QwiseVector`` -- with metric-learn's
  pairs too --, ``QwiseStructural``, ``RankDML``) on :data:`N_TUPLES` (by
  default) quadruplets / triplets from
  :func:`~cvxmetric.quadruplets_from_labels` /
  :func:`~cvxmetric.triplets_from_labels`.

Seed ``s`` selects the training part of fold ``s % 5`` of a stratified
5-fold split (shuffled with ``random_state = s // 5``); the
``StandardScaler`` (and the PCA) is fitted on that part only, and ``s`` is
the ``random_state`` of the constraint sampling and of the estimator.

Each case (dataset, seed, estimator, method) runs in its own process
(:func:`cvxmetric.bench.run_isolated`) under a wall-clock budget and an
address-space limit, so that a hang or an out-of-memory is a row of the
table, not a stuck run.  Every row is judged by its method's *role*:

``exact``
    The certified CVXPY path: **certified** when ``status_ == "optimal"``
    and ``certificate_.passed`` (or the problem is proven to have no
    solution: a cannot-link joining identical points makes the
    constraint-based problem infeasible).
``fast``
    A solver that claims the optimum of the same problem: **converged**
    when ``status_ == "optimal"``; **agreeing** when its gap to the exact
    optimum is within :func:`~cvxmetric._tolerances.tolerance`; not
    **slower than exact** (the fit takes no longer than the exact fit).
``paper``
    A paper's algorithm run with its default, fixed budget (Qwise's
    Algorithm 1, SLR's Algorithm 1 with ``T = 10``, the randomized and
    low-rank SLR variants): its gap to the exact optimum is reported, not
    judged (a fixed budget does not reach a stated accuracy on every
    dataset); it fails only when it raises or is killed.
``paper-optimal``
    A paper's algorithm that claims the certified optimum at its default
    settings (LDML's low-rank gradient method at full rank): **converged**
    and **agreeing** as a ``fast`` method; its time is not judged.

A family whose exact problem may have no solution (LDML at ``lam = 0`` on
pairs a metric separates: the maximum likelihood is not attained) answers
with a certified refusal, :class:`~cvxmetric.result.NotAttainedError`
(:data:`REFUSALS`): the refusal counts as certified / converged when the
exact and the fast method both refuse, and fails both rows when one of them
refuses and the other returns a solution.

The gap is each family's: ``(f - f*) / max(1, |f*|)``, except MMC, whose
optimum is far below 1 and whose gap is relative to the scale-free value
itself, ``(r - r*) / r*`` (docs/mmc/formulation.md).  Run from Python::

    from cvxmetric.bench.conformance import run_suite, format_table, summarize
    rows = run_suite(datasets=["iris"], seeds=[0], families=["mmc"])
    print(format_table(rows)); print(summarize(rows)["line"])
"""

import json
import os
import sys
import time
import warnings

import numpy as np

from ..formulations import catalogued, formulation, formulations
from . import (Runs, _fmt, _max_rss_mb, case_main, check_known, format_columns,
               memory_limit)

__all__ = [
    "CASE_MEMORY_MB",
    "CASE_SECONDS",
    "DATASETS",
    "DEFAULT_SEEDS",
    "FAMILIES",  # noqa: F822 - module __getattr__
    "METHODS",  # noqa: F822
    "N_TUPLES",
    "REFUSALS",  # noqa: F822
    "SLOWER_MARGIN",
    "cases",
    "failures",
    "format_table",
    "judge",
    "load_dataset",
    "run_case",
    "run_suite",
    "summarize",
]

#: Datasets: scikit-learn's bundled sets, standardised; ``digits-pca30``
#: is digits reduced to 30 dimensions by PCA (iris, wine and breast_cancer
#: have at most 30 features already).
DATASETS = ("iris", "wine", "breast_cancer", "digits", "digits-pca30")

def _suite():
    """The registry's formulations the suite runs, by name, read at call
    time (a formulation registered by a script is one of them)."""
    return {f.name: f for f in formulations() if f.suite}


def _families():
    """Family -> estimator names (tuple / pair learner first, then the
    supervised one)."""
    return {n: tuple(f.suite_data) for n, f in _suite().items()}


def _methods():
    """Family -> methods: ``name: (estimator parameters, role, reference
    method, tolerance key)`` (a method's reference listed before it).  A
    parameter whose value is a function is computed per case as
    ``value(X, fit_args, seed)``.  ``tolerance key`` is the method name
    looked up by :func:`~cvxmetric._tolerances.tolerance` (``None``: gap
    reported only)."""
    return {n: {m.name: (dict(m.params), m.role, m.reference, m.tolerance)
                for m in f.methods} for n, f in _suite().items()}


def _refusals():
    """Family -> ``(error, {method: partner})``: methods whose certified
    answer may be a refusal (:attr:`cvxmetric.formulations.Formulation.refusal`).
    A refusal is judged correct when the partner method refused too, and
    fails both rows when one refuses and the other returns a solution (or
    when the partner's answer is missing)."""
    return {n: f.refusal for n, f in _suite().items() if f.refusal}


_TABLES = {"FAMILIES": _families, "METHODS": _methods, "REFUSALS": _refusals}


def __getattr__(name):
    # FAMILIES, METHODS, REFUSALS: the registry's tables as of this access
    if name in _TABLES:
        return _TABLES[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Triplets (RankDML) / quadruplets (Qwise) given to the tuple learners.
N_TUPLES = 2000

#: Seeds of the full suite (the five folds of one shuffled split).
DEFAULT_SEEDS = (0, 1, 2, 3, 4)

#: Per-case wall-clock budget (seconds) of the full suite.
CASE_SECONDS = 120.0

#: A fit counts as slower than the exact fit of the same constraints when
#: it takes more than this many seconds longer (timing noise of a process
#: on a shared machine; both fits are timed in their own process).
SLOWER_MARGIN = 0.5

#: Per-case address-space limit (MiB): an out-of-memory is an error row.
CASE_MEMORY_MB = 4096


# ---------------------------------------------------------------------------
# Data and one case (runs in the child process)
# ---------------------------------------------------------------------------


def load_dataset(name, seed):
    """The standardised training part of ``name`` for ``seed``.

    Fold ``seed % 5`` of a stratified 5-fold split shuffled with
    ``random_state = seed // 5``: its training part (80 %), standardised
    (and, for ``digits-pca30``, reduced by PCA) with transforms fitted on
    that part only.

    Returns
    -------
    X : ndarray of shape (n_train, d)
    y : ndarray of shape (n_train,)
    """
    from sklearn import datasets
    from sklearn.decomposition import PCA
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    loaders = {"iris": datasets.load_iris, "wine": datasets.load_wine,
               "breast_cancer": datasets.load_breast_cancer,
               "digits": datasets.load_digits, "digits-pca30": datasets.load_digits}
    if name not in loaders:
        raise ValueError(f"dataset: unknown {name!r}; expected one of {DATASETS}.")
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"seed: must be >= 0, got {seed}.")
    X, y = loaders[name](return_X_y=True)
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=seed // 5)
    train, _ = list(folds.split(X, y))[seed % 5]
    X, y = X[train], y[train]
    X = StandardScaler().fit_transform(X)
    if name.endswith("-pca30"):
        X = PCA(n_components=30, random_state=seed).fit_transform(X)
    return np.ascontiguousarray(X, dtype=np.float64), y


def _fit_args(family, estimator, X, y, seed, n_tuples):
    """``(kwargs for the constructor, fit args, n_constraints, fit keyword
    args)`` for a user's constraints, as the registry states them
    (:attr:`~cvxmetric.formulations.Formulation.suite_data`): the
    supervised defaults, metric-learn's ``20 C^2`` pairs, ``n_tuples``
    triplets / quadruplets."""
    return formulation(family).suite_data[estimator](X, y, seed, n_tuples)


def _cannot_link_identical(X, args):
    """True when a cannot-link (label -1) joins two identical points."""
    if len(args) != 2 or np.ndim(args[0]) != 2 or np.shape(args[0])[1:] != (2,):
        return False
    p, lab = np.asarray(args[0]), np.asarray(args[1])
    dl = p[lab == -1]
    return bool(np.any(np.all(X[dl[:, 0]] == X[dl[:, 1]], axis=1)))


def run_case(case):
    """Fit one (dataset, seed, family, estimator, method) case in this process.

    Parameters
    ----------
    case : dict
        ``dataset``, ``seed``, ``family``, ``estimator``, ``method`` and
        optionally ``n_tuples``.

    Returns
    -------
    dict
        ``n``, ``d``, ``n_constraints``, ``status``, ``raw_status``,
        ``passed``, ``objective`` (MMC: the scale-free value),
        ``cert_rel_gap``, ``n_iter``, ``seconds`` (the fit alone),
        ``peak_mb``, ``base_mb``, ``warnings``; or ``error`` when the fit
        raised (with ``error_type`` and ``proven_infeasible``).
    """
    import cvxmetric

    family, estimator, method = case["family"], case["estimator"], case["method"]
    methods = _methods()
    if method not in methods.get(family, {}):
        raise ValueError(f"method: unknown {method!r} for family {family!r}.")
    seed = int(case["seed"])
    X, y = load_dataset(case["dataset"], seed)
    params, _, _, _ = methods[family][method]
    kwargs, args, n_c, fit_kwargs = _fit_args(family, estimator, X, y, seed,
                                              int(case.get("n_tuples") or N_TUPLES))
    params = {k: v(X, args, seed) if callable(v) else v for k, v in params.items()}
    est = formulation(family).estimator(estimator)(**{**kwargs, **params})
    out = {"n": int(X.shape[0]), "d": int(X.shape[1]), "n_constraints": n_c,
           "base_mb": _max_rss_mb()}
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(*args, **fit_kwargs)
    except Exception as exc:  # a row of the table, never a crash
        out.update(seconds=time.perf_counter() - t0, peak_mb=_max_rss_mb(),
                   error=f"{type(exc).__name__}: {exc}"[:500],
                   error_type=type(exc).__name__,
                   proven_infeasible=(isinstance(exc, cvxmetric.InfeasibleError)
                                      and _cannot_link_identical(X, args)))
        return out
    seconds = time.perf_counter() - t0
    cert = est.certificate_
    objective = float(getattr(est, "scale_free_objective_", est.objective_))
    if n_c is None:
        n_c = int(getattr(est, "n_triplets_", 0)) or None
    msgs = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))
    out.update(
        seconds=seconds, peak_mb=_max_rss_mb(), n_constraints=n_c,
        status=str(est.status_),
        raw_status=str(getattr(est.result_, "raw_status", "") or ""),
        passed=bool(getattr(cert, "passed", False)),
        objective=objective if np.isfinite(objective) else None,
        cert_rel_gap=(float(cert.rel_gap) if np.isfinite(cert.rel_gap) else None),
        n_iter=int(est.n_iter_),
        warnings=[m[:300] for m in msgs[:3]],
    )
    return out


# ---------------------------------------------------------------------------
# The suite (parent process)
# ---------------------------------------------------------------------------


def cases(datasets=DATASETS, seeds=DEFAULT_SEEDS, families=None,
          methods=None, estimators=None):
    """The case dicts of a suite, exact methods of each group first
    (``families=None``: every family of the suite)."""
    fams, meths = _families(), _methods()
    families = tuple(fams) if families is None else families
    known = {
        "datasets": DATASETS,
        "families": tuple(fams),
        "methods": sorted({m for f in fams for m in meths[f]}),
        "estimators": sorted({e for f in fams for e in fams[f]}),
    }
    given = {"datasets": datasets, "families": families, "methods": methods,
             "estimators": estimators}
    for name, values in given.items():
        check_known(name, values, known[name])
    out = []
    # seed-major: a run cut short still covers every dataset's first seeds
    for seed in seeds:
        for dataset in datasets:
            for family in families:
                for estimator in fams[family]:
                    if estimators is not None and estimator not in estimators:
                        continue
                    for method in meths[family]:
                        if methods is not None and method not in methods:
                            continue
                        out.append({"dataset": dataset, "seed": int(seed),
                                    "family": family, "estimator": estimator,
                                    "method": method})
    return out


def run_suite(datasets=DATASETS, seeds=DEFAULT_SEEDS, families=None, *,
              methods=None, estimators=None, max_seconds=CASE_SECONDS,
              max_memory_mb=CASE_MEMORY_MB, n_tuples=N_TUPLES, isolate=True,
              callback=None, done=()):
    """Run the suite and return its judged rows.

    Parameters
    ----------
    datasets, seeds, families : sequences
        The slice of the matrix to run (defaults: all of it).
    methods, estimators : sequences of str, optional
        Restrict to these methods / estimators.  A method whose reference is
        not selected gets no gap (``methods=["fast"]`` alone judges no
        agreement).
    max_seconds : float or None
        Per-case wall-clock budget (``isolate`` only): the case is killed
        and its row says ``timeout``.
    max_memory_mb : int or None
        Per-case address-space limit (``isolate`` only).
    n_tuples : int
        Quadruplets / triplets of the tuple learners.
    isolate : bool
        Each case in its own process (:func:`cvxmetric.bench.run_isolated`);
        the cases of a formulation added by
        :func:`cvxmetric.formulations.register` run in this process (a
        fresh one would not know it), without the budgets.
    callback : callable, optional
        Called with each raw row as soon as its case is done.
    done : sequence of dict, optional
        Raw rows of an earlier, interrupted run (``--progress`` lines):
        their cases are not run again and the rows are judged with the rest.

    Returns
    -------
    list of dict
        One row per case, judged by :func:`judge`.
    """
    selected = tuple(_families()) if families is None else tuple(families)
    if isolate and not all(catalogued(f) for f in selected):
        # a formulation added by register() is unknown to a fresh process:
        # its cases run here, without the isolated cases' budgets
        isolate, max_seconds, max_memory_mb = False, None, None
    runs = Runs(__spec__.name, run_case, max_seconds=max_seconds, isolate=isolate,
                callback=callback, preexec_fn=memory_limit(
                    int(max_memory_mb) * 1024 ** 2 if max_memory_mb else None))
    def key(c):
        return (c["dataset"], int(c["seed"]), c["estimator"], c["method"])

    rows = list(done)
    seen = {key(r) for r in rows}
    for case in cases(datasets, seeds, families, methods, estimators):
        if key(case) in seen:
            continue
        case = dict(case, n_tuples=int(n_tuples))
        res = runs.run(case)
        row = {k: case[k] for k in ("dataset", "seed", "family", "estimator",
                                    "method")}
        row.update(res)
        if res.get("error") is not None:
            row["status"] = "timeout" if res.get("timeout") else "error"
            if _refused(row):
                row["status"] = "not_attained"  # the family's certified refusal
            elif row.get("error_type") == "ProblemSizeError":
                row["status"] = "beyond_size"  # the solver's documented limit
        runs.add(row)
    return judge(rows + runs.rows)


def _refused(r):
    """True when row ``r`` raised its family's refusal (:data:`REFUSALS`)."""
    spec = _refusals().get(r.get("family"))
    return (spec is not None and r["method"] in spec[1]
            and r.get("error_type") == spec[0])


def _refusal(r, by_key):
    """``(verdict, why)`` of a row of a family with refusals
    (:data:`REFUSALS`): ``"agreed"`` (it and its partner both refused),
    ``"disagree"`` (one refused, the other returned a solution),
    ``"unconfirmed"`` (it refused, its partner did not answer), or ``None``
    (no refusal involved)."""
    spec = _refusals().get(r["family"])
    if spec is None or r["method"] not in spec[1]:
        return None, ""
    error, partners = spec
    name = partners[r["method"]]
    p = by_key.get((r["dataset"], r["seed"], r["estimator"], name))
    p_refused = p is not None and _refused(p)
    if _refused(r):
        if p_refused:
            return "agreed", ""
        if p is not None and p.get("error") is None:
            return "disagree", (f"refused ({error}) but {name} returned a solution "
                                f"(status {p.get('status')})")
        what = "was not run" if p is None else f"did not answer ({p.get('error')})"
        return "unconfirmed", f"refused ({error}) but {name} {what}"[:300]
    if r.get("error") is None and p_refused:
        return "disagree", (f"returned a solution (status {r.get('status')}) but "
                            f"{name} refused ({error})")
    return None, ""


def judge(rows):
    """Add ``role``, ``gap``, ``tolerance`` and the verdicts to each row.

    Verdict fields are ``True`` / ``False`` where the role judges them,
    ``None`` where it does not: ``certified`` (exact rows), ``converged``
    (fast rows), ``agreeing`` (rows with a tolerance at default settings),
    ``slower`` (non-exact rows whose exact reference finished), and
    ``failed`` with the reasons in ``why``.
    """
    by_key = {(r["dataset"], r["seed"], r["estimator"], r["method"]): r for r in rows}
    methods = _methods()
    for r in rows:
        _, role, ref_name, tol_key = methods[r["family"]][r["method"]]
        r["role"] = role
        ref = by_key.get((r["dataset"], r["seed"], r["estimator"], ref_name))
        _gap_and_tolerance(r, ref, tol_key)
        r["certified"] = r["converged"] = r["agreeing"] = r["slower"] = None
        # a family's certified refusal, agreed by its partner method
        # (REFUSALS), is that method's correct answer; a disagreement fails
        refusal, refusal_why = _refusal(r, by_key)
        r["refusal"] = refusal
        why = [refusal_why] if refusal in ("disagree", "unconfirmed") else []
        if role == "exact":
            why += _judge_exact(r, refusal)
        else:
            why += _judge_converged(r, refusal) + _judge_agreeing(r, ref, refusal)
            why += _judge_slower(r, ref, refusal)
        _judge_failed(r, why, refusal)
    return rows


def _reference_ok(ref):
    return (ref is not None and ref.get("error") is None
            and ref.get("objective") is not None and bool(ref.get("passed")))


def _gap_and_tolerance(r, ref, tol_key):
    """``gap`` against the certified reference and the method's ``tolerance``."""
    from .._tolerances import relative_gap, tolerance

    r["gap"], r["tolerance"] = None, None
    if r.get("error") is None and _reference_ok(ref) and r.get("objective") is not None:
        r["gap"] = relative_gap(r["family"], r["objective"], ref["objective"])
    if tol_key is not None:
        r["tolerance"] = tolerance(r["family"], tol_key)


def _judge_exact(r, refusal):
    """``certified`` of an exact row; the reasons it fails."""
    if r.get("error_type") == "ProblemSizeError":
        # the solver's documented size limit (LDMLSupervised "exact": one
        # exponential cone per pair): nothing to certify, and the other
        # methods are judged by their own certificates
        r["refusal"] = "size"
        return []
    proven = bool(r.get("proven_infeasible")) or refusal == "agreed"
    r["certified"] = proven or (r.get("error") is None and r.get("status") == "optimal"
                                and bool(r.get("passed")))
    if not r["certified"] and not refusal:
        return [_reason(r, "not certified")]
    return []


def _judge_converged(r, refusal):
    """``converged`` of a fast or paper-optimal row."""
    if r["role"] not in ("fast", "paper-optimal"):
        return []
    # "optimal" implies a passing certificate under the shared contract;
    # both are asked so that older code is judged alike
    r["converged"] = refusal == "agreed" or (
        r.get("error") is None and r.get("status") == "optimal"
        and bool(r.get("passed")))
    if not r["converged"] and not refusal:
        return [_reason(r, "not converged")]
    return []


def _judge_agreeing(r, ref, refusal):
    """``agreeing``: the gap against the reference within the tolerance."""
    if refusal == "agreed" or r["tolerance"] is None:
        return []  # the refusal is the answer: no optimum to agree with
    ok = r.get("error") is None
    if r["gap"] is not None:
        r["agreeing"] = abs(r["gap"]) <= r["tolerance"]
        if not r["agreeing"]:
            return [f"gap {r['gap']:.2e} > tol {r['tolerance']:.0e}"]
    elif ok and not _reference_ok(ref) and ref is not None:
        r["agreeing"] = None  # no certified yardstick: not judged
    elif not ok:
        r["agreeing"] = False
    return []


def _judge_slower(r, ref, refusal):
    """``slower``: the row took longer than its reference's fit (plus
    :data:`SLOWER_MARGIN`); a reason only for fast rows."""
    if ref is None or r.get("seconds") is None:
        return []
    t_ref = ref.get("seconds") if ref.get("error") is None else None
    if refusal == "agreed" and _refused(ref):
        t_ref = ref.get("seconds")  # refusal against refusal
    if ref.get("timeout"):
        t_ref = None
    if t_ref is None:
        return []
    r["slower"] = bool(r["seconds"] > t_ref + SLOWER_MARGIN)
    r["exact_seconds"] = t_ref
    if r["slower"] and r["role"] == "fast":
        return [f"slower than exact ({r['seconds']:.2f} s > {t_ref:.2f} s)"]
    return []


def _judge_failed(r, why, refusal):
    """``failed`` and ``why`` from the verdicts."""
    if r["role"] in ("exact", "fast", "paper-optimal"):
        r["failed"] = bool(why)  # "slower" is a verdict of fast rows only
    else:  # a paper's algorithm fails only on its stated tolerance / errors
        answered = r.get("error") is None or refusal == "agreed"
        r["failed"] = ((r["agreeing"] is False) or not answered
                       or refusal in ("disagree", "unconfirmed"))
        why = [w for w in why if not w.startswith("slower")]
        if not answered and not why:
            why.append(_reason(r, "error"))
    r["why"] = "; ".join(why)


def _reason(r, what):
    if r.get("error") is not None:
        return f"{what}: {r['error']}"
    if r.get("role") != "exact":
        extra = ""
    elif r.get("passed"):
        extra = " (certificate passed)"
    else:
        extra = (f", certificate not passed (rel gap "
                 f"{_fmt(r.get('cert_rel_gap'), '.2e')})")
    return f"{what}: status {r.get('status')}{extra}"


def summarize(rows):
    """Counts of certified / converged / agreeing / slower / errors and the
    summary line."""
    def count(field):
        judged = [r for r in rows if r.get(field) is not None]
        return sum(bool(r[field]) for r in judged), len(judged)

    c, nc = count("certified")
    v, nv = count("converged")
    a, na = count("agreeing")
    s, ns = count("slower")
    err = sum(r.get("error") is not None and r.get("refusal") != "size" for r in rows)
    tmo = sum(bool(r.get("timeout")) for r in rows)
    fail = sum(bool(r.get("failed")) for r in rows)
    line = (f"{len(rows)} rows: certified {c}/{nc}, converged {v}/{nv}, "
            f"agreeing {a}/{na}, slower than exact {s}/{ns}, errors {err} "
            f"(timeouts {tmo}); failing rows {fail}")
    return {"rows": len(rows), "certified": [c, nc], "converged": [v, nv],
            "agreeing": [a, na], "slower": [s, ns], "errors": err,
            "timeouts": tmo, "failing": fail, "line": line}


def format_table(rows):
    """One plain-text table: dataset, seed, family, estimator, method,
    constraints, status, certificate, gap, seconds, peak MB, verdict."""
    headers = ["dataset", "seed", "family", "estimator", "method", "constraints",
               "status", "cert", "gap", "seconds", "peak MB", "verdict"]
    body = []
    for r in rows:
        verdict = "FAIL" if r.get("failed") else "ok"
        if r.get("role") == "paper" and not r.get("failed"):
            verdict = "ok" if r.get("agreeing") else "reported"
        body.append([
            r["dataset"], str(r["seed"]), r["family"], r["estimator"], r["method"],
            _fmt(r.get("n_constraints"), "d"), r.get("status") or "-",
            "-" if r.get("passed") is None else ("pass" if r["passed"] else "no"),
            _fmt(r.get("gap"), ".1e"), _fmt(r.get("seconds"), ".2f"),
            _fmt(r.get("peak_mb"), ".0f"), verdict,
        ])
    return format_columns(headers, body)


def format_aggregate(rows):
    """Rows grouped by dataset, estimator and method, over the seeds: the
    seeds run, the failing ones, the statuses seen, the largest ``|gap|``
    and the median fit seconds."""
    groups = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["estimator"], r["method"]), []).append(r)
    headers = ["dataset", "estimator", "method", "seeds", "failing seeds",
               "statuses", "max abs gap", "median s"]
    body = []
    for (dataset, estimator, method), rs in groups.items():
        gaps = [abs(r["gap"]) for r in rs if r.get("gap") is not None]
        secs = [r["seconds"] for r in rs if r.get("seconds") is not None]
        statuses = {}
        for r in rs:
            statuses[r.get("status") or "-"] = statuses.get(r.get("status") or "-", 0) + 1
        body.append([
            dataset, estimator, method, str(len(rs)),
            ",".join(str(r["seed"]) for r in rs if r.get("failed")) or "-",
            " ".join(f"{k} {v}" if len(statuses) > 1 else k
                     for k, v in statuses.items()),
            _fmt(max(gaps) if gaps else None, ".1e"),
            _fmt(float(np.median(secs)) if secs else None, ".2f"),
        ])
    widths = [max(len(h), *(len(b[k]) for b in body)) if body else len(h)
              for k, h in enumerate(headers)]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(b, widths)) + " |"
              for b in body]
    return "\n".join(lines)


def failures(rows):
    """``dataset/seed/estimator/method: why`` of every failing row."""
    return [f"{r['dataset']}/{r['seed']}/{r['estimator']}/{r['method']}: {r['why']}"
            for r in rows if r.get("failed")]


def report(rows):
    """Table, failing rows and the summary line, as printed by the CLI."""
    out = [format_table(rows)]
    bad = failures(rows)
    if bad:
        out += ["", "failing rows:"] + [f"  {b}" for b in bad]
    out += ["", summarize(rows)["line"],
            ("gap: (f - f*) / max(1, |f*|) vs the certified exact fit of the same "
            "constraints (MMC: (r - r*) / r* of the scale-free value); seconds: "
            "the fit alone; verdict 'reported': a paper's algorithm whose gap "
            "is not judged at its default budget.")]
    return "\n".join(out)


def _parse_list(text, cast=str):
    """``"a,b"`` (or a list already parsed, as ``cvxmetric bench`` gives)
    -> ``[cast(a), cast(b)]``; ``None`` stays ``None``."""
    if text is None:
        return None
    if isinstance(text, (list, tuple)):
        return [cast(t) for t in text]
    return [cast(t) for t in text.split(",") if t.strip()]


def main(argv=None):
    """``python -m cvxmetric.bench.conformance [options]`` (also reached through
    ``cvxmetric bench --suite real``); ``--case JSON`` runs one isolated case."""
    import argparse

    argv = sys.argv[1:] if argv is None else list(argv)
    if "--case" in argv:
        return case_main(__spec__.name, run_case, argv)
    p = argparse.ArgumentParser(prog="python -m cvxmetric.bench.conformance",
                                description="Real-data conformance suite.")
    p.add_argument("--datasets", help=f"comma-separated subset of {','.join(DATASETS)}")
    p.add_argument("--seeds", help="comma-separated seeds (default 0,1,2,3,4)")
    p.add_argument("--families", help=f"comma-separated subset of {','.join(_families())}")
    p.add_argument("--methods", help="comma-separated method names")
    p.add_argument("--estimators", help="comma-separated estimator names")
    p.add_argument("--max-seconds", type=float, default=CASE_SECONDS)
    p.add_argument("--max-memory-mb", type=int, default=CASE_MEMORY_MB)
    p.add_argument("--n-tuples", type=int, default=N_TUPLES)
    p.add_argument("--json", metavar="PATH", help="also write the rows as JSON here")
    p.add_argument("--progress", metavar="PATH",
                   help="append each raw row as a JSON line here as it is done")
    p.add_argument("--resume", action="store_true",
                   help="skip the cases already in the --progress file")
    p.add_argument("--aggregate", action="store_true",
                   help="with --from-progress: one line per dataset, estimator "
                        "and method over the seeds (a Markdown table)")
    p.add_argument("--from-progress", metavar="PATH", action="append",
                   help="run nothing: judge and print the rows of these "
                        "--progress files (repeatable)")
    args = p.parse_args(argv)
    if args.from_progress:
        rows = judge(load_progress(args.from_progress))
        _write_json(args.json, rows)
        print(format_aggregate(rows) if args.aggregate else report(rows))
        return 1 if any(r.get("failed") for r in rows) else 0
    return run_cli(args)


def load_progress(paths):
    """The raw rows of ``--progress`` files; of a case run twice, the last."""
    rows = {}
    for path in paths:
        with open(path) as fh:
            for line in fh:
                if line.strip():
                    r = json.loads(line)
                    rows[(r["dataset"], int(r["seed"]), r["estimator"],
                          r["method"])] = r
    return list(rows.values())


def _write_json(path, rows):
    """``{"summary", "rows"}`` to ``path`` atomically (nothing when None)."""
    if not path:
        return
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump({"summary": summarize(rows), "rows": rows}, fh, indent=1,
                  default=float)
    os.replace(tmp, path)


def run_cli(args, json_stdout=False):
    """Run the suite from parsed options; print the report (or JSON)."""
    seeds = _parse_list(args.seeds, int) or list(DEFAULT_SEEDS)
    isolate = not getattr(args, "no_isolate", False)
    progress = getattr(args, "progress", None)

    def callback(row):
        print(f"done: {row['dataset']}/{row['seed']} {row['estimator']} "
              f"{row['method']}: {_fmt(row.get('seconds'), '.2f')} s, "
              f"{row.get('status')}", file=sys.stderr, flush=True)
        if progress:
            with open(progress, "a") as fh:
                fh.write(json.dumps(row) + "\n")

    done = []
    if getattr(args, "resume", False) and progress and os.path.exists(progress):
        done = load_progress([progress])
    rows = run_suite(
        _parse_list(args.datasets) or DATASETS, seeds,
        _parse_list(args.families) or None,
        methods=_parse_list(getattr(args, "methods", None)),
        estimators=_parse_list(getattr(args, "estimators", None)),
        max_seconds=None if not isolate else (
            CASE_SECONDS if args.max_seconds is None else args.max_seconds),
        max_memory_mb=getattr(args, "max_memory_mb", CASE_MEMORY_MB),
        n_tuples=getattr(args, "n_tuples", N_TUPLES), isolate=isolate,
        callback=callback, done=done)
    path = args.json if isinstance(getattr(args, "json", None), str) else None
    _write_json(path, rows)
    if json_stdout:
        print(json.dumps({"summary": summarize(rows), "rows": rows}, indent=1,
                         default=float))
    else:
        print(report(rows))
    return 1 if any(r.get("failed") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

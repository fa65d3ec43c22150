"""The one exact solve path: a CVXPY problem, Clarabel, SCS as fallback.

:func:`solve_certified` runs the solvers in turn with explicit tight
tolerances and accepts a point only when its *formulation-specific*
certificate passes -- the solver's status alone is never trusted.  A claim of
infeasibility or unboundedness is not trusted alone either: interior-point
and splitting methods both misreport badly scaled feasible problems, so the
claim ends the search with :class:`~cvxmetric.result.InfeasibleError` or
:class:`~cvxmetric.result.UnboundedError` only when a second solver (or the
caller's own check, ``confirm``) agrees; otherwise the next solver is tried
and an unconfirmed claim ends in a plain :class:`~cvxmetric.result.SolverError`.
"""

import logging
import time
import warnings

import cvxpy as cp

from ._certify import conic_solve
from ._trace import captured, emit, record
from .result import (
    CertificateError,
    InfeasibleError,
    SolverError,
    Status,
    UnboundedError,
)

__all__ = ["solve_certified", "solver_options", "SOLVERS"]

logger = logging.getLogger("cvxmetric")

SOLVERS = ("CLARABEL", "SCS")


def solver_options(solver, tol=1e-9, max_iter=None, time_limit=None):
    """Explicit tolerances passed to ``solver`` (recorded in certificates);
    ``time_limit`` (seconds > 0, optional) bounds the solver's own run."""
    if solver == "CLARABEL":
        opts = {
            "tol_gap_abs": tol,
            "tol_gap_rel": tol,
            "tol_feas": tol,
            "tol_ktratio": 1e-7,
            "max_iter": max_iter or 400,
        }
        if time_limit is not None:
            opts["time_limit"] = float(time_limit)
        return opts
    if solver == "SCS":
        opts = {
            "eps_abs": tol,
            "eps_rel": tol,
            "eps_infeas": 1e-10,
            "max_iters": max_iter or 200_000,
            "acceleration_lookback": 10,
        }
        if time_limit is not None:
            opts["time_limit_secs"] = float(time_limit)  # (0 would mean none)
        return opts
    raise ValueError(f"solver: unknown option {solver!r}; expected one of {SOLVERS}.")


def _version(solver):
    try:
        if solver == "CLARABEL":
            import clarabel

            return clarabel.__version__
        import scs

        return scs.__version__
    except Exception:  # pragma: no cover - version is informative only
        return "unknown"


_CLAIMS = {
    cp.INFEASIBLE: "infeasible", cp.INFEASIBLE_INACCURATE: "infeasible",
    cp.UNBOUNDED: "unbounded", cp.UNBOUNDED_INACCURATE: "unbounded",
}


def solve_certified(problem, certify, *, solvers=SOLVERS, tol=1e-9, max_iter=None,
                    verbose=False, confirm=None, time_limit=None):
    """Solve ``problem`` and return ``(certificate, info)``.

    Parameters
    ----------
    problem : cvxpy.Problem
    certify : callable
        ``certify(solver_name, version, tolerances, times) -> Certificate``,
        called after a solve that reports a solution; it reads the variables'
        values and duals.
    solvers : sequence of str
        Tried in order; the next one is used when a solve fails or its
        certificate does not pass.
    tol : float
        Solver tolerance (gap and feasibility).
    max_iter : int, optional
    verbose : bool
    time_limit : float, optional
        Seconds (> 0) each solver may run (:func:`solver_options`); what a
        solve stopped by it returns is judged like any other answer.
    confirm : callable, optional
        ``confirm(kind)`` with ``kind`` in ``{"infeasible", "unbounded"}``:
        the caller's own check of a solver's claim on the data (e.g. a
        Farkas certificate, or an exact feasibility test).  It returns
        ``True`` (the claim is proven), ``False`` (it is refuted: the next
        solver is tried and no agreement of solvers can make it true) or
        ``None`` (cannot tell: a second solver must make the same claim).

    Returns
    -------
    certificate : Certificate
    info : dict
        ``status`` (the solver's raw status), ``n_iter``, ``attempts``.

    Raises
    ------
    InfeasibleError, UnboundedError
        When a solver's claim is confirmed (by another solver or ``confirm``).
    CertificateError
        When every solver returned a point whose certificate fails.
    SolverError
        When every solver failed outright.
    """
    attempts = []
    best = None
    claims = {}  # kind -> solvers that claimed it
    why = None  # why the next solver runs (the trace's record)
    for name in solvers:
        opts = solver_options(name, tol, max_iter, time_limit)
        t0 = time.perf_counter()
        error = _run(problem, name, opts, verbose)
        if error is not None:
            attempts.append({"solver": name, "error": error})
            record(name, "conic", seconds=time.perf_counter() - t0,
                   status=f"error ({error.split(':')[0]})", why=why)
            why = f"{name} failed ({error.split(':')[0]})"
            continue
        status, n_iter, times = _outcome(problem, t0)
        attempts.append({"solver": name, "status": status, "time": times["total"]})
        logger.info("%s: status %s in %.3g s", name, status, times["total"])
        if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            record(name, "conic", iterations=n_iter, seconds=times["total"],
                   status=status, why=why)
            if status in _CLAIMS:
                why = f"{name} claimed the problem {_CLAIMS[status]}"
                _weigh_claim(_CLAIMS[status], name, claims, confirm)
            else:
                why = f"{name} ended {status}"
            continue
        with captured() as certifying:
            # what the certification runs (a bound's auxiliary solve) is
            # traced after the solver's stage, the one it serves
            cert = certify(name, _version(name), opts, times)
        info = {"status": status, "n_iter": n_iter, "attempts": attempts}
        record(name, "conic", iterations=n_iter, seconds=time.perf_counter() - t0,
               gap=cert.rel_gap, status=status + ("" if cert.passed else
                                                  ", certificate fails"), why=why)
        emit(certifying, why=f"certifying {name}'s point")
        if cert.passed:
            info["status"] = Status.OPTIMAL if status == cp.OPTIMAL else status
            return cert, info
        why = (f"{name}'s certificate failed (gap {cert.rel_gap:.2g}, violation "
               f"{cert.max_violation:.2g})")
        logger.info("%s (%s): certificate fails, rel_gap=%.2e violation=%.2e",
                    name, status, cert.rel_gap, cert.max_violation)
        if best is None or cert.rel_gap < best[0].rel_gap:
            best = (cert, info)
    _raise_unsolved(best, claims, attempts)


def _run(problem, name, opts, verbose):
    """Solve with one solver; ``None``, or the error it ended with (text)."""
    try:
        with warnings.catch_warnings():
            # CVXPY warns on an inaccurate solution; here that status is a
            # value, judged by the certificate (and logged)
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            # as problem.solve, keeping the conic dual for cvxmetric.certify
            conic_solve(problem, name, verbose=verbose, **opts)
    except Exception as exc:  # noqa: BLE001 - any solver failure: try the next
        # CVXPY raises SolverError, but a solver's own failure (SCS's
        # allocation error, a Clarabel panic) can surface as another
        # exception type; neither ends the search
        logger.info("%s failed: %s", name, exc)
        return f"{type(exc).__name__}: {exc}"
    return None


def _outcome(problem, t0):
    """``(status, iterations, times)`` of the solve started at ``t0``."""
    total = time.perf_counter() - t0
    stats = problem.solver_stats
    times = {
        "compile": float(getattr(problem, "compilation_time", 0.0) or 0.0),
        "solve": float(stats.solve_time or 0.0) if stats else 0.0,
        "total": total,
    }
    n_iter = int(getattr(stats, "num_iters", 0) or 0) if stats else 0
    return problem.status, n_iter, times


def _weigh_claim(kind, name, claims, confirm):
    """Record ``name``'s claim; raise when the data or a second solver
    confirms it (:func:`solve_certified`)."""
    claims.setdefault(kind, []).append(name)
    verdict = None if confirm is None else confirm(kind)
    if verdict:
        _raise_claim(kind, claims[kind], "confirmed by a check on the data")
    if verdict is None and len(claims[kind]) >= 2:
        _raise_claim(kind, claims[kind], "agreed")


def _raise_unsolved(best, claims, attempts):
    """The error that ends a search without a certified point."""
    if best is not None:
        cert, _ = best
        if claims:
            logger.info("unconfirmed claims: %s", claims)
        raise CertificateError(
            f"no solver produced a certified solution: best relative gap "
            f"{cert.rel_gap:.3g} (tolerance {cert.tol_gap:.1g}), violation "
            f"{cert.max_violation:.3g}; attempts: {attempts}",
            result=best,
        )
    if claims:
        raise SolverError(
            f"no certified solution: {_claim_text(claims)}, not confirmed by "
            f"another solver or by a check on the data (a numerical claim on a "
            f"badly scaled problem is common: rescale the data); attempts: "
            f"{attempts}")
    raise SolverError(f"every solver failed: {attempts}")


def _claim_text(claims):
    return "; ".join(f"{' and '.join(names)} claimed the problem {kind}"
                     for kind, names in claims.items())


def _raise_claim(kind, names, how):
    error = InfeasibleError if kind == "infeasible" else UnboundedError
    raise error(f"{' and '.join(names)} certified the problem {kind} ({how}).")

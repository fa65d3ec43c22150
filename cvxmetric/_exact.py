"""The one exact solve path: a CVXPY problem, Clarabel, SCS as fallback.

:func:`solve_certified` runs the solvers in turn with explicit tight
tolerances and accepts a point only when its *formulation-specific*
certificate passes -- the solver's status alone is never trusted.  A solver
that certifies infeasibility or unboundedness ends the search with the
matching exception.
"""

import logging
import time
import warnings

import cvxpy as cp

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


def solver_options(solver, tol=1e-9, max_iter=None):
    """Explicit tolerances passed to ``solver`` (recorded in certificates)."""
    if solver == "CLARABEL":
        return {
            "tol_gap_abs": tol,
            "tol_gap_rel": tol,
            "tol_feas": tol,
            "tol_ktratio": 1e-7,
            "max_iter": max_iter or 400,
        }
    if solver == "SCS":
        return {
            "eps_abs": tol,
            "eps_rel": tol,
            "eps_infeas": 1e-10,
            "max_iters": max_iter or 200_000,
            "acceleration_lookback": 10,
        }
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


def solve_certified(problem, certify, *, solvers=SOLVERS, tol=1e-9, max_iter=None,
                    verbose=False):
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

    Returns
    -------
    certificate : Certificate
    info : dict
        ``status`` (the solver's), ``n_iter``, ``attempts``.

    Raises
    ------
    InfeasibleError, UnboundedError
        When a solver certifies it.
    CertificateError
        When every solver returned a point whose certificate fails.
    SolverError
        When every solver failed outright.
    """
    attempts = []
    best = None
    for name in solvers:
        opts = solver_options(name, tol, max_iter)
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                # CVXPY warns on an inaccurate solution; here that status is a
                # value, judged by the certificate below (and logged)
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                problem.solve(solver=name, verbose=verbose, **opts)
        except cp.error.SolverError as exc:
            attempts.append({"solver": name, "error": str(exc)})
            logger.info("%s failed: %s", name, exc)
            continue
        total = time.perf_counter() - t0
        stats = problem.solver_stats
        solve_time = float(stats.solve_time or 0.0) if stats else 0.0
        times = {
            "compile": float(getattr(problem, "compilation_time", 0.0) or 0.0),
            "solve": solve_time,
            "total": total,
        }
        status = problem.status
        attempts.append({"solver": name, "status": status, "time": total})
        logger.info("%s: status %s in %.3g s", name, status, total)
        if status == cp.INFEASIBLE:
            raise InfeasibleError(f"{name} certified the problem infeasible.")
        if status == cp.UNBOUNDED:
            raise UnboundedError(f"{name} certified the problem unbounded.")
        if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            logger.info("%s returned status %s", name, status)
            continue
        cert = certify(name, _version(name), opts, times)
        info = {
            "status": status,
            "n_iter": int(getattr(stats, "num_iters", 0) or 0),
            "attempts": attempts,
        }
        if cert.passed:
            info["status"] = Status.OPTIMAL if status == cp.OPTIMAL else status
            return cert, info
        logger.info(
            "%s (%s): certificate fails, rel_gap=%.2e violation=%.2e",
            name, status, cert.rel_gap, cert.max_violation,
        )
        if best is None or cert.rel_gap < best[0].rel_gap:
            best = (cert, info)
    if best is not None:
        cert, info = best
        raise CertificateError(
            f"no solver produced a certified solution: best relative gap "
            f"{cert.rel_gap:.3g} (tolerance {cert.tol_gap:.1g}), violation "
            f"{cert.max_violation:.3g}; attempts: {attempts}",
            result=best,
        )
    raise SolverError(f"every solver failed: {attempts}")

"""SDML, fast: the graphical lasso's block coordinate descent, certified.

The paper solves SDML's problem by the graphical lasso's block coordinate
descent (Banerjee, El Ghaoui, d'Aspremont; Friedman, Hastie, Tibshirani):
each sweep updates one row and column of the covariance ``W`` by a lasso
problem, keeping ``W`` in the dual box of
:class:`~cvxmetric.sdml._problem.SDMLData`.  :func:`solve_fast` runs
scikit-learn's :func:`sklearn.covariance.graphical_lasso` (that algorithm,
``mode="cd"``) on ``P`` at the tight tolerances :data:`GLASSO_TOL`, then
certifies its precision matrix by SDML's dual bound with both ``M^{-1}`` and
the returned covariance as dual candidates: ``status == "optimal"`` only
when that certificate passes at the package's tolerance.  Without an
off-diagonal penalty (``sparsity_param = 0``, or one feature) the optimum
is ``P^{-1}``, computed directly.

scikit-learn starts the descent from ``P`` with its off-diagonal entries
shrunk by 5%, which must be positive definite; when it is not (``P`` is
indefinite, yet the problem is bounded: no ray of
:meth:`SDMLData.unbounded_direction`), or the descent fails, the solve falls
back to the certified exact path and says so in ``info["fallback"]`` and the
trace.
"""

import time
import warnings

import numpy as np
from sklearn.covariance import graphical_lasso
from sklearn.exceptions import ConvergenceWarning

from .._trace import record
from .._validation import check_instance
from ..result import SolverResult, Status
from ._problem import SDMLData
from .exact import check_bounded, solve_exact
from .._settings import SDML_GLASSO_TOL as GLASSO_TOL, SDML_GLASSO_MAX_ITER as GLASSO_MAX_ITER

__all__ = ["solve_fast", "GLASSO_TOL", "GLASSO_MAX_ITER"]


def _startable(P):
    """Whether scikit-learn's start (off-diagonals of ``P`` times 0.95) is
    positive definite."""
    S = 0.95 * P
    np.fill_diagonal(S, np.diag(P))
    try:
        np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        return False
    return True


def _fallback(data, why, t0):
    """The certified exact path, recorded as the fast solve's fallback."""
    record("glasso", "iterative", status="skipped", why=why)
    res = solve_exact(data)
    res.info["fallback"] = why
    res.method = "fast"
    res.time = time.perf_counter() - t0
    return res


def _closed_form(data, t0):
    """``M = P^{-1}``, the optimum without an off-diagonal penalty."""
    M = np.linalg.inv(data.P)
    M = 0.5 * (M + M.T)
    cert = data.certificate(M, data.P, solver="closed form")
    status = Status.OPTIMAL if cert.passed else Status.OPTIMAL_INACCURATE
    seconds = time.perf_counter() - t0
    record("inverse", "iterative", iterations=1, seconds=seconds, gap=cert.rel_gap,
           status=status)
    return SolverResult(M=M, status=status, objective=cert.objective, n_iter=1,
                        certificate=cert, method="fast", info={"covariance": data.P},
                        time=seconds)


def solve_fast(data, *, tol=GLASSO_TOL, max_iter=GLASSO_MAX_ITER):
    """SDML by scikit-learn's graphical lasso, certified (module docstring).

    Parameters
    ----------
    data : SDMLData
    tol : float > 0
        scikit-learn's ``tol`` and ``enet_tol``.
    max_iter : int >= 1
        Sweeps at most.

    Returns
    -------
    SolverResult
        ``method="fast"``; ``status == "optimal"`` when the certificate
        passes, ``"max_iter_reached"`` when the descent ran out of sweeps
        without it, ``"optimal_inaccurate"`` otherwise;
        ``info["covariance"]`` is the descent's ``W``.

    Raises
    ------
    UnboundedError
        Naming ``balance_param``, when SDML's objective has a ray to
        ``-inf`` (:meth:`SDMLData.unbounded_direction`).
    """
    check_instance(data, SDMLData, "data")
    check_bounded(data)
    t0 = time.perf_counter()
    P = data.P
    if data.n_features == 1 or data.sparsity_param == 0:
        # no off-diagonal penalty: M = P^{-1} (P is PD: check_bounded)
        return _closed_form(data, t0)
    if not _startable(P):
        return _fallback(data, "P is not positive definite: scikit-learn's "
                               "descent cannot start", t0)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            W, M, n_iter = graphical_lasso(P, data.sparsity_param, mode="cd", tol=tol,
                                           enet_tol=tol, max_iter=max_iter,
                                           return_n_iter=True)
    except FloatingPointError as exc:
        return _fallback(data, f"scikit-learn's descent failed ({exc})", t0)
    stopped = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    M = 0.5 * (M + M.T)
    cert = data.certificate(M, W, solver="sklearn.graphical_lasso",
                            tolerances={"tol": tol, "enet_tol": tol,
                                        "max_iter": max_iter})
    if cert.passed:
        status = Status.OPTIMAL
    else:
        status = Status.MAX_ITER if stopped else Status.OPTIMAL_INACCURATE
    seconds = time.perf_counter() - t0
    record("glasso", "iterative", iterations=n_iter, seconds=seconds,
           gap=cert.rel_gap, status=status)
    return SolverResult(M=M, status=status, objective=cert.objective,
                        n_iter=int(n_iter), certificate=cert, method="fast",
                        info={"covariance": W}, time=seconds,
                        raw_status="max_iter" if stopped else "converged")

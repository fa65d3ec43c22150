"""RCA, exact: the paper's Sec. 4.2 problem in CVXPY, and its certified solve.

The problem as printed (Bar-Hillel, Hertz, Shental, Weinshall, "Learning a
Mahalanobis metric from equivalence constraints", JMLR 2005, Sec. 4.2)::

    minimise_M  (1/p) sum_j sum_{i in chunklet j} ||x_ji - m_j||_M^2
    subject to  |M| >= 1

declared with ``cp.log_det`` of the symmetric variable (``log det M >=
0``, which also keeps ``M`` positive definite) and the chunklet
deviations ``R`` (rows ``x_ji - m_j``) as data, vectorised:
``cp.sum(cp.multiply(R @ M, R)) / p``.  There is no hyperparameter (the
problem is trivially DPP).  The certificate is the closed-form dual bound
of :class:`~cvxmetric.rca.RCAData` at the solver's multiplier of the
``log det`` constraint (and at ``F(M) / d``).  A singular within-chunklet
covariance leaves the infimum unattained:
:class:`~cvxmetric.result.NotAttainedError`, before any solve.
"""

import dataclasses

import cvxpy as cp
import numpy as np
import scipy.linalg

from .._docs import fill_doc
from .._exact import SOLVERS
from .._extend import certified_result
from .._linalg import logdet_pd
from .._validation import check_instance
from ..model import DeclaredProblem
from ..result import CertificateError, NotAttainedError
from ._problem import RCAData, _singular_message

__all__ = ["solve_exact", "declared_problem", "PAPER"]

#: The paper, as :class:`~cvxmetric.model.DeclaredProblem` cites it.
PAPER = ("Bar-Hillel, Hertz, Shental, Weinshall: Learning a Mahalanobis metric "
         "from equivalence constraints (JMLR 2005)")


class _RCADeclared(DeclaredProblem):
    """Sec. 4.2 as printed, on the user's chunklets."""

    def _family_certificate(self, M):
        lam = self._dual("logdet")
        return self.data.certificate(M, None if lam is None else float(np.ravel(lam)[0]),
                                     **self._certificate_args())

    def _family_repair(self, M):
        # a solver's point scaled onto |M| = 1 (the ray through it meets the
        # feasible set's boundary there; a PD point only)
        M = 0.5 * (M + M.T)
        logdet = logdet_pd(M)
        if not np.isfinite(logdet):
            return M
        return M * np.exp(-logdet / M.shape[0])


def _check_definite(data):
    if data.logdet_C() == -np.inf:
        raise NotAttainedError(_singular_message(data))


@fill_doc
def declared_problem(data):
    """Sec. 4.2 exactly as printed, in the user's units, unsolved.

    Variable ``M`` (symmetric); constraint ``logdet`` (``log det M >= 0``);
    no parameters.

    Parameters
    ----------
    data : RCAData

    {declared_returns_model}
    """
    check_instance(data, RCAData, "data")
    R, d, p = data.R, data.n_features, data.n_points
    # [declare:rca-sec42]
    M = cp.Variable((d, d), symmetric=True, name="M")
    inner = cp.sum(cp.multiply(R @ M, R)) / p  # (1/p) sum ||x_ji - m_j||_M^2
    constraints = {"logdet": cp.log_det(M) >= 0}
    problem = cp.Problem(cp.Minimize(inner), list(constraints.values()))
    # [/declare]
    assert problem.is_dpp(), "RCA's declared problem must be DPP"
    return _RCADeclared(
        family="rca", paper=PAPER, equation="Sec. 4.2", problem=problem,
        variables={"M": M}, parameters={}, constraints=constraints,
        metric_key="M", data=data)


def _whitened(data):
    """``(whitened, L, c)``: the chunklet samples in the units of their
    covariance, ``x -> L^{-1} x`` with ``T = L L^T`` the Cholesky factor of
    the chunklet samples' covariance (the data's scale, not RCA's answer:
    ``(p - 1) T >= p C``, so ``T`` is definite when ``C`` is), and ``c =
    log det T``."""
    T = np.atleast_2d(np.cov(data.X[data.chunks >= 0], rowvar=False))
    L = np.linalg.cholesky(0.5 * (T + T.T))
    Xw = scipy.linalg.solve_triangular(L, data.X.T, lower=True).T
    return RCAData(Xw, data.chunks), L, 2.0 * float(np.sum(np.log(np.diag(L))))


def solve_exact(data, *, solvers=SOLVERS, tol=1e-9):
    """Certified exact solution of RCA's Sec. 4.2 problem.

    The declared problem is solved on the whitened chunklet samples
    (:func:`_whitened`): with ``x' = L^{-1} x``, ``M = L^{-T} M' L^{-1}``
    gives ``<C, M> = <C', M'>`` and ``log det M = log det M' - log det
    T``, and the problem is homogeneous, so ``M = e^{c/d} L^{-T} N L^{-1}``
    for the solution ``N`` of the declared problem of the whitened data
    (``|N| = 1``).  The interior-point solvers need it: the within-chunklet
    covariance of standardised breast_cancer spans 4.5e4 (Clarabel stops
    at its iteration limit, SCS runs for minutes), its whitened twin 4.4.
    The certificate is recomputed in the user's units.

    Parameters
    ----------
    data : RCAData
        With a definite within-chunklet covariance.
    solvers : sequence of str
        Clarabel first, SCS as fallback.
    tol : float
        Solver tolerance (the certificate is judged at the package's).

    Returns
    -------
    SolverResult
        ``method="exact"``, ``M`` with ``|M| = 1``; ``info["lam"]``: the
        multiplier of ``log det M >= 0`` in the user's units.

    Raises
    ------
    NotAttainedError
        When the within-chunklet covariance is singular.
    CertificateError, SolverError
        As :func:`cvxmetric._extend.certified_result`.
    """
    check_instance(data, RCAData, "data")
    _check_definite(data)
    whitened, L, c = _whitened(data)
    dp = declared_problem(whitened)
    result = certified_result(dp, solvers=solvers, tol=tol)
    Linv = scipy.linalg.solve_triangular(L, np.eye(L.shape[0]), lower=True)
    scale = np.exp(c / data.n_features)
    M = scale * (Linv.T @ result.M @ Linv)
    M = 0.5 * (M + M.T)
    lam = dp._dual("logdet")
    lam = None if lam is None else scale * float(np.ravel(lam)[0])
    wc = result.certificate
    cert = data.certificate(M, lam, solver=wc.solver, solver_version=wc.solver_version,
                            tolerances=wc.tolerances, times=wc.times)
    out = dataclasses.replace(result, M=M, objective=cert.objective, certificate=cert,
                              info={**result.info, "lam": lam})
    if not cert.passed:
        raise CertificateError(
            f"RCA: the solution of the whitened problem does not pass the "
            f"certificate in the user's units (relative gap {cert.rel_gap:.3g}, "
            f"violation {cert.max_violation:.3g}).", out)
    return out

"""ITML, exact: the ICML 2007 problem in CVXPY, and its certified solve.

The problem as printed (Davis, Kulis, Jain, Sra, Dhillon, "Information-
theoretic metric learning", ICML 2007, Sec. 4)::

    minimise_{M, xi}  D_ld(M, M0) + gamma D_ld(diag xi, diag xi0)
    subject to        s_p (D_M(p) - xi_p) <= 0    for every pair p

with ``D_ld(A, B) = tr(A B^-1) - log det(A B^-1) - d`` and ``s_p = +1`` on
similar pairs, ``-1`` on dissimilar ones (:mod:`cvxmetric.itml._problem`).
:func:`declared_problem` writes it with ``cp.log_det`` of the symmetric
variable ``M`` (its domain keeps ``M`` positive definite), ``cp.log`` of
the slacks, ``tr(M M0^-1)`` as the inner product with the constant
``M0^-1`` and the pairs' distances in one vectorised expression; ``gamma``
is a ``cp.Parameter`` (the problem is DPP).  The constant ``log det M0 - d
- gamma P`` is kept, so the problem's value is ITML's objective.

:func:`solve_exact` solves it by the package's certified path (Clarabel,
SCS as fallback) and certifies the point with
:meth:`~cvxmetric.itml.ITMLData.certificate` at the multipliers of the
pair constraints, which are the dual variables ``alpha`` of the bound.
"""

import cvxpy as cp
import numpy as np

from .._docs import fill_doc
from .._exact import SOLVERS
from .._extend import certified_result
from .._settings import ITML_EXACT_MAX_ENTRIES, ITML_EXACT_MAX_FEATURES
from .._validation import check_instance
from ..model import DeclaredProblem
from ..result import ProblemSizeError
from ._problem import ITMLData

__all__ = ["solve_exact", "declared_problem", "check_exact_size", "PAPER"]

#: The paper, as :class:`~cvxmetric.model.DeclaredProblem` cites it.
PAPER = ("Davis, Kulis, Jain, Sra, Dhillon: Information-theoretic metric learning "
         "(ICML 2007)")


def check_exact_size(data, name="data"):
    """ProblemSizeError naming ``name`` above the exact path's size: more
    than :data:`~cvxmetric._settings.ITML_EXACT_MAX_FEATURES` features or
    more than :data:`~cvxmetric._settings.ITML_EXACT_MAX_ENTRIES` entries
    ``n_pairs * d (d + 1) / 2`` in its pair rows."""
    d = data.n_features
    entries = data.n_pairs * d * (d + 1) // 2
    if d > ITML_EXACT_MAX_FEATURES or entries > ITML_EXACT_MAX_ENTRIES:
        raise ProblemSizeError(
            f"{name}: ITML's exact path declares a log-det cone of twice the "
            f"features' size and one row dense in M per pair; these data have "
            f"{d} features and {data.n_pairs} pairs ({entries} entries), above "
            f"{ITML_EXACT_MAX_FEATURES} features or {ITML_EXACT_MAX_ENTRIES} "
            f"entries. Use solver='fast' (certified too).")


class _ITMLDeclared(DeclaredProblem):
    """The ICML 2007 problem as printed, on the user's data."""

    def _family_certificate(self, M):
        alpha = self._dual("pairs")
        if alpha is None:
            self._warn_no_multipliers()
            return self.data.certificate(M, **self._certificate_args())
        return self.data.certificate(M, np.ravel(alpha), **self._certificate_args())

    def _family_repair(self, M):
        return 0.5 * (M + M.T) if np.any(M != M.T) else M

    def _update_parameters(self, values):
        self.data = self.data.with_gamma(float(values["gamma"]))


@fill_doc
def declared_problem(data):
    """The ICML 2007 problem exactly as printed, in the user's units, unsolved.

    Variables ``M`` (symmetric; ``log_det`` keeps it positive definite) and
    ``xi`` (one slack per pair, in ``data.pairs``' order); parameter
    ``gamma``; constraint ``pairs`` (``s_p (D_M(p) - xi_p) <= 0``), whose
    multipliers the certificate's dual bound uses.

    Parameters
    ----------
    data : ITMLData
        Within the exact path's size (:func:`check_exact_size`).

    {declared_returns_model}
    """
    check_instance(data, ITMLData, "data")
    check_exact_size(data)
    Phi, s, xi0, d = data.Phi, data.s, data.xi0, data.n_features
    # [declare:itml]
    M = cp.Variable((d, d), symmetric=True, name="M")
    xi = cp.Variable(len(s), name="xi")
    gamma = cp.Parameter(pos=True, value=data.gamma, name="gamma")
    D = cp.sum(cp.multiply(Phi @ M, Phi), axis=1)          # D_M(p), one per pair
    constraints = {"pairs": cp.multiply(s, D - xi) <= 0}
    t = cp.multiply(1.0 / xi0, xi)                          # xi / xi0
    D_ld_M = cp.sum(cp.multiply(data.M0_inv, M)) - cp.log_det(M) + data.logdet_M0 - d
    D_ld_xi = cp.sum(t - cp.log(t) - 1)
    problem = cp.Problem(cp.Minimize(D_ld_M + gamma * D_ld_xi),
                         list(constraints.values()))
    # [/declare]
    assert problem.is_dpp(), "ITML's declared problem must be DPP"
    return _ITMLDeclared(
        family="itml", paper=PAPER, equation="Sec. 4 (Eq. 4.1)", problem=problem,
        variables={"M": M, "xi": xi}, parameters={"gamma": gamma},
        constraints=constraints, metric_key="M", data=data)


def solve_exact(data, *, solvers=SOLVERS, tol=1e-9):
    """Certified exact solution of ITML.

    Parameters
    ----------
    data : ITMLData
    solvers : sequence of str
        Clarabel first, SCS as fallback.
    tol : float
        Solver tolerance (the certificate is judged at the package's).

    Returns
    -------
    SolverResult
        ``method="exact"``, ``status="optimal"``; ``info["alpha"]`` (the
        :attr:`~cvxmetric.result.SolverResult.dual`) holds the multipliers
        of the pair constraints.

    Raises
    ------
    ProblemSizeError
        Naming ``data``, above the exact path's size.
    CertificateError, SolverError
        When no solver's point passes the certificate.
    """
    dp = declared_problem(data)
    result = certified_result(dp, solvers=solvers, tol=tol)
    alpha = dp._dual("pairs")
    result.info["alpha"] = np.maximum(np.ravel(alpha), 0.0)
    return result

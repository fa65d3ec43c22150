"""GMML, exact: Eq. 13 of Zadeh, Hosseini, Sra (ICML 2016) in CVXPY, and
its certified solve.

The problem as printed (the regularised GMML, ``t = 1/2``)::

    minimise_{M PD}  tr(M A_S) + tr(M^{-1} A_D)
                     + lam (tr(M M0^{-1}) + tr(M^{-1} M0) - 2d)

``tr(M^{-1} Y Y^T)`` is CVXPY's ``matrix_frac(Y, M)``, with ``Y`` a factor
of ``A_D`` (of ``M0``) from its eigendecomposition; ``lam`` is a
``cp.Parameter`` (the problem is DPP).  The certified solve runs the
package's certified path (Clarabel, SCS as fallback) and judges the point
by :meth:`GMMLData.certificate` (the closed-form lower bound).  The
weighted mean ``t != 1/2`` minimises a geodesically convex,
not a convex, objective: it has no declared problem here, and its fast
path (the closed form) is certified by its own bound.
"""

import cvxpy as cp
import numpy as np

from .._docs import fill_doc
from .._exact import SOLVERS
from .._extend import certified_result
from .._validation import check_instance
from ..model import DeclaredProblem
from ..result import NotAttainedError, ProblemSizeError
from ._problem import GMMLData
from .._settings import GMML_EXACT_MAX_FEATURES as EXACT_MAX_FEATURES

__all__ = ["solve_exact", "declared_problem", "check_exact", "PAPER",
           "EXACT_MAX_FEATURES"]

#: The paper, as :class:`~cvxmetric.model.DeclaredProblem` cites it.
PAPER = "Zadeh, Hosseini, Sra: Geometric mean metric learning (ICML 2016)"


def _factor(A):
    """``Y`` with ``Y Y^T = A`` (symmetric PSD), its zero columns dropped."""
    w, V = np.linalg.eigh(0.5 * (A + A.T))
    keep = w > 1e-14 * max(1.0, w[-1])
    return V[:, keep] * np.sqrt(w[keep])


def check_exact(data, name="data"):
    """The exact path's refusals: ``t != 1/2`` (ValueError naming ``t``),
    more than :data:`EXACT_MAX_FEATURES` features (ProblemSizeError), an
    infimum not attained (NotAttainedError)."""
    if data.t != 0.5:
        raise ValueError(f"t: the exact path declares Eq. 13, the convex problem of "
                         f"t = 1/2; t = {data.t:g} is the geodesic's point (the weighted mean), "
                         f"solved in closed form by solver='fast'.")
    if data.n_features > EXACT_MAX_FEATURES:
        raise ProblemSizeError(
            f"{name}: GMML's exact path declares matrix_frac of a d x d matrix; d = "
            f"{data.n_features} is above EXACT_MAX_FEATURES = {EXACT_MAX_FEATURES}. "
            f"Use solver='fast' (the closed form, certified).")
    why = data.attained()
    if why is not None:
        raise NotAttainedError(why)


class _GMMLDeclared(DeclaredProblem):
    def _family_certificate(self, M):
        return self.data.certificate(M, **self._certificate_args())

    def _update_parameters(self, values):
        self.data = self.data.with_params(lam=float(values["lam"]))


@fill_doc
def declared_problem(data):
    """Eq. 13 exactly as printed, in the user's units, unsolved.

    Variable ``M`` (symmetric; ``matrix_frac`` keeps it positive definite);
    parameter ``lam``; no constraint.

    Parameters
    ----------
    data : GMMLData
        ``t = 1/2``.

    {declared_returns_model}
    """
    check_instance(data, GMMLData, "data")
    if data.t != 0.5:
        check_exact(data)
    d = data.n_features
    A_S, M0_inv = data.A_S, data.M0_inv
    Y_D, Y_0 = _factor(data.A_D), _factor(data.M0)
    # [declare:gmml-eq13]
    M = cp.Variable((d, d), symmetric=True, name="M")
    lam = cp.Parameter(nonneg=True, value=data.lam, name="lam")
    similar = cp.sum(cp.multiply(A_S, M))                   # tr(M A_S)
    dissimilar = cp.matrix_frac(Y_D, M)                     # tr(M^{-1} A_D)
    d_sld = cp.sum(cp.multiply(M0_inv, M)) + cp.matrix_frac(Y_0, M) - 2 * d
    problem = cp.Problem(cp.Minimize(similar + dissimilar + lam * d_sld))
    # [/declare]
    assert problem.is_dpp(), "GMML's declared problem must be DPP"
    return _GMMLDeclared(
        family="gmml", paper=PAPER, equation="Eq. 13", problem=problem,
        variables={"M": M}, parameters={"lam": lam}, constraints={},
        metric_key="M", data=data)


def solve_exact(data, *, solvers=SOLVERS, tol=1e-9, verbose=False):
    """Certified exact solution of GMML's Eq. 13 (``t = 1/2``).

    Parameters
    ----------
    data : GMMLData
    solvers : sequence of str
    tol : float
    verbose : bool
        Accepted for the registry's contract.

    Returns
    -------
    SolverResult

    Raises
    ------
    ValueError
        Naming ``t`` when ``t != 1/2``.
    ProblemSizeError
        Above :data:`EXACT_MAX_FEATURES` features.
    NotAttainedError
        When a scatter matrix (with the regulariser) is singular.
    """
    check_instance(data, GMMLData, "data")
    check_exact(data)
    return certified_result(declared_problem(data), solvers=solvers, tol=tol)

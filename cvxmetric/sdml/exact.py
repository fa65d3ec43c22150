"""SDML, exact: the graphical-lasso problem of Qi et al. (ICML 2009) in
CVXPY, and its certified solve.

The problem as printed (the l1-penalized LogDet problem with ``P = M0^{-1} + eta X^T L X``, in
metric-learn's form)::

    minimise_{M PD}  tr(M P0) + eta tr(M K) - log det M + lam sum_{i != j} |M_ij|

with ``P0 = M0^{-1}`` and ``K = sum_p y_p phi_p phi_p^T`` constants and
``eta`` (``balance_param``), ``lam`` (``sparsity_param``) CVXPY parameters
(the problem is DPP).  ``log_det`` takes the symmetric variable ``M``; the
L1 term is ``2 lam ||upper_tri(M)||_1`` (``M`` symmetric), one vectorised
atom.  The certified solve (:func:`solve_exact`) runs the package's
certified path (Clarabel, SCS as fallback) and judges the point by
:meth:`SDMLData.certificate` (the graphical lasso's dual bound at
``M^{-1}``); a problem unbounded below along an explicit ray
(:meth:`SDMLData.unbounded_direction`) is refused before any solve with
:class:`~cvxmetric.result.UnboundedError`, and a solver's unboundedness
claim is accepted when a second solver confirms it.
"""

import cvxpy as cp

from .._docs import fill_doc
from .._exact import SOLVERS
from .._extend import certified_result
from .._validation import check_instance
from ..model import DeclaredProblem
from ..result import ProblemSizeError, UnboundedError
from ._problem import SDMLData
from .._settings import SDML_EXACT_MAX_FEATURES as EXACT_MAX_FEATURES

__all__ = ["solve_exact", "declared_problem", "check_bounded", "check_exact_size",
           "PAPER", "EXACT_MAX_FEATURES"]


#: The paper, as :class:`~cvxmetric.model.DeclaredProblem` cites it.
PAPER = ("Qi, Tang, Zha, Chua, Zhang: An efficient sparse metric learning in "
         "high-dimensional space via l1-penalized log-determinant regularization "
         "(ICML 2009)")


def check_exact_size(data, name="data"):
    """ProblemSizeError naming ``name`` above :data:`EXACT_MAX_FEATURES`."""
    if data.n_features > EXACT_MAX_FEATURES:
        raise ProblemSizeError(
            f"{name}: SDML's exact path declares log_det of a d x d matrix; d = "
            f"{data.n_features} is above EXACT_MAX_FEATURES = {EXACT_MAX_FEATURES}. "
            f"Use solver='fast' (scikit-learn's graphical lasso, certified).")


def check_bounded(data):
    """UnboundedError (naming ``balance_param``) when ``data`` has a ray
    along which SDML's objective goes to ``-inf``."""
    v = data.unbounded_direction()
    if v is not None:
        raise UnboundedError(data.unbounded_message(v))


class _SDMLDeclared(DeclaredProblem):
    """The l1-penalized LogDet problem as printed; the certificate needs no multiplier (``M^{-1}``
    is the dual point)."""

    def _family_certificate(self, M):
        return self.data.certificate(M, **self._certificate_args())

    def _update_parameters(self, values):
        self.data = self.data.with_params(**{k: float(v) for k, v in values.items()})


@fill_doc
def declared_problem(data):
    """SDML's problem exactly as printed, in the user's units, unsolved.

    Variable ``M`` (symmetric; ``log_det`` keeps it positive definite);
    parameters ``balance_param`` and ``sparsity_param``; no constraint
    (``M PD`` is the domain of ``log_det``).

    Parameters
    ----------
    data : SDMLData

    {declared_returns_model}
    """
    check_instance(data, SDMLData, "data")
    d = data.n_features
    P0, K = data.P0, data.K
    # [declare:sdml-eq8]
    M = cp.Variable((d, d), symmetric=True, name="M")
    eta = cp.Parameter(nonneg=True, value=data.balance_param, name="balance_param")
    lam = cp.Parameter(nonneg=True, value=data.sparsity_param, name="sparsity_param")
    fit = cp.sum(cp.multiply(P0, M)) + eta * cp.sum(cp.multiply(K, M))
    l1_off = 2 * cp.norm1(cp.upper_tri(M))  # sum_{i != j} |M_ij|, M symmetric
    problem = cp.Problem(cp.Minimize(fit - cp.log_det(M) + lam * l1_off))
    # [/declare]
    assert problem.is_dpp(), "SDML's declared problem must be DPP"
    return _SDMLDeclared(
        family="sdml", paper=PAPER, equation="the l1-penalized LogDet problem", problem=problem,
        variables={"M": M}, parameters={"balance_param": eta, "sparsity_param": lam},
        constraints={}, metric_key="M", data=data)


def solve_exact(data, *, solvers=SOLVERS, tol=1e-9, verbose=False):
    """Certified exact solution of SDML.

    Parameters
    ----------
    data : SDMLData
    solvers : sequence of str
        Clarabel first, SCS as fallback.
    tol : float
        Solver tolerance (the certificate is judged at the package's).
    verbose : bool
        Accepted for the registry's contract (the conic solvers run quiet).

    Returns
    -------
    SolverResult
        ``method="exact"``, certified.

    Raises
    ------
    UnboundedError
        When the objective is unbounded below (an explicit ray, or two
        solvers agreeing).
    ProblemSizeError
        Naming ``data``, above :data:`EXACT_MAX_FEATURES` features.
    CertificateError, SolverError
        As :meth:`~cvxmetric.model.DeclaredProblem.solve_certified`.
    """
    check_instance(data, SDMLData, "data")
    check_bounded(data)
    check_exact_size(data)
    return certified_result(declared_problem(data), solvers=solvers, tol=tol)

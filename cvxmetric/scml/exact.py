"""SCML, exact: the AAAI 2014 problem in CVXPY, and its certified solve.

The problem as printed (Shi, Bellet, Sha, "Sparse compositional metric
learning", AAAI 2014, the global formulation), with the hinge's slacks
``xi`` so that the margin constraints carry the multipliers ``a / T`` of
the dual bound::

    minimise_{w, xi}  (1/T) sum_t xi_t + beta sum_i w_i
    subject to        xi >= 1 + C w,   xi >= 0,   w >= 0

(``||w||_1 = sum_i w_i`` on ``w >= 0``), ``C`` the (T, K) matrix of
distance differences, precomputed (:attr:`SCMLData.C`); ``beta`` is a
``cp.Parameter`` (the problem is DPP).  The certified path
(:func:`solve_exact`) runs Clarabel, then SCS, and accepts a point when
:meth:`SCMLData.certificate` passes with the solver's multipliers.  An
interior-point dual meets the dual constraints ``beta + C^T a / T >= 0``
to about its tolerance, which the bound pays for as ``1 / beta`` times the
violation (``beta = 1e-5``: a 1e-9 violation costs 1e-4); where that is
what stops the certificate, the multipliers are polished by the simplex
method on the same LP (:func:`simplex_multipliers`: HiGHS on the
triplets the conic solution leaves active or near), whose dual is exactly
feasible up to round-off, and the better bound is kept.
"""

import cvxpy as cp
import numpy as np

from .._docs import fill_doc
from .._exact import SOLVERS
from .._extend import certified_result
from .._trace import record
from .._validation import check_instance
from ..model import DeclaredProblem, MahalanobisMetric
from ..result import ProblemSizeError
from ._problem import SCMLData
from .._settings import SCML_EXACT_MAX_ENTRIES as EXACT_MAX_ENTRIES

__all__ = ["solve_exact", "declared_problem", "check_exact_size", "simplex_multipliers",
           "EXACT_MAX_ENTRIES", "PAPER"]

#: The paper, as :class:`~cvxmetric.model.DeclaredProblem` cites it.
PAPER = "Shi, Bellet, Sha: Sparse compositional metric learning (AAAI 2014)"


def check_exact_size(data, name="data"):
    """ProblemSizeError naming ``name`` above :data:`EXACT_MAX_ENTRIES`."""
    size = data.n_triplets * data.n_basis
    if size > EXACT_MAX_ENTRIES:
        raise ProblemSizeError(
            f"{name}: SCML's exact path declares the dense (n_triplets, n_basis) "
            f"matrix C; these data have {data.n_triplets} x {data.n_basis} = {size} "
            f"entries, above EXACT_MAX_ENTRIES = {EXACT_MAX_ENTRIES}. Use "
            f"solver='fast' (certified) or fewer triplets or basis vectors.")


def simplex_multipliers(data, rows=None, cols=None, *, tol=1e-10):
    """The LP restricted to the triplets ``rows`` and the basis vectors
    ``cols`` (default all) solved by HiGHS's dual simplex: ``(w, a)`` with
    ``w`` zero off ``cols`` and ``a`` the hinge multipliers of every
    triplet (0 off ``rows``), a vertex of the restricted dual, feasible
    there up to round-off.

    Parameters
    ----------
    data : SCMLData
    rows : ndarray of int, optional
    cols : ndarray of int, optional
    tol : float
        HiGHS's primal and dual feasibility tolerances.

    Returns
    -------
    w : ndarray of shape (n_basis,)
    a : ndarray of shape (n_triplets,)
    """
    from scipy.optimize import linprog

    T, K = data.n_triplets, data.n_basis
    rows = np.arange(T) if rows is None else np.asarray(rows)
    cols = np.arange(K) if cols is None else np.asarray(cols)
    # the restricted dual, whose simplex basis has one row per basis vector
    # (not one per triplet): maximise sum(y) over 0 <= y <= 1/T with
    # beta + C^T y >= 0; w is the multiplier of its constraints
    res = linprog(-np.ones(rows.size), A_ub=-data.block(rows, cols).T,
                  b_ub=np.full(cols.size, data.beta), bounds=(0.0, 1.0 / T),
                  method="highs-ds",
                  options={"primal_feasibility_tolerance": tol,
                           "dual_feasibility_tolerance": tol, "presolve": True})
    if res.status != 0:
        raise RuntimeError(f"HiGHS: {res.message}")
    w = np.zeros(K)
    w[cols] = np.maximum(-res.ineqlin.marginals, 0.0)
    a = np.zeros(T)
    a[rows] = np.clip(T * res.x, 0.0, 1.0)
    return w, a


@fill_doc
def solve_exact(data, *, solvers=SOLVERS, tol=1e-9):
    """Certified exact solution of SCML (module docstring).

    Parameters
    ----------
    data : SCMLData
        At most :data:`EXACT_MAX_ENTRIES` entries of ``C``.
    solvers : sequence of str
        Clarabel first, SCS as fallback.
    tol : float
        Solver tolerance.

    Returns
    -------
    SolverResult
        ``M = sum_i w_i b_i b_i^T``; ``info["w"]`` the weights and
        ``info["a"]`` the multipliers of the certificate.
    """
    check_instance(data, SCMLData, "data")
    dp = declared_problem(data)
    result = certified_result(dp, solvers=solvers, tol=tol)
    result.info.update(w=dp.weights(), a=dp.multipliers())
    return result


# ---------------------------------------------------------------------------
# The declared problem (cvxmetric.model's contract)
# ---------------------------------------------------------------------------


class _SCMLDeclared(DeclaredProblem):
    """The LP as printed; the metric variable is the weight vector ``w``,
    ``M`` (:attr:`M`, :meth:`matrix`) is ``B^T diag(w) B``.  The family's
    objective and certificate take the weights (``certificate(w)``)."""

    _polished = None

    @property
    def diagonal(self):
        return False

    @property
    def n_features(self):
        return self.data.n_features

    @property
    def M(self):
        B = self.data.basis
        return B.T @ cp.diag(self.variable) @ B

    def weights(self):
        """The solved weights, clipped at 0 (the point certified)."""
        val = self.variable.value
        if val is None:
            raise ValueError("w: has no value; call solve() first.")
        return np.maximum(np.asarray(val, dtype=float), 0.0)

    def matrix(self):
        """``M = sum_i w_i b_i b_i^T`` at the solved weights."""
        return self.data.metric(self.weights())

    def metric(self, w=None, preprocessor=None):
        M = self.matrix() if w is None else self.data.metric(self._check_matrix(w))
        return MahalanobisMetric(M, preprocessor=preprocessor).fit()

    def _check_matrix(self, w):
        """The weights: the solved ones (default) or ``w`` (n_basis,)."""
        if w is None:
            return self.weights()
        return self.data.check_weights(w, "w")

    def multipliers(self):
        """The hinge multipliers ``a`` of the certificate (the polished ones
        when the polish ran and bounds better)."""
        if self._polished is not None:
            return self._polished
        y = self._dual("margin")
        return None if y is None else self.data.n_triplets * np.ravel(y)

    def _family_repair(self, M):
        # the weights clipped at 0: a new object, so the variable holds them
        return self.weights()

    def _family_certificate(self, w):
        a = self.multipliers()
        if a is None:
            self._warn_no_multipliers()
        return self.data.certificate(w, a, **self._certificate_args())

    def _family_sharpen(self, w, cert):
        """Polish the multipliers by the simplex method (module docstring)
        when the conic ones leave a gap."""
        if cert.passed or cert.max_violation > cert.tol_feas:
            return cert
        margin = self.data.margins(w)
        rows = np.flatnonzero(margin > -1e-3 * max(1.0, np.max(np.abs(margin))))
        try:
            _, a = simplex_multipliers(self.data, rows)
        except RuntimeError:
            return cert
        better = self.data.certificate(w, a, **self._certificate_args())
        record("simplex", "bound", gap=better.rel_gap,
               status="optimal" if better.passed else "failed")
        if better.dual_bound > cert.dual_bound:
            self._polished = a
            return better
        return cert

    def _update_parameters(self, values):
        self._polished = None
        self.data = self.data.with_beta(float(values["beta"]))


@fill_doc
def declared_problem(data):
    """SCML's LP exactly as printed, in the user's units, unsolved.

    Variables ``w`` (``w >= 0``, the metric variable; ``M = B^T diag(w)
    B``) and ``xi`` (one slack per triplet); parameter ``beta``;
    constraints ``margin`` (``xi >= 1 + C w``), ``slack`` (``xi >= 0``) and
    ``nonneg`` (``w >= 0``).  The certificate takes the weights.

    Parameters
    ----------
    data : SCMLData
        At most :data:`EXACT_MAX_ENTRIES` entries of ``C``.

    {declared_returns_model}
    """
    check_instance(data, SCMLData, "data")
    check_exact_size(data)
    T, K = data.C.shape
    # [declare:scml]
    w = cp.Variable(K, name="w")
    xi = cp.Variable(T, name="xi")
    beta = cp.Parameter(nonneg=True, value=data.beta, name="beta")
    C = data.C  # c_ti = (b_i^T (x_t - x_t+))^2 - (b_i^T (x_t - x_t-))^2
    constraints = {"margin": xi >= 1 + C @ w, "slack": xi >= 0, "nonneg": w >= 0}
    objective = cp.sum(xi) / T + beta * cp.sum(w)
    problem = cp.Problem(cp.Minimize(objective), list(constraints.values()))
    # [/declare]
    assert problem.is_dpp(), "SCML's declared problem must be DPP"
    return _SCMLDeclared(
        family="scml", paper=PAPER, equation="the global formulation (Sec. 3)",
        problem=problem, variables={"w": w, "xi": xi}, parameters={"beta": beta},
        constraints=constraints, metric_key="w", data=data)

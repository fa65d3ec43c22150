"""LMNN, exact: JMLR 2009's Eq. 13-14 in CVXPY, and its certified solve.

The problem as printed (Weinberger and Saul, "Distance metric learning for
large margin nearest neighbor classification", JMLR 2009, Eq. 14)::

    minimise_{M, xi}  (1 - mu) sum_{i, j ~> i} D_M(i, j) + mu sum_{i, j ~> i, l} (1 - y_il) xi_ijl
    subject to        D_M(i, l) - D_M(i, j) >= 1 - xi_ijl,   xi_ijl >= 0,   M PSD

with ``y_il = 1`` when ``i`` and ``l`` share a class: only the impostor
triplets (``y_il = 0``) carry a slack, and :func:`declared_problem` declares
those (a same-class ``l`` has a free slack that the objective does not
count).  ``mu`` is a ``cp.Parameter`` (the problem is DPP).

The certified solve (:func:`solve_exact`): divided by ``1 - mu``, the
problem is Qwise's Eq. 8 (Law, Thome, Cord 2016) with the regulariser
``tr(M A_T)`` over the target pairs, margin 1, hinge weight ``C_q = mu /
(1 - mu)`` and one quadruplet ``(i, j, i, l)`` per impostor triplet, so it
is solved by the Qwise exact path (its scale-free twin and margin-set
reduction, started from the registry's warm start), then certified again
in LMNN's units by :meth:`LMNNData.certificate` over every triplet, with
the multipliers ``gamma = (1 - mu) alpha`` of the Qwise solve.  A triplet
whose hinge does not depend on ``M`` (its two pairs join the same points:
duplicated samples) is left out of the Qwise problem; the certificate
counts it.  Features whose spreads span more than
:data:`FEATURE_SCALE_SPREAD` powers of two (raw wine: 0.1 to 1000) are
solved in per-feature units (each divided by the power of two nearest its
spread, the same targets, ``M`` mapped back exactly), where the conic
solvers are reliable; the certificate is computed in the user's units.
"""

import cvxpy as cp
import numpy as np

from .._docs import fill_doc
from .._exact import SOLVERS
from .._settings import EXACT_MAX_TRIPLETS, FEATURE_SCALE_SPREAD
from .._validation import check_instance
from ..constraints import Quadruplets, informative
from ..model import DeclaredProblem
from ..qwise._problem import QwiseData, _exponent
from ..qwise.exact import _sqdist_expr
from ..qwise.exact import solve_exact as _solve_qwise
from ..result import CertificateError, ProblemSizeError, SolverResult, Status
from ._problem import LMNNData

__all__ = ["solve_exact", "declared_problem", "check_exact_size", "PAPER",
           "EXACT_MAX_TRIPLETS"]

#: The paper, as :class:`~cvxmetric.model.DeclaredProblem` cites it.
PAPER = ("Weinberger, Saul: Distance metric learning for large margin nearest "
         "neighbor classification (JMLR 2009)")


def check_exact_size(data, name="data"):
    """ProblemSizeError naming ``name`` when ``data`` has more impostor
    triplets than the exact path declares (:data:`EXACT_MAX_TRIPLETS`)."""
    if data.n_triplets > EXACT_MAX_TRIPLETS:
        raise ProblemSizeError(
            f"{name}: LMNN's exact path declares one constraint per impostor "
            f"triplet; these data have {data.n_triplets} ({data.n_samples} samples, "
            f"k = {data.k}), above EXACT_MAX_TRIPLETS = {EXACT_MAX_TRIPLETS}. Use "
            f"fewer samples or a smaller k.")


def _as_qwise(data, ids=None):
    """Eq. 14 divided by ``1 - mu``, as Qwise's Eq. 8: ``(QwiseData, ids)``
    with ``ids`` the triplets (of :meth:`LMNNData.triplets`) it keeps; over
    the triplets ``ids`` only when given (sorted ids: the fast solver's
    working set, every other multiplier fixed at 0)."""
    if not np.all(np.isfinite(data.A_T)):
        raise ValueError("X: the pull term's matrix sum_{j ~> i} (x_i - x_j)(x_i - "
                         "x_j)^T overflows; rescale X.")
    if ids is None:
        ids, ijl = data.triplets()
    else:
        ijl = data.triplet_samples(ids)
    quads = np.column_stack([ijl[:, 0], ijl[:, 1], ijl[:, 0], ijl[:, 2]])
    keep = informative(data.X, quads)
    if not np.any(keep):
        raise ValueError("X: no impostor triplet depends on M (every impostor "
                         "duplicates a target neighbour); LMNN has nothing to learn.")
    try:
        qdata = QwiseData.from_sets(Quadruplets.create(data.X, quads[keep], 1.0),
                                    regularizer="similar", C_q=data.C, A_S=data.A_T)
    except ValueError as exc:
        if not str(exc).startswith("A_S:"):
            raise
        raise ValueError(
            "X: the target neighbours' differences leave a direction along which "
            "impostors differ unpenalised by the pull term (A_T is singular "
            "there), so the optimum need not be attained; use a larger k, or "
            "remove the features only the impostors vary along.") from None
    return qdata, ids[keep]


def _feature_scaled(data):
    """The same problem in per-feature units: ``(scaled, e)`` with ``scaled``
    over ``X_j / 2^e_j`` (``2^e_j`` the power of two nearest feature
    ``j``'s spread) and the same target neighbours, or ``(data, None)``
    when the spreads span at most :data:`FEATURE_SCALE_SPREAD` powers of
    two.  Distances are unchanged with ``M_ij = M'_ij / 2^(e_i + e_j)``
    (exactly: powers of two), so both problems have the same optimum and
    multipliers; an interior-point solve of features spread over 2^13
    (raw wine) is not reliable."""
    # the spreads of Xn = (X - mean) / 2^data._e, which cannot overflow
    e = np.array([_exponent(s) for s in np.std(data._Xn, axis=0)]) + data._e
    if np.ptp(e) <= FEATURE_SCALE_SPREAD:
        return data, None
    # on the data's device, the same powers of two (exact there too)
    scaled = data._like(np.ldexp(data.X, -e), data.targets,
                        transform=lambda X, put: X * put(np.ldexp(1.0, -e)))
    return scaled, e


def _from_feature_units(M, e):
    """``M`` of the per-feature units of :func:`_feature_scaled` in the
    user's: ``M_ij / 2^(e_i + e_j)``, exact."""
    return np.ldexp(M, -(e[:, None] + e[None, :]))


def solve_exact(data, *, warm_start=None, solvers=SOLVERS, tol=1e-9, verbose=False):
    """Certified exact solution of LMNN (Eq. 13-14) with fixed targets.

    Parameters
    ----------
    data : LMNNData
        At most :data:`EXACT_MAX_TRIPLETS` impostor triplets.
    warm_start : callable, optional
        ``warm_start(qwise_data) -> SolverResult``: the Qwise exact path's
        guess of its margin set (:func:`cvxmetric.qwise.exact.solve_exact`);
        the registry's :meth:`~cvxmetric.formulations.Formulation.solve_exact`
        hands over :func:`cvxmetric.qwise.fast.warm_start`.  Without it the
        declared Qwise model is solved: the same optimum.
    solvers : sequence of str
        Clarabel first, SCS as fallback.
    tol : float
        Solver tolerance.
    verbose : bool

    Returns
    -------
    SolverResult
        ``method="exact"``; its certificate is LMNN's over every triplet
        (:meth:`LMNNData.certificate`); ``info["gamma"]`` holds the
        multipliers of the triplets ``info["triplet_ids"]``.

    Raises
    ------
    ProblemSizeError
        Naming ``data``, above :data:`EXACT_MAX_TRIPLETS` triplets.
    CertificateError
        When the Qwise solution does not pass LMNN's certificate.
    """
    check_instance(data, LMNNData, "data")
    check_exact_size(data)
    scaled, e = _feature_scaled(data)
    qdata, ids = _as_qwise(scaled)
    result = _solve_qwise(qdata, warm_start=warm_start, solvers=solvers, tol=tol,
                          verbose=verbose)
    M = result.M if e is None else _from_feature_units(result.M, e)
    gamma = (1.0 - data.mu) * np.asarray(result.info["alpha"], dtype=float)
    qc = result.certificate
    cert = data.certificate(M, ids, gamma, solver=qc.solver,
                            solver_version=qc.solver_version,
                            tolerances=qc.tolerances, times=qc.times)
    info = {"gamma": gamma, "triplet_ids": ids,
            **{k: v for k, v in result.info.items() if k not in ("alpha", "model")},
            **(data.backend_info() or {})}
    if e is not None:
        info["feature_exponents"] = e
    out = SolverResult(M=M, status=Status.OPTIMAL, objective=cert.objective,
                       n_iter=result.n_iter, certificate=cert, method="exact",
                       info=info, time=result.time)
    if not cert.passed:
        raise CertificateError(
            f"LMNN: the Qwise solution does not pass LMNN's certificate (relative "
            f"gap {cert.rel_gap:.3g}).", out)
    return out


# ---------------------------------------------------------------------------
# The declared problem (cvxmetric.model's contract)
# ---------------------------------------------------------------------------


class _LMNNDeclared(DeclaredProblem):
    """Eq. 14 as printed, on the user's data."""

    def __init__(self, data, ids, **kwargs):
        self._ids = ids
        super().__init__(**kwargs, data=data)

    def _family_certificate(self, M):
        gamma = self._dual("impostors")
        if gamma is None:
            self._warn_no_multipliers()
            return self.data.certificate(M, **self._certificate_args())
        return self.data.certificate(M, self._ids, np.ravel(gamma),
                                     **self._certificate_args())

    def _update_parameters(self, values):
        self.data = self.data.with_mu(float(values["mu"]))


@fill_doc
def declared_problem(data):
    """Eq. 13-14 exactly as printed, in the user's units, unsolved.

    Variables ``M`` (symmetric, ``M >> 0``) and ``xi`` (one slack per
    impostor triplet, in :meth:`LMNNData.triplets`' order, ``xi >= 0``);
    parameter ``mu``; constraints ``impostors`` (``D_M(i, l) - D_M(i, j) >=
    1 - xi``) and ``psd``.  The certificate's dual bound uses the
    multipliers of ``impostors`` from the last solve.

    Parameters
    ----------
    data : LMNNData
        At most :data:`EXACT_MAX_TRIPLETS` impostor triplets.

    {declared_returns_model}
    """
    check_instance(data, LMNNData, "data")
    check_exact_size(data)
    ids, ijl = data.triplets()
    i, j, l = ijl.T
    X, d = data.X, data.n_features
    valid = data.targets >= 0
    anchors = np.repeat(np.arange(data.n_samples), data.k)[valid.ravel()]
    # [declare:lmnn-eq14]
    M = cp.Variable((d, d), symmetric=True, name="M")
    xi = cp.Variable(len(ids), nonneg=True, name="xi")
    mu = cp.Parameter(nonneg=True, value=data.mu, name="mu")
    P_target = X[anchors] - X[data.targets[valid]]  # one row per j ~> i
    P_near, P_far = X[i] - X[j], X[i] - X[l]        # one row per triplet
    margin = _sqdist_expr(M, P_far) - _sqdist_expr(M, P_near)
    constraints = {"impostors": margin >= 1 - xi, "psd": M >> 0}
    objective = (1 - mu) * cp.sum(_sqdist_expr(M, P_target)) + mu * cp.sum(xi)
    problem = cp.Problem(cp.Minimize(objective), list(constraints.values()))
    # [/declare]
    assert problem.is_dpp(), "LMNN's declared problem must be DPP"
    return _LMNNDeclared(
        data, ids, family="lmnn", paper=PAPER, equation="Eq. 13-14", problem=problem,
        variables={"M": M, "xi": xi}, parameters={"mu": mu},
        constraints=constraints, metric_key="M")

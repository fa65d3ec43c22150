"""SLR estimator: a bilinear similarity learned from class labels.

:class:`SLR` learns a general matrix ``M`` (d, d) -- neither symmetric nor
PSD -- so that the similarity ``x_a^T M x_b`` is at least ``delta1`` for
same-class pairs and at most ``delta2`` for different-class pairs, in the
squared-hinge sense of Eq. 4 of Qian et al. (2015).  It is *not* a
Mahalanobis learner: there is no distance, no ``transform`` and no
``get_mahalanobis_matrix``; use :meth:`SLR.pair_score`,
:meth:`SLR.pairwise_similarity` or :meth:`SLR.get_bilinear_matrix`.

==================  ===================================================  =================
``solver``          what runs                                            guarantee
==================  ===================================================  =================
``"newton"``        :class:`~cvxmetric.slr.SemismoothNewton` (default;    certified
                    dense Hessian up to ``r = 64``, matrix-free CG
                    above: runs at n = 6000, d = 1000)
``"exact"``         :func:`~cvxmetric.slr.solve_exact` (CVXPY)           certified
``"adaptive"``      :class:`~cvxmetric.slr.AdaptiveRegression`,           Algorithm 1,
                    ``n_iter`` iterations (the paper's ``T``)             gap reported
``"randomized"``    :func:`~cvxmetric.slr.randomized_slr` (Algorithm 2)   approximate
``"lowrank"``       :func:`~cvxmetric.slr.lowrank_slr` (Algorithm 3)      approximate
==================  ===================================================  =================

``status_ == "optimal"`` exactly when ``certificate_.passed`` (the
certified relative gap is below the package's tolerance, ``1e-6``); the
solver's own stopping reason is ``result_.raw_status``.  A failed exact
solve raises the solver's :class:`~cvxmetric.result.SolverError`; an
iterative solver that stops before its tolerance emits a
``ConvergenceWarning`` and the estimator keeps its last iterate with
``status_`` ``"max_iter_reached"`` (or ``"time_limit_reached"``).

``"randomized"`` and ``"lowrank"`` run a fixed number of iterations and
claim no lower bound: always ``"max_iter_reached"`` with
``certificate_.passed`` False, and a ``ConvergenceWarning`` that says so.

A ``dask.array`` ``X`` stays on its cluster with ``solver="newton"``: the
passes of Newton's method run as Dask tasks over its row chunks (see
:class:`~cvxmetric.slr.SLRData`); the other solvers compute it into memory.

Eq. 4 at ``s X`` is minimised by ``M(X) / s^2`` with the same value: the
problem is solved on ``X / 2^k`` and ``M`` returned in ``X``'s units.  A
``ValueError`` naming ``X`` is raised when no float64 ``M`` carries the
answer (data scaled beyond about ``1e+-155``; an ill-conditioned ``X``, e.g.
a common offset ``1e8`` times the spread) -- never a NaN or a wrong value.
"""

import dataclasses
import warnings
from numbers import Integral, Real

import cvxpy as cp
import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import (
    SOLVER_OPTION_CONSTRAINTS,
    BilinearMixin,
    LabelledMixin,
    given_options,
    solver_names,
    store_arguments,
    validate_labelled,
)
from .._docs import fill_doc
from .._solver import conic_verbose
from .._validation import check_instance
from ..formulations import formulation
from ..metrics import average_precision
from ..model import DeclaredProblem
from ..result import Status
from ._problem import SLRData, check_thresholds
from .exact import EXACT_MAX_COEFFICIENTS
from .fast import AdaptiveRegression, SemismoothNewton

__all__ = ["SLR", "SOLVER_NAMES", "SKETCH_NAMES", "declared_problem", "PAPER"]

#: The paper, as :class:`~cvxmetric.model.DeclaredProblem` cites it.
PAPER = ("Qian, Baytas, Jin, Jain, Zhu: Similarity learning via adaptive "
         "regression (2015)")

#: Values of the ``solver`` parameter (the registry's methods).
SOLVER_NAMES = solver_names("slr")

#: Values of the ``sketch`` parameter (Algorithm 2 / 3 compression).
SKETCH_NAMES = ("gaussian", "columns")


@fill_doc
class SLR(BilinearMixin, LabelledMixin, BaseEstimator):
    """Similarity learning via adaptive regression (Qian et al. 2015).

    Learns ``M`` minimising Eq. 4 over all ordered pairs of training samples
    (same-class pairs include ``i = j``)::

        sum_{y_i = y_j} [delta1 - x_i^T M x_j]_+^2 + sum_{y_i != y_j} [x_i^T M x_j - delta2]_+^2

    Parameters
    ----------
    delta1, delta2 : float, default=1.0, 0.0
        Thresholds for same-class and different-class similarities,
        ``delta1 > delta2``.
    solver : {"newton", "exact", "adaptive", "randomized", "lowrank"}, \
default="newton"
        See the table in the module docstring.  ``"newton"`` is certified to
        the same accuracy as ``"exact"`` and scales to thousands of samples.
    n_iter : int >= 1, default=10
        Iterations ``T`` of Algorithms 1, 2 and 3 (the paper uses 10).
        Ignored by ``"newton"`` and ``"exact"``.
    n_sketch : int >= 1, optional
        Sketch size ``m <= n_samples`` of Algorithm 2 (``None`` with
        ``"randomized"``: ``min(n_samples, 20 * n_features)``, where the
        compressed runs came within 2-3 mAP points of the uncompressed one,
        see docs/slr/decisions.md) and of Algorithm 3 (``None``: no compression).
    rank : int >= 1, optional
        Rank ``r <= n_features`` of ``M = L R^T`` for ``"lowrank"``
        (``None``: ``n_features``, no rank restriction: Algorithm 3 then
        converges to Eq. 4's optimum).  The values used are in
        ``result_.info["n_sketch"]`` and ``result_.info["rank"]``.
    sketch : {"gaussian", "columns"}, default="gaussian"
        Gaussian random projection or column sampling (Remark 3).
    tol : float > 0, optional
        Certified relative gap at which ``"newton"`` (default ``1e-10``) and
        ``"adaptive"`` (default ``1e-8``: stop before ``n_iter``) stop.
    max_iter : int >= 1, optional
        Iteration cap of ``"newton"`` (default 100).  Refused with
        ``"adaptive"``, ``"randomized"`` and ``"lowrank"``, which run
        ``n_iter`` iterations.
    random_state : int, RandomState instance or None, default=None
        Seeds the sketches of ``"randomized"`` and ``"lowrank"``.
    {verbose}

    Attributes
    ----------
    bilinear_matrix_ : ndarray of shape (n_features, n_features)
        The learned ``M`` (general: not symmetric, not PSD in general).
    objective_ : float
        Eq. 4 at ``M`` (for ``"randomized"`` / ``"lowrank"``: as their
        solver reports it).
    status_ : str
        A :class:`~cvxmetric.result.Status` word: ``"optimal"`` iff
        ``certificate_.passed``.
    n_iter_ : int
    certificate_ : Certificate
        Lower bound on the optimum of Eq. 4 and the relative gap.
    result_ : SolverResult
        The full solver result.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    {feature_names_in_}

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.preprocessing import StandardScaler
    >>> from cvxmetric.slr import SLR
    >>> X, y = load_iris(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> est = SLR().fit(X, y)
    >>> est.pair_score([[X[0], X[1]], [X[0], X[100]]]).round(2)
    array([ 1.48, -1.57])
    """

    _parameter_constraints = {
        "delta1": [Interval(Real, None, None, closed="neither")],
        "delta2": [Interval(Real, None, None, closed="neither")],
        "solver": [StrOptions(set(SOLVER_NAMES))],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
        "n_sketch": [Interval(Integral, 1, None, closed="left"), None],
        "rank": [Interval(Integral, 1, None, closed="left"), None],
        "sketch": [StrOptions(set(SKETCH_NAMES))],
        **SOLVER_OPTION_CONSTRAINTS,
    }

    def __init__(self, delta1=1.0, delta2=0.0, solver="newton", n_iter=10,
                 n_sketch=None, rank=None, sketch="gaussian", tol=None, max_iter=None,
                 random_state=None, verbose=False):
        store_arguments(self, locals())

    def _fit(self, X, y):
        """Solve Eq. 4 over every ordered pair of samples."""
        X, codes, classes, delta1, delta2 = self._prepare(X, y)
        result = self._solve(X, codes, delta1, delta2)
        if self.solver in ("randomized", "lowrank") and result.status != Status.OPTIMAL:
            # Algorithms 2 and 3 run the paper's fixed T iterations and claim
            # no lower bound: say so, as the iterative solvers do
            algorithm = "Algorithm 2" if self.solver == "randomized" else "Algorithm 3"
            warnings.warn(
                f"SLR(solver={self.solver!r}): {algorithm} ran the paper's fixed "
                f"T = {result.n_iter} iterations and claims no "
                f"bound on Eq. 4 (objective {result.objective:.6g}); status "
                f"{result.status!r}. solver='newton' certifies the optimum.",
                ConvergenceWarning, stacklevel=2)
        self._store_result(result)
        self.classes_ = classes
        self._log_fit(before=[("solver=%s", self.solver)])
        return self

    def declared_problem(self, X, y):
        """Eq. 4 on ``(X, y)`` as printed (user's units), without solving it.

        Validates as :meth:`fit` does (the solver-specific checks included);
        the estimator is not changed.

        {params_as_in_fit}

        Returns
        -------
        DeclaredProblem
            See :mod:`cvxmetric.model`; its ``metric()`` is a
            :class:`~cvxmetric.model.BilinearMetric` and its optimal value
            is the ``objective_`` of a certified ``fit``.
        """
        self._validate_params()
        X, codes, _, delta1, delta2 = clone(self)._prepare(X, y)
        return declared_problem(
            SLRData.from_labels(X, codes, delta1=delta1, delta2=delta2))

    def _prepare(self, X, y):
        """Validate :meth:`fit`'s input: ``(X, codes, classes, delta1, delta2)``."""
        # the passes of Newton and of Algorithms 2 and 3 run on X's namespace
        # (array_api_dispatch); Newton's as Dask tasks on a dask X
        X, y, classes, codes = validate_labelled(
            self, X, y, keep_namespace=self.solver in ("newton", "randomized", "lowrank"),
            keep_dask=self.solver == "newton")
        delta1, delta2 = check_thresholds(self.delta1, self.delta2)
        n, d = X.shape
        if self.n_sketch is not None and self.n_sketch > n:
            raise ValueError(
                f"n_sketch: must be <= n_samples = {n}, got {self.n_sketch}."
            )
        if self.solver == "lowrank" and self.rank is not None:
            if self.rank > d:
                raise ValueError(
                    f"rank: must be <= n_features = {d}, got {self.rank}."
                )
        return X, codes.reshape(-1), classes, delta1, delta2

    def _solve(self, X, codes, delta1, delta2):
        """Dispatch to the solver; returns its SolverResult."""
        if self.max_iter is not None and self.solver in ("adaptive", "randomized",
                                                         "lowrank"):
            # these run the paper's T iterations: a cap they would ignore is
            # refused rather than dropped
            raise ValueError(
                f"max_iter: solver={self.solver!r} runs n_iter iterations (the "
                f"paper's T); set n_iter instead (max_iter caps 'newton').")

        def data():
            return SLRData.from_labels(X, codes, delta1=delta1, delta2=delta2)

        return self._run_solver({
            "newton": lambda: SemismoothNewton(
                **given_options(tol=self.tol, maxiter=self.max_iter)).run(data()),
            # the registry's exact path: it hands over the Newton warm start
            "exact": lambda: formulation("slr").solve_exact(
                data(), verbose=conic_verbose(self.verbose)),
            "adaptive": lambda: AdaptiveRegression(
                **given_options(maxiter=self.n_iter, tol=self.tol)).run(data()),
            "randomized": lambda: self._randomized(X, codes, delta1, delta2),
            "lowrank": lambda: self._lowrank(X, codes, delta1, delta2),
        })

    def _randomized(self, X, codes, delta1, delta2):
        """Algorithm 2 (:func:`~cvxmetric.slr.randomized_slr`)."""
        from .randomized import randomized_slr

        n, d = X.shape
        # the solver's own default sketch size (see n_sketch)
        m = min(n, 20 * d) if self.n_sketch is None else self.n_sketch
        return randomized_slr(X, codes, m, sketch=self.sketch, n_iter=self.n_iter,
                              delta1=delta1, delta2=delta2,
                              random_state=check_random_state(self.random_state))

    def _lowrank(self, X, codes, delta1, delta2):
        """Algorithm 3 (:func:`~cvxmetric.slr.lowrank_slr`)."""
        from .lowrank import lowrank_slr

        extra = {}
        if self.n_sketch is not None:
            extra = {"n_sketch": self.n_sketch, "sketch": self.sketch}
        rank = X.shape[1] if self.rank is None else self.rank
        return lowrank_slr(X, codes, rank, n_iter=self.n_iter, delta1=delta1,
                           delta2=delta2, random_state=check_random_state(self.random_state),
                           **extra)

    def score(self, X, y):
        """Retrieval mean average precision of the learned similarity.

        Each sample of ``X`` is a query against the other samples of ``X``
        and the reference set ``fit`` kept (the training samples, or a
        class-stratified sample of
        :data:`~cvxmetric._base.MAX_SCORE_REFERENCE` of them), ranked by
        ``x_q^T M x`` in decreasing order; an item is relevant when it has
        the query's class.  Items equal to the query in every feature (the
        query itself, its copy in the reference) are left out.  The score
        is the mean over the queries of their average precision (the
        paper's measure), with :func:`~cvxmetric.metrics.average_precision`;
        queries with no relevant item are left out.  The reference makes a
        fold of one class scorable (its queries are ranked against the
        training classes).  Used by ``GridSearchCV`` and
        ``cross_val_score`` when no ``scoring`` is given.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
        y : array_like of shape (n_samples,)

        Returns
        -------
        score : float
        """
        check_is_fitted(self, "bilinear_matrix_")
        X, y = validate_data(self, X, y, reset=False, dtype=np.float64)
        items, codes, ids = self._score_items(X, y)
        n = X.shape[0]
        XM = X @ self.bilinear_matrix_
        ap = np.full(n, np.nan)
        for start in range(0, n, 256):  # (chunk, n_items) blocks at a time
            rows = np.arange(start, min(n, start + 256))
            S = XM[rows] @ items.T
            # the query's copies rank last and are not relevant: no effect
            copy = ids[rows][:, None] == ids[None, :]
            S = np.where(copy, S.min(axis=1, keepdims=True) - 1.0, S)
            rel = (codes[rows][:, None] == codes[None, :]) & ~copy
            ap[rows] = average_precision(S, rel)
        if np.all(np.isnan(ap)):
            raise ValueError("y: no sample shares its class with another sample "
                             "or the training reference; retrieval precision is "
                             "undefined.")
        return float(np.nanmean(ap))


# ---------------------------------------------------------------------------
# The declared problem (cvxmetric.model's contract).  It lives here, beside
# the estimator, and not in exact.py, whose models are the solver's internals.
# ---------------------------------------------------------------------------


class _SLRDeclared(DeclaredProblem):
    """Eq. 4 as printed, in the user's units."""

    def _update_parameters(self, values):
        d1 = values.get("delta1", self.data.delta1)
        d2 = values.get("delta2", self.data.delta2)
        d1, d2 = check_thresholds(d1, d2)  # ValueError naming them
        self.data = dataclasses.replace(self.data, delta1=d1, delta2=d2)

    def _family_certificate(self, M):
        # the bounds of SLRData.lower_bound need no multipliers
        return self.data.certificate(M, **self._certificate_args())


def declared_problem(data):
    """Eq. 4 exactly as printed, in the user's units, unsolved::

        minimise_M  sum_{y_i = y_j} [delta1 - x_i^T M x_j]_+^2
                  + sum_{y_i != y_k} [x_i^T M x_k - delta2]_+^2

    over all ordered pairs (same-class pairs include ``i = j``), with the
    variable ``M`` (d, d, general: neither symmetric nor PSD), the
    parameters ``delta1``, ``delta2`` and no constraints.  The similarities
    are vectorised, ``K = rowsum((X_a M) * X_b)`` over the rows ``a``,
    ``b`` of the pairs: ``n^2`` terms of ``d^2`` coefficients each, so this
    is for small problems.  The exact solver's models (:class:`SLRModel`)
    are smaller rewrites of the same problem.

    Parameters
    ----------
    data : SLRData

    Returns
    -------
    DeclaredProblem
        See :mod:`cvxmetric.model`; ``kind="bilinear"``: its ``metric()`` is
        a :class:`~cvxmetric.model.BilinearMetric`.

    Raises
    ------
    ValueError
        Naming ``X`` when ``n^2 d^2`` exceeds :data:`EXACT_MAX_COEFFICIENTS`.
    """
    check_instance(data, SLRData, "data")
    n, d = data.n_samples, data.n_features
    if n * n * d * d > EXACT_MAX_COEFFICIENTS:
        raise ValueError(
            f"X: Eq. 4 as printed has {n * n} hinge terms of {d * d} coefficients "
            f"each ({n * n * d * d:.3g} > EXACT_MAX_COEFFICIENTS = "
            f"{EXACT_MAX_COEFFICIENTS:.0e}); too large to declare. The estimator's "
            f"solvers are certified on the same Eq. 4 at any size.")
    X, y = data.X, data.y
    # [declare:slr-eq4]
    i, j = np.indices((n, n)).reshape(2, -1)
    same = y[i] == y[j]
    M = cp.Variable((d, d), name="M")
    delta1 = cp.Parameter(value=data.delta1, name="delta1")
    delta2 = cp.Parameter(value=data.delta2, name="delta2")

    def similarity(rows, cols):
        return cp.sum(cp.multiply(X[rows] @ M, X[cols]), axis=1)

    loss_same = cp.sum_squares(cp.pos(delta1 - similarity(i[same], j[same])))
    loss_diff = cp.sum_squares(cp.pos(similarity(i[~same], j[~same]) - delta2))
    problem = cp.Problem(cp.Minimize(loss_same + loss_diff))
    # [/declare]
    assert problem.is_dpp(), "SLR's declared problem must be DPP"
    return _SLRDeclared(
        family="slr", paper=PAPER, equation="Eq. 4", problem=problem,
        variables={"M": M}, parameters={"delta1": delta1, "delta2": delta2},
        constraints={}, metric_key="M", data=data, kind="bilinear")

"""RankDML estimators: scikit-learn / metric-learn front ends of Eq. 7, 9 and 11.

:class:`RankDML` is a *tuple learner* (metric-learn convention): ``fit``
takes triplets ``(query, relevant, irrelevant)`` -- "the irrelevant item
should be farther from the query than the relevant one, by a unit margin" --
as integer indices into ``preprocessor=X`` or as a 3-D array of points.
:class:`RankDMLSupervised` takes ``fit(X, y)`` with class labels: every
sample (or a random subset) is a query, same-class samples are its relevant
items, and the triplets are the critical ones of Sec. 5
(:func:`~cvxmetric.rankdml.critical_triplets`).

Both build :class:`~cvxmetric.rankdml.RankData` and hand it to a solver:

=============  ===========================================================  ===========
``solver``     what runs                                                    guarantee
=============  ===========================================================  ===========
``"exact"``    :func:`~cvxmetric.rankdml.solve_exact` (CVXPY)               certified
``"fast"``     :class:`~cvxmetric.rankdml.DiagonalInteriorPoint` (diagonal)  gap <= tol
               or :class:`~cvxmetric.rankdml.RankDualSolver` (full)
=============  ===========================================================  ===========

``tol`` and ``max_iter`` go to the fast solvers only (``None`` keeps their
defaults).  A failed solve raises the solver's
:class:`~cvxmetric.result.SolverError`; a fast solver stopping on
``max_iter`` emits a ``ConvergenceWarning`` and the estimator keeps its best
point with ``status_ == "max_iter_reached"``.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import (SOLVER_OPTION_CONSTRAINTS, LabelledMixin, MahalanobisMixin,
                     TripletsClassifierMixin, array_ndim, solver_names, store_arguments,
                     validate_labelled)
from .._base import fit_tuples
from .._docs import fill_doc
from .._solver import conic_verbose
from .._validation import check_samples
from ..constraints import Triplets, informative
from ..formulations import formulation
from ._pairs import critical_triplets
from ._problem import FORMS, REGULARIZERS, RankData
from .exact import declared_problem
from .fast import solve_fast

__all__ = ["RankDML", "RankDMLSupervised", "SOLVER_NAMES"]

#: Values of the estimators' ``solver`` parameter (the registry's methods).
SOLVER_NAMES = solver_names("rankdml")

_SHARED_CONSTRAINTS = {
    "regularizer": [StrOptions(set(REGULARIZERS))],
    "form": [StrOptions({f for forms in FORMS.values() for f in forms})],
    "lam": [Interval(Real, 0, None, closed="left")],
    "tau": [Interval(Real, 0, None, closed="neither"), None],
    "A0": ["array-like", None],
    "diagonal": ["boolean"],
    "solver": [StrOptions(set(SOLVER_NAMES))],
    **SOLVER_OPTION_CONSTRAINTS,
}


class _RankDMLBase(MahalanobisMixin, BaseEstimator):
    """Solve and store: the part both RankDML estimators share."""

    def _data(self, triplets):
        """:class:`RankData` of validated :class:`Triplets` and the parameters."""
        # Eq. 11's Laplacian is defined for a diagonal metric only
        diagonal = True if self.regularizer == "laplacian" else bool(self.diagonal)
        return RankData.from_triplets(
            triplets, regularizer=self.regularizer, lam=self.lam, tau=self.tau,
            A0=self.A0, diagonal=diagonal, form=self.form,
        )

    def _solve(self, triplets):
        """Solve on validated :class:`Triplets` and store the fitted state."""
        data = self._data(triplets)
        result = self._run_solver({
            # the registry's exact path: it hands over the fast warm start
            "exact": lambda: formulation("rankdml").solve_exact(
                data, verbose=conic_verbose(self.verbose)),
            "fast": lambda: solve_fast(data, tol=self.tol, maxiter=self.max_iter),
        })
        # a failure due to the float64 resolution of the hinges (huge
        # distances against the unit margin) is a ValueError naming X
        data.check_resolution(result)
        self._store_result(result, data.n_features)
        self.n_triplets_ = int(data.n_constraints)
        self._log_fit(before=[("regularizer=%s", self.regularizer), ("form=%s", self.form),
                              ("diagonal=%s", data.diagonal), ("solver=%s", self.solver)],
                      after=[("n_triplets=%d", data.n_constraints)])
        return self


@fill_doc(matrix="A")
class RankDML(TripletsClassifierMixin, _RankDMLBase):
    """Rank-based distance metric learning (Lee, Jin, Jain 2008), tuple learner.

    Learns a PSD matrix ``A`` (or ``diag(a)``) solving::

        min_A  sum_t [1 + d(q, r; A) - d(q, i; A)]_+  +  (lam / 2) Reg(A)

    over triplets ``t = (q, r, i)`` (query, relevant, irrelevant), with
    ``Reg`` the squared Frobenius norm (Eq. 7), Burg's divergence to the
    prior ``A0`` (Eq. 9), the LogDet divergence, or the Laplacian
    ``sum (a_i - mean(a))^2`` of a diagonal metric (Eq. 11).  Burg and
    LogDet, scale-invariant with the paper's normalised prior, are solved
    with ``tr(A) = tau`` fixed; Eq. 11 is solved as printed, an ordinary QP
    without a trace constraint (docs/rankdml/decisions.md).

    Parameters
    ----------
    regularizer : {"frobenius", "burg", "logdet", "laplacian"}, default="frobenius"
    form : {"printed", "spectral", "trace_fixed"}, default="printed"
        Which form of the regulariser.  ``"printed"``: the equation as the
        paper prints it -- Burg's first term ``||A A0hat^{-1}||_F^2`` and
        Eq. 11 without a trace constraint; the only form of ``"frobenius"``
        and ``"logdet"``.  ``"spectral"`` (``"burg"`` only): first term
        ``tr((A A0hat^{-1})^2)``, invariant under congruence (equal to the
        printed one when ``A0`` is isotropic).  ``"trace_fixed"``
        (``"laplacian"`` only): Eq. 11 with ``sum(a) = tau`` added.  Another
        combination raises ``ValueError`` naming ``form``.
    lam : float >= 0, default=1.0
        The paper's lambda: weight of ``Reg / 2`` against the sum of slacks.
        ``0`` (no regulariser, the first point of the paper's Fig. 7) is
        solved where the minimiser is bounded -- always with a fixed trace;
        without one only when no metric leaves every hinge argument
        non-increasing (else ``ValueError`` naming ``lam``) -- by
        ``solver="exact"``, or by ``"fast"`` for a diagonal metric.
    tau : float > 0, optional
        Fixed trace for ``"burg"``, ``"logdet"`` (default ``tr(A0)``) and
        ``"laplacian"`` with ``form="trace_fixed"`` (default
        ``n_features``).  Must be ``None`` otherwise.
    A0 : array_like of shape (n_features, n_features), optional
        Symmetric positive definite prior of ``"burg"`` / ``"logdet"``
        (default the identity).  Must be ``None`` for the others.
    diagonal : bool, default=False
        Learn a diagonal metric.  ``"laplacian"`` implies it (the value is
        then ignored); ``"burg"`` and ``"logdet"`` are full-matrix only.
    solver : {"exact", "fast"}, default="exact"
        Certified CVXPY solve, or the fast solver of the problem's kind.
    preprocessor : array_like of shape (n_samples, n_features), optional
        The sample matrix ``X`` that integer triplets index into.
    tol : float > 0, optional
        Target certified relative duality gap of the fast solvers (``None``:
        their default).  Ignored by ``"exact"``.
    max_iter : int >= 1, optional
        Iteration cap of the fast solvers.  Ignored by ``"exact"``.
    random_state : int, RandomState instance or None, default=None
        No RankDML solver is randomised; kept so that :class:`RankDML` and
        :class:`RankDMLSupervised` share hyperparameters.
    {verbose}

    Attributes
    ----------
    {mahalanobis_attributes}
    objective_ : float
        The objective at the solver's ``A`` in the paper's units.
    {status_}
    n_iter_ : int
    certificate_ : Certificate
    {result_}
    n_features_in_ : int
    n_triplets_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from cvxmetric.rankdml import RankDML
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> est = RankDML(preprocessor=X).fit([[0, 1, 2]])
    >>> est.components_.shape
    (2, 2)
    """

    _parameter_constraints = {
        **_SHARED_CONSTRAINTS,
        "preprocessor": ["array-like", None],
    }

    def __init__(self, regularizer="frobenius", lam=1.0, tau=None, A0=None,
                 diagonal=False, solver="exact", preprocessor=None, tol=None,
                 max_iter=None, random_state=None, verbose=False, form="printed"):
        store_arguments(self, locals())

    def fit(self, triplets, y=None):
        """Learn ``A`` from triplets.

        Parameters
        ----------
        triplets : array_like
            Integer indices (n_triplets, 3) into ``preprocessor``, or points
            (n_triplets, 3, n_features); rows ``(query, relevant,
            irrelevant)`` ask for ``d(q, i) >= d(q, r) + 1``.
        y : None
            Not used (the order within each triplet is its label, as in
            metric-learn); present for scikit-learn's ``fit(X, y)``.

        Returns
        -------
        self : RankDML
        """
        return self._solve(self._fit_triplets(triplets, y))

    def declared_problem(self, triplets, y=None):
        """Eq. 7 / 9 / 11 on these triplets, as printed, without solving it.

        {takes_what_fit_takes}

        {declared_returns}
        """
        self._validate_params()
        return declared_problem(self._data(self._fit_triplets(triplets, y)))

    def _fit_triplets(self, triplets, y):
        """Validate :meth:`fit`'s input: :class:`Triplets`."""
        if y is not None:
            raise ValueError(
                "y: RankDML.fit takes no labels (each triplet (q, r, i) already "
                "says the relevant r is closer to q than the irrelevant i).")
        fit_tuples(self, triplets, "triplets", 3, keep_namespace=False)
        points = array_ndim(triplets, "triplets") == 3
        # points carry their own samples; indices need the preprocessor
        X = None if points or self.preprocessor is None else check_samples(
            self.preprocessor, "preprocessor")
        return Triplets.from_tuples(triplets, preprocessor=X)


@fill_doc(learner="RankDML")
class RankDMLSupervised(LabelledMixin, TransformerMixin, _RankDMLBase):
    """RankDML learned from class labels: ``fit(X, y)``.

    Queries are ``n_queries`` random samples (all by default); each gets
    ``n_relevant`` random same-class samples as relevant items, the gallery
    is the whole of ``X``, and the triplets are the critical ones of Sec. 5:
    the ``n_top`` irrelevant (other-class) samples closest to the query
    under the baseline ``A0`` (Euclidean when ``A0`` is not given) and
    ``n_random`` random others.  Then Eq. 7 / 9 / 11 is solved as in
    :class:`RankDML`.

    Parameters
    ----------
    n_top : int >= 0, default=5
    n_random : int >= 0, default=5
    n_relevant : int >= 1, default=1
    n_queries : int >= 1, optional
        Default: every sample.
    regularizer, form, lam, tau, A0, diagonal, solver, tol, max_iter, verbose
        As in :class:`RankDML`.
    random_state : int, RandomState instance or None, default=None
        Seeds the choice of queries, relevant and random irrelevant items.

    Attributes
    ----------
    {supervised_attributes}
    n_triplets_ : int
        As in :class:`RankDML`.

    Notes
    -----
    Queries whose class has no other sample get no triplet; triplets whose
    relevant and irrelevant items are the same point (duplicate rows with
    different labels) have the constant slack 1 whatever the metric and are
    dropped.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from cvxmetric.rankdml import RankDMLSupervised
    >>> X, y = load_iris(return_X_y=True)
    >>> est = RankDMLSupervised(n_queries=20, random_state=0).fit(X, y)
    >>> est.transform(X).shape
    (150, 4)
    """

    _parameter_constraints = {
        **_SHARED_CONSTRAINTS,
        "n_top": [Interval(Integral, 0, None, closed="left")],
        "n_random": [Interval(Integral, 0, None, closed="left")],
        "n_relevant": [Interval(Integral, 1, None, closed="left")],
        "n_queries": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, n_top=5, n_random=5, n_relevant=1, n_queries=None,
                 regularizer="frobenius", lam=1.0, tau=None, A0=None, diagonal=False,
                 solver="exact", tol=None, max_iter=None, random_state=None,
                 verbose=False, form="printed"):
        store_arguments(self, locals())

    def _fit(self, X, y):
        """Select the critical triplets and solve Eq. 7 / 9 / 11."""
        return self._solve(self._sample(X, y))

    def _declare(self, X, y):
        """Eq. 7 / 9 / 11 on the constraints ``fit(X, y)`` samples."""
        return declared_problem(self._data(self._sample(X, y)))

    def _sample(self, X, y):
        """Validate ``(X, y)`` and select the critical triplets."""
        X, y, _, codes = validate_labelled(self, X, y, ensure_min_samples=2)
        if self.n_top + self.n_random == 0:
            raise ValueError("n_top, n_random: at least one irrelevant item per "
                             "query is needed (both are 0).")
        rng = check_random_state(self.random_state)
        n = X.shape[0]
        n_q = n if self.n_queries is None else min(int(self.n_queries), n)
        queries = np.sort(rng.choice(n, n_q, replace=False))
        queries, relevant = _relevant_items(codes, queries, self.n_relevant, rng)
        if len(queries) == 0:
            raise ValueError("y: no query has another sample of its class; "
                             "relevant items are impossible.")
        baseline = self.A0 if self.regularizer in ("burg", "logdet") else None
        t = critical_triplets(queries, relevant, np.arange(n), X, n_top=self.n_top,
                              n_random=self.n_random, A0=baseline, random_state=rng)
        # a triplet whose relevant and irrelevant items are the same point
        # (duplicate rows in two classes) has the constant hinge 1: it does
        # not depend on the metric, and Triplets refuses it
        useful = informative(X, t)
        if not np.any(useful):
            raise ValueError("X: every selected triplet compares a point with an "
                             "identical one; the data has no information on the "
                             "metric.")
        return Triplets.create(X, t[useful])


def _relevant_items(codes, queries, n_relevant, rng):
    """Per query, up to ``n_relevant`` random other samples of its class.

    Returns the queries that have at least one, and their relevant items
    (a list of index arrays, one per kept query).
    """
    kept, rel = [], []
    for c in np.unique(codes[queries]):  # one pass per class, not per query
        members = np.flatnonzero(codes == c)
        qs = queries[codes[queries] == c]
        k = min(n_relevant, len(members) - 1)
        if k <= 0:
            continue
        keys = rng.random_sample((len(qs), len(members)))
        keys[qs[:, None] == members[None, :]] = np.inf  # not the query itself
        pick = members[np.argsort(keys, axis=1)[:, :k]]  # (n_qs, k)
        kept.append(qs)
        rel.append(pick)
    if not kept:
        return np.zeros(0, dtype=np.intp), []
    qs = np.concatenate(kept)
    order = np.argsort(qs, kind="stable")
    rel_rows = [row for block in rel for row in block]
    return qs[order], [rel_rows[o] for o in order]

"""Constraint-based DML estimators: scikit-learn front ends of Eq. 1, 4 / 6, 10.

:class:`ConstraintDML` is a *pair learner* (metric-learn convention):
``fit(pairs, y)`` takes ``(query, item)`` pairs -- integer indices into
``preprocessor=X`` or a 3-D array of points -- labelled +1 (must-link: the
item is relevant to the query) or -1 (cannot-link).
:class:`ConstraintDMLSupervised` takes ``fit(X, y)`` with class labels and
samples the pairs itself.

Both build :class:`~cvxmetric.constraintdml.ConstraintData` and hand it to one of
two solvers, selected by ``solver``:

==========  =================================================  ===========
``solver``  what runs                                          guarantee
==========  =================================================  ===========
``"exact"`` :func:`~cvxmetric.constraintdml.solve_constraint_exact`  certified
``"fast"``  :class:`~cvxmetric.constraintdml.ConstraintDualSolver`   gap <= tol
==========  =================================================  ===========

``hard`` selects Eq. 1 (must-link distances summed) or Eq. 4 / 6 (must-link
hinge ``max(0, d - 1)``); ``diagonal`` restricts ``A = diag(a)`` (Eq. 10).
The cannot-links ``d_A >= 1`` are hard constraints in every variant: a
cannot-link of identical points makes the problem infeasible and ``fit``
raises :class:`~cvxmetric.result.InfeasibleError` naming it.  ``tol`` and
``max_iter`` go to the fast solver only (``None`` keeps its defaults).
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import (SOLVER_OPTION_CONSTRAINTS, LabelledMixin, MahalanobisMixin,
                     PairsClassifierMixin, array_ndim, default_n_constraints,
                     given_options, solver_names, store_arguments, validate_labelled)
from .._base import fit_tuples
from .._docs import fill_doc
from .._solver import conic_verbose
from .._validation import check_samples
from ..constraints import pairs_from_labels, tuples_to_indices
from ._problem import ConstraintData, check_pair_labels, declared_problem, solve_constraint_exact
from .fast import ConstraintDualSolver

__all__ = ["ConstraintDML", "ConstraintDMLSupervised", "CONSTRAINT_SOLVERS"]

#: Values of the estimators' ``solver`` parameter (the registry's methods).
CONSTRAINT_SOLVERS = solver_names("constraintdml")

_SHARED_CONSTRAINTS = {
    "hard": ["boolean"],
    "diagonal": ["boolean"],
    "lam": [Interval(Real, 0, None, closed="left")],
    "solver": [StrOptions(set(CONSTRAINT_SOLVERS))],
    **SOLVER_OPTION_CONSTRAINTS,
}


class _ConstraintBase(MahalanobisMixin, BaseEstimator):
    """Solve and store: the part both estimators share."""

    def _data(self, X, pairs, labels):
        """The canonical :class:`ConstraintData` of validated indices."""
        return ConstraintData.from_pairs(X, pairs, labels, hard=bool(self.hard),
                                         diagonal=bool(self.diagonal), lam=self.lam)

    def _solve(self, X, pairs, labels):
        """Solve Eq. 1 / 4 / 10 on validated indices and store the fit."""
        data = self._data(X, pairs, labels)
        options = given_options(tol=self.tol, maxiter=self.max_iter)
        result = self._run_solver({
            "exact": lambda: solve_constraint_exact(data, verbose=conic_verbose(self.verbose)),
            "fast": lambda: ConstraintDualSolver(**options).run(data),
        })
        self._store_result(result, data.n_features)
        self._log_fit(before=[("Eq. %s", data.equation), ("solver=%s", self.solver)],
                      after=[("n_pairs=%d", data.n_pairs)])
        return self


@fill_doc(matrix="A")
class ConstraintDML(PairsClassifierMixin, _ConstraintBase):
    """Constraint-based metric learning (Lee, Jin, Jain 2008, Sec. 3.1), pair learner.

    Learns a PSD matrix ``A`` (or a diagonal ``a >= 0``) from must-links
    ``S`` and cannot-links ``D``::

        hard=True  (Eq. 1):  min  sum_S d_A(q, x) + (lam/2) ||A||_F^2
        hard=False (Eq. 4):  min  sum_S max(0, d_A(q, x) - 1) + (lam/2) ||A||_F^2
        both:                s.t. d_A(q, x) >= 1 on D,  A PSD

    with ``d_A(q, x) = (q - x)^T A (q - x)`` (Eq. 2); ``diagonal=True`` is
    Eq. 10 (``A = diag(a)``, ``a >= 0``, ``(lam/2) ||a||^2``).

    Parameters
    ----------
    hard : bool, default=True
        Eq. 1 (True) or Eq. 4 / 6 (False).
    diagonal : bool, default=False
        Learn a diagonal metric (Eq. 10).
    lam : float >= 0, default=1.0
        Weight of the regulariser.  ``lam = 0`` is accepted by the exact
        solver only (the optimum is attained but need not be unique).
    solver : {"exact", "fast"}, default="exact"
        Certified CVXPY solve, or the working-set dual Newton solver.
    preprocessor : array_like of shape (n_samples, n_features), optional
        The sample matrix ``X`` that integer pairs index into.  Callables
        are not supported.
    tol : float > 0, optional
        Target certified relative duality gap of the fast solver
        (``None``: its default, 1e-7).  Ignored by ``"exact"``.
    max_iter : int >= 1, optional
        Working-set rounds of the fast solver (``None``: its default).
        Ignored by ``"exact"``.
    random_state : int, RandomState instance or None, default=None
        No solver of this model is randomised; kept so that
        :class:`ConstraintDML` and :class:`ConstraintDMLSupervised` share
        hyperparameters (metric-learn convention).
    {verbose}

    Attributes
    ----------
    {mahalanobis_attributes}
    objective_ : float
        The paper's objective at the solver's ``A``.
    {status_}
    n_iter_ : int
        Interior-point iterations (``"exact"``) or working-set rounds
        (``"fast"``).
    certificate_ : Certificate
        Dual bound, gap, constraint violation and smallest eigenvalue.
    result_ : SolverResult
        The full solver result (multipliers in ``result_.info``).
    n_features_in_ : int

    Raises
    ------
    InfeasibleError
        From ``fit``, when a cannot-link joins identical points (the hard
        constraint ``d_A >= 1`` cannot hold).

    Examples
    --------
    >>> import numpy as np
    >>> from cvxmetric.constraintdml.estimator import ConstraintDML
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    >>> pairs = [[0, 1], [0, 2], [0, 3]]
    >>> est = ConstraintDML(preprocessor=X).fit(pairs, [1, -1, -1])
    >>> round(float(est.pair_distance([[0, 2]])[0]) ** 2, 6)
    1.0
    """

    _parameter_constraints = {
        **_SHARED_CONSTRAINTS,
        "preprocessor": ["array-like", None],
    }

    def __init__(self, hard=True, diagonal=False, lam=1.0, solver="exact",
                 preprocessor=None, tol=None, max_iter=None, random_state=None,
                 verbose=False):
        store_arguments(self, locals())

    def fit(self, pairs, y, calibration_params=None):
        """Learn the metric from labelled ``(query, item)`` pairs, then
        calibrate ``threshold_``.

        Parameters
        ----------
        pairs : array_like
            Integer indices (n_pairs, 2) into ``preprocessor``, or points
            (n_pairs, 2, n_features) (identical points are merged into one
            sample).
        y : array_like of shape (n_pairs,)
            +1 (must-link) or -1 (cannot-link).
        {calibration_params}

        Returns
        -------
        self : ConstraintDML
        """
        X, idx, labels = self._fit_pairs(pairs, y, calibration_params)
        self._solve(X, idx, labels)
        return self._calibrate_after_fit(pairs, labels, calibration_params)

    def _declare(self, pairs, y, calibration_params):
        """Eq. 1 / 4 / 10 on these pairs, as printed (user's units), unsolved."""
        return declared_problem(self._data(*self._fit_pairs(pairs, y, calibration_params)))

    def _fit_pairs(self, pairs, y, calibration_params):
        """Validate :meth:`fit`'s input: ``(X, indices, labels)``."""
        self._check_calibration_params(calibration_params)
        fit_tuples(self, pairs, "pairs", 2, keep_namespace=False)
        points = array_ndim(pairs, "pairs") == 3
        X = self.preprocessor
        if not points and X is not None and not callable(X):
            X = check_samples(X, "preprocessor")
        X, idx = tuples_to_indices(pairs, "pairs", width=2,
                                   preprocessor=None if points else X)
        labels = check_pair_labels(y, idx.shape[0], name="y")
        return X, idx, labels


@fill_doc(learner="ConstraintDML")
class ConstraintDMLSupervised(LabelledMixin, TransformerMixin, _ConstraintBase):
    """Constraint-based metric learning from class labels: ``fit(X, y)``.

    Samples ``n_constraints`` pairs with
    :func:`~cvxmetric.pairs_from_labels` (half same-class pairs as
    must-links, half different-class pairs as cannot-links), then solves
    the problem of :class:`ConstraintDML`.

    Parameters
    ----------
    n_constraints : int >= 2, optional
        Number of pairs.  Default ``min(1000, 20 * n_samples)``.
    hard, diagonal, lam, solver, tol, max_iter
        As in :class:`ConstraintDML`.
    random_state : int, RandomState instance or None, default=None
        Seeds the pair sampling.
    verbose : bool or int, default=False
        As in :class:`ConstraintDML`.

    Attributes
    ----------
    {supervised_attributes}

    Notes
    -----
    Sampled pairs of identical points (possible only with duplicate rows in
    ``X``) are dropped: a must-link of identical points carries no
    information and a cannot-link of identical points would make the
    problem infeasible.  ``objective_`` is the objective over the kept pairs.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from cvxmetric.constraintdml.estimator import ConstraintDMLSupervised
    >>> X, y = load_iris(return_X_y=True)
    >>> est = ConstraintDMLSupervised(n_constraints=60, random_state=0).fit(X, y)
    >>> est.transform(X).shape
    (150, 4)
    """

    _parameter_constraints = {
        **_SHARED_CONSTRAINTS,
        "n_constraints": [Interval(Integral, 2, None, closed="left"), None],
    }

    def __init__(self, n_constraints=None, hard=True, diagonal=False, lam=1.0,
                 solver="exact", tol=None, max_iter=None, random_state=None,
                 verbose=False):
        store_arguments(self, locals())

    def _fit(self, X, y):
        """Sample the pairs and solve Eq. 1 / 4 / 6 / 10."""
        return self._solve(*self._sample(X, y))

    def _declare(self, X, y):
        """Eq. 1 / 4 / 6 / 10 on the constraints ``fit(X, y)`` samples."""
        return declared_problem(self._data(*self._sample(X, y)))

    def _sample(self, X, y):
        """Validate ``(X, y)`` and sample the pairs: ``(X, pairs, labels)``."""
        X, y, _, _ = validate_labelled(self, X, y, ensure_min_samples=2)
        n = default_n_constraints(X.shape[0], self.n_constraints)
        rng = check_random_state(self.random_state)
        pairs, labels = pairs_from_labels(y, n, random_state=rng)
        i, j = pairs.T
        keep = ~((i == j) | np.all(X[i] == X[j], axis=1))
        if not np.any(keep[labels == -1]):
            raise ValueError(
                "X: every sampled cannot-link joins identical points; the data "
                "cannot separate the classes."
            )
        return X, pairs[keep], labels[keep]

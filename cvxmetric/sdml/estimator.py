"""SDML estimators: scikit-learn / metric-learn front ends of Qi et al.'s
sparse distance metric learning (ICML 2009).

:class:`SDML` is a pairs learner (``fit(pairs, y)``, labels +1 / -1,
metric-learn's tuple API and ``preprocessor``); :class:`SDML_Supervised`
takes ``fit(X, y)`` with class labels and draws ``n_constraints`` pairs
(default ``20 n_classes^2``, metric-learn's) with
:func:`~cvxmetric.pairs_from_labels`.  Both take metric-learn 0.7's
keywords in its order (``balance_param, sparsity_param, prior, verbose,
preprocessor, random_state``; ``n_constraints`` for the supervised one),
then ``solver``:

==========  ===================================================  =========
``solver``  what runs                                            guarantee
==========  ===================================================  =========
``fast``    :func:`~cvxmetric.sdml.solve_fast`: scikit-learn's   certified
            graphical lasso (the paper's block coordinate
            descent), checked by SDML's dual bound
``exact``   :func:`~cvxmetric.sdml.solve_exact` (CVXPY)          certified
==========  ===================================================  =========

metric-learn shifts an indefinite ``P`` and runs the graphical lasso
anyway (warning, then often failing); here a ``P`` that makes the
objective unbounded below raises :class:`~cvxmetric.result.UnboundedError`
naming ``balance_param`` -- the problem as printed has no minimum -- and a
bounded one is solved as it is.  The default ``balance_param="auto"``
(metric-learn's is ``0.5``) keeps ``P`` definite, so the defaults fit data
as it comes.
"""

from numbers import Integral, Real

import numpy as np
from scipy.linalg import pinvh
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.datasets import make_spd_matrix
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import (
    LabelledMixin,
    MahalanobisMixin,
    PairsClassifierMixin,
    solver_names,
    store_arguments,
)
from .._docs import fill_doc
from .._pairs import PairsLearnerMixin, SupervisedPairsMixin
from ..formulations import formulation
from ._problem import SDMLData, check_prior
from .exact import declared_problem
from .fast import solve_fast

__all__ = ["SDML", "SDML_Supervised", "SOLVER_NAMES", "PRIOR_NAMES"]

#: Values of the estimators' ``solver`` parameter (the registry's methods).
SOLVER_NAMES = solver_names("sdml")

#: Values of ``prior`` given by name (metric-learn's).
PRIOR_NAMES = ("identity", "covariance", "random")

_CONSTRAINTS = {
    "balance_param": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
    "sparsity_param": [Interval(Real, 0, None, closed="left")],
    "prior": [StrOptions(set(PRIOR_NAMES)), "array-like"],
    "verbose": ["verbose"],
    "preprocessor": ["array-like", callable, None],
    "random_state": ["random_state"],
    "solver": [StrOptions(set(SOLVER_NAMES))],
}


class _SDMLBase(MahalanobisMixin, BaseEstimator):
    """Build the data, solve, store: what both SDML estimators share."""

    def _prior(self, X, idx):
        """The prior metric ``M0`` ``prior`` names, or None (identity):
        metric-learn's ``covariance`` is the inverse covariance of the
        pairs' distinct points, ``random`` a random SPD matrix
        (``make_spd_matrix`` with ``random_state``)."""
        prior, d = self.prior, X.shape[1]
        if isinstance(prior, str):
            if prior == "identity":
                return None
            if prior == "random":
                return make_spd_matrix(d, random_state=check_random_state(self.random_state))
            points = np.unique(X[np.unique(idx)], axis=0)
            cov = np.atleast_2d(np.cov(points, rowvar=False))
            w = np.linalg.eigvalsh(cov) if points.shape[0] > 1 else np.zeros(1)
            if w[0] <= 1e-12 * max(1.0, abs(w[-1])):
                raise ValueError(
                    "prior: 'covariance' needs the covariance of the pairs' points "
                    "to be positive definite (SDML's prior is its inverse); it is "
                    "singular here (fewer distinct points than features, or "
                    "collinear features).")
            return pinvh(cov)
        return check_prior(prior, d)

    def _data(self, X, idx, labels):
        for name in ("balance_param", "sparsity_param"):
            value = getattr(self, name)
            if isinstance(value, Real) and not np.isfinite(value):
                raise ValueError(f"{name}: must be finite, got {value!r}.")
        data = SDMLData(X, idx, labels, self.balance_param, self.sparsity_param,
                        prior=self._prior(X, idx))
        self.balance_param_ = data.balance_param
        return data

    def _declared(self, data):
        return declared_problem(data)

    def _solve(self, data):
        result = self._run_solver({
            "fast": lambda: solve_fast(data),
            "exact": lambda: formulation("sdml").solve_exact(data),
        })
        self._store_result(result, data.n_features)
        self._log_fit(before=[("solver=%s", self.solver)],
                      after=[("time=%.3gs", result.time)])
        return self


@fill_doc(matrix="M")
class SDML(PairsLearnerMixin, PairsClassifierMixin, _SDMLBase):
    """Sparse distance metric learning (Qi et al., ICML 2009), pairs learner.

    Learns ``M`` solving::

        min_{M PD}  tr(M P) - log det M + sparsity_param sum_{i != j} |M_ij|
        P = prior^{-1} + balance_param sum_p y_p (x_p1 - x_p2)(x_p1 - x_p2)^T

    Parameters
    ----------
    balance_param : float >= 0 or "auto", default="auto"
        Weight of the pairs' term in ``P``.  Too large a value makes the
        dissimilar pairs dominate ``P`` and the objective unbounded below:
        ``fit`` then raises ``UnboundedError``.  ``"auto"`` takes half the
        largest weight that keeps ``P`` positive definite, at most
        metric-learn's default ``0.5``
        (:func:`~cvxmetric.sdml._problem.auto_balance`): a bounded problem
        on data of any scale.  metric-learn's default, ``0.5``, makes the
        problem unbounded on standardised data and on most data as loaded.
    sparsity_param : float >= 0, default=0.01
        Weight of the off-diagonal L1 penalty (the graphical lasso's
        ``alpha``).
    prior : {"identity", "covariance", "random"} or array_like of shape \
(n_features, n_features), default="identity"
        The prior metric ``M0`` (positive definite): the identity, the
        inverse covariance of the pairs' points, a random SPD matrix, or a
        given matrix.
    verbose : bool or int, default=False
        Log the fit's outcome on the ``cvxmetric`` logger.
    preprocessor : array_like of shape (n_samples, n_features) or callable, \
optional
        Forms the points of pairs given as (n_pairs, 2) indicators.
    random_state : int, RandomState instance or None, default=None
        Seeds ``prior="random"``.
    solver : {"fast", "exact"}, default="fast"
        The certified graphical lasso, or the certified CVXPY solve.

    Attributes
    ----------
    {mahalanobis_attributes}
    balance_param_ : float
        The weight used (``balance_param``, or the one ``"auto"`` chose).
    objective_ : float
        SDML's objective at ``M``.
    {status_}
    n_iter_ : int
    certificate_ : Certificate
    {result_}
    threshold_ : float
    classes_ : ndarray of shape (2,)
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from cvxmetric import SDML
    >>> X = np.array([[0.0, 0.0], [0.2, 1.0], [1.0, 0.0], [1.1, 1.3]])
    >>> est = SDML(balance_param=0.1, preprocessor=X).fit(
    ...     [[0, 1], [2, 3], [0, 2], [1, 3]], [1, 1, -1, -1])
    >>> est.status_, est.components_.shape
    ('optimal', (2, 2))
    """

    _parameter_constraints = dict(_CONSTRAINTS)

    def __init__(self, balance_param="auto", sparsity_param=0.01, prior="identity",
                 verbose=False, preprocessor=None, random_state=None, solver="fast"):
        store_arguments(self, locals())


class SDML_Supervised(SupervisedPairsMixin, LabelledMixin, TransformerMixin, _SDMLBase):
    """SDML learned from class labels: ``fit(X, y)``.

    Draws ``n_constraints`` pairs with :func:`~cvxmetric.pairs_from_labels`
    (half same-class pairs, similar; half different-class pairs,
    dissimilar) and solves SDML as :class:`SDML` does.

    Parameters
    ----------
    balance_param, sparsity_param, prior
        As in :class:`SDML`.
    n_constraints : int >= 2, optional
        Number of pairs; default ``20 * n_classes^2`` (metric-learn's).
    verbose, preprocessor
        As in :class:`SDML`; a 1-D ``X`` holds indicators of samples.
    random_state : int, RandomState instance or None, default=None
        Seeds the pair sampling (and ``prior="random"``).
    num_constraints : int or "deprecated", default="deprecated"
        metric-learn's older spelling of ``n_constraints``: accepted with a
        ``FutureWarning``; giving both is an error.
    solver : {"fast", "exact"}, default="fast"

    Attributes
    ----------
    components_, mahalanobis_matrix_, balance_param_, objective_, status_, n_iter_, \
certificate_, result_, n_features_in_
        As in :class:`SDML`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from cvxmetric import SDML_Supervised
    >>> X, y = load_iris(return_X_y=True)
    >>> est = SDML_Supervised(random_state=0).fit(X, y)
    >>> est.status_, est.balance_param_ < 0.5
    ('optimal', True)
    """

    _parameter_constraints = {
        **_CONSTRAINTS,
        "n_constraints": [Interval(Integral, 2, None, closed="left"), None],
        "num_constraints": [Interval(Integral, 2, None, closed="left"),
                            StrOptions({"deprecated"})],
    }

    def __init__(self, balance_param="auto", sparsity_param=0.01, prior="identity",
                 n_constraints=None, verbose=False, preprocessor=None,
                 random_state=None, num_constraints="deprecated", solver="fast"):
        store_arguments(self, locals())

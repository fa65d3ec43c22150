"""GMML estimators: scikit-learn / metric-learn front ends of Zadeh,
Hosseini and Sra's geometric mean metric learning (ICML 2016).

:class:`GMML` is a pairs learner (``fit(pairs, y)``, labels +1 / -1,
metric-learn's tuple API and ``preprocessor``); :class:`GMMLSupervised`
takes ``fit(X, y)`` and draws ``n_constraints`` pairs (default ``20
n_classes^2``, as metric-learn's supervised pair learners) with
:func:`~cvxmetric.pairs_from_labels`.

==========  ===================================================  =========
``solver``  what runs                                            guarantee
==========  ===================================================  =========
``fast``    :func:`~cvxmetric.gmml.solve_fast`: the closed form  certified
            ``A^{-1} #_t B``
``exact``   :func:`~cvxmetric.gmml.solve_exact` (CVXPY, Eq. 13,  certified
            ``t = 1/2`` only)
==========  ===================================================  =========
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
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
from ._problem import GMMLData
from .exact import check_exact, declared_problem
from .fast import solve_fast

__all__ = ["GMML", "GMMLSupervised", "SOLVER_NAMES"]

#: Values of the estimators' ``solver`` parameter (the registry's methods).
SOLVER_NAMES = solver_names("gmml")

_CONSTRAINTS = {
    "lam": [Interval(Real, 0, None, closed="left")],
    "t": [Interval(Real, 0, 1, closed="both")],
    "M0": ["array-like", None],
    "verbose": ["verbose"],
    "preprocessor": ["array-like", callable, None],
    "solver": [StrOptions(set(SOLVER_NAMES))],
}


class _GMMLBase(MahalanobisMixin, BaseEstimator):
    """Build the data, solve, store."""

    def _data(self, X, idx, labels):
        for name in ("lam", "t"):
            value = getattr(self, name)
            if isinstance(value, Real) and not np.isfinite(value):
                raise ValueError(f"{name}: must be finite, got {value!r}.")
        M0 = None if self.M0 is None else np.asarray(self.M0, dtype=float)
        return GMMLData(X, idx, labels, lam=self.lam, t=self.t, M0=M0)

    def _declared(self, data):
        return declared_problem(data)

    def _solve(self, data):
        def exact():
            check_exact(data, "solver")
            return formulation("gmml").solve_exact(data)

        result = self._run_solver({"fast": lambda: solve_fast(data), "exact": exact})
        self._store_result(result, data.n_features)
        self._log_fit(before=[("solver=%s", self.solver), ("t=%g", data.t)],
                      after=[("time=%.3gs", result.time)])
        return self


@fill_doc(matrix="M")
class GMML(PairsLearnerMixin, PairsClassifierMixin, _GMMLBase):
    """Geometric mean metric learning (Zadeh et al., ICML 2016), pairs learner.

    Learns ``M = A^{-1} #_t B`` with ``A = A_S + lam M0^{-1}``, ``B = A_D +
    lam M0`` (``A_S``, ``A_D`` the scatter of the similar and dissimilar
    pairs' differences); at ``t = 1/2`` the minimiser of Eq. 13::

        min_{M PD}  tr(M A_S) + tr(M^{-1} A_D) + lam D_sld(M, M0)

    Parameters
    ----------
    lam : float >= 0, default=0.1
        Weight of the symmetrised LogDet regulariser toward ``M0``
        (``lam > 0`` makes the minimum always attained).
    t : float in [0, 1], default=0.5
        Position on the geodesic from ``A^{-1}`` to ``B`` (the weighted mean): the
        weight of the dissimilar pairs.
    M0 : array_like of shape (n_features, n_features), optional
        Prior metric, positive definite (default: identity).
    verbose : bool or int, default=False
    preprocessor : array_like of shape (n_samples, n_features) or callable, \
optional
        Forms the points of pairs given as (n_pairs, 2) indicators.
    solver : {"fast", "exact"}, default="fast"
        The certified closed form, or the certified CVXPY solve of Eq. 13.

    Attributes
    ----------
    {mahalanobis_attributes}
    objective_ : float
        Eq. 13's objective (``t = 1/2``) or the geodesic objective.
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
    >>> from cvxmetric import GMML
    >>> X = np.array([[0.0, 0.0], [0.2, 1.0], [1.0, 0.0], [1.1, 1.3]])
    >>> est = GMML(preprocessor=X).fit([[0, 1], [2, 3], [0, 2], [1, 3]],
    ...                                [1, 1, -1, -1])
    >>> est.status_, est.components_.shape
    ('optimal', (2, 2))
    """

    _parameter_constraints = dict(_CONSTRAINTS)

    def __init__(self, lam=0.1, t=0.5, M0=None, verbose=False, preprocessor=None,
                 solver="fast"):
        store_arguments(self, locals())


class GMMLSupervised(SupervisedPairsMixin, LabelledMixin, TransformerMixin, _GMMLBase):
    """GMML learned from class labels: ``fit(X, y)``.

    Draws ``n_constraints`` pairs with :func:`~cvxmetric.pairs_from_labels`
    (half same-class, similar; half different-class, dissimilar) and
    solves GMML as :class:`GMML` does.

    Parameters
    ----------
    lam, t, M0
        As in :class:`GMML`.
    n_constraints : int >= 2, optional
        Number of pairs; default ``20 * n_classes^2``.
    verbose, preprocessor
        As in :class:`GMML`; a 1-D ``X`` holds indicators of samples.
    random_state : int, RandomState instance or None, default=None
        Seeds the pair sampling.
    solver : {"fast", "exact"}, default="fast"

    Attributes
    ----------
    components_, mahalanobis_matrix_, objective_, status_, n_iter_, \
certificate_, result_, n_features_in_
        As in :class:`GMML`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from cvxmetric import GMMLSupervised
    >>> X, y = load_iris(return_X_y=True)
    >>> GMMLSupervised(random_state=0).fit(X, y).status_
    'optimal'
    """

    _parameter_constraints = {
        **_CONSTRAINTS,
        "n_constraints": [Interval(Integral, 2, None, closed="left"), None],
        "random_state": ["random_state"],
    }

    def __init__(self, lam=0.1, t=0.5, M0=None, n_constraints=None, verbose=False,
                 preprocessor=None, random_state=None, solver="fast"):
        store_arguments(self, locals())

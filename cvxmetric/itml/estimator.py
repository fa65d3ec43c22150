"""ITML estimators: scikit-learn / metric-learn front ends of Davis et al.'s
information-theoretic metric learning (ICML 2007).

:class:`ITML` is a *pairs learner* (metric-learn's convention):
``fit(pairs, y, bounds=None, calibration_params=None)`` takes pairs as
integer indices (n_pairs, 2) into ``preprocessor=X`` or as points
(n_pairs, 2, n_features), and labels ``y`` in {+1 (similar), -1
(dissimilar)}.  :class:`ITML_Supervised` takes ``fit(X, y, bounds=None)``
with class labels and draws the pairs as metric-learn 0.7 does (``Constraints
.positive_negative_pairs``: ``n_constraints`` distinct same-class pairs and
as many different-class pairs, default ``20 n_classes^2`` each; the same
pairs as metric-learn for the same integer ``random_state``).

Both build :class:`~cvxmetric.itml.ITMLData` and solve the ICML 2007
problem with the solver ``solver`` names:

===========  =====================================================  ===========
``solver``   what runs                                              guarantee
===========  =====================================================  ===========
``fast``     :class:`~cvxmetric.itml.ITMLDualNewton`: projected     certified
             Newton on the dual (the paper's ``lambda``)
``exact``    :func:`~cvxmetric.itml.solve_exact` (CVXPY)            certified
``bregman``  :class:`~cvxmetric.itml.ITMLBregman`: the paper's      reported
             Algorithm 1 with metric-learn's ``max_iter`` / ``tol``
===========  =====================================================  ===========

They take metric-learn 0.7's keywords in its order (``gamma, max_iter,
tol, prior, verbose, preprocessor, random_state`` and the deprecated
``convergence_threshold``; ``n_constraints`` and ``num_constraints`` for
:class:`ITML_Supervised`), with metric-learn's meaning: ``bounds`` are the
slacks' targets ``(u, l)`` compared with *squared* Mahalanobis distances,
by default the 5th and 95th percentiles of the Euclidean distances between
the pairs' distinct points; ``prior`` is ``M0``.  ``max_iter`` and ``tol``
are Algorithm 1's (``"bregman"``); the certified solvers are judged at the
package's tolerance whatever they are.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.datasets import make_spd_matrix
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import (LabelledMixin, MahalanobisMixin, PairsClassifierMixin, form_samples,
                     renamed_keyword, solver_names, store_arguments, validate_labelled)
from .._docs import fill_doc
from .._pairs import PairsInputMixin
from .._validation import check_psd_matrix
from ..formulations import formulation
from ._problem import ITMLData
from .exact import check_exact_size, declared_problem
from .fast import ITMLBregman, ITMLDualNewton

__all__ = ["ITML", "ITML_Supervised", "SOLVER_NAMES", "PRIOR_NAMES"]

#: Values of the estimators' ``solver`` parameter (the registry's methods).
SOLVER_NAMES = solver_names("itml")

#: Values of ``prior`` given by name (metric-learn's).
PRIOR_NAMES = ("identity", "covariance", "random")

_SHARED_CONSTRAINTS = {
    "gamma": [Interval(Real, 0, None, closed="neither")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="neither")],
    "prior": [StrOptions(set(PRIOR_NAMES)), "array-like"],
    "verbose": ["verbose"],
    "preprocessor": ["array-like", callable, None],
    "random_state": ["random_state"],
    "convergence_threshold": [Interval(Real, 0, None, closed="neither"),
                              StrOptions({"deprecated"})],
    "solver": [StrOptions(set(SOLVER_NAMES))],
}


def metric_learn_pairs(codes, n_constraints, random_state):
    """metric-learn 0.7's ``Constraints(y).positive_negative_pairs``:
    ``(a, b, c, d)``, the distinct same-class pairs ``(a, b)`` and
    different-class pairs ``(c, d)`` it draws (at most ``n_constraints``
    each, fewer with a warning when the classes do not allow them)."""
    rng = check_random_state(random_state)
    out = []
    for same in (True, False):
        ab, it = set(), 0
        while it < 10 and len(ab) < n_constraints:
            for a in rng.randint(codes.size, size=n_constraints - len(ab)):
                mask = codes[a] == codes if same else codes[a] != codes
                if same:
                    mask[a] = False
                choices = np.flatnonzero(mask)
                if choices.size:
                    ab.add((a, rng.choice(choices)))
            it += 1
        if len(ab) < n_constraints:
            warnings.warn(f"Only generated {len(ab)} {'positive' if same else 'negative'}"
                          f" constraints (requested {n_constraints})", UserWarning,
                          stacklevel=3)
        ab = np.array(list(ab)[:n_constraints], dtype=np.intp).reshape(-1, 2)
        out.extend(ab.T)
    return tuple(out)


class _ITMLBase(MahalanobisMixin, BaseEstimator):
    """Solve and store: the part both ITML estimators share."""

    def _prior(self, X, idx):
        """``M0`` as ``prior`` names it (metric-learn's): the identity, the
        inverse covariance of the pairs' distinct points, a random SPD
        matrix (``make_spd_matrix`` with ``random_state``) or a symmetric
        positive definite array."""
        d, prior = X.shape[1], self.prior
        if isinstance(prior, str):
            if prior == "identity":
                return np.eye(d)
            if prior == "random":
                return make_spd_matrix(d, random_state=check_random_state(self.random_state))
            points = np.unique(X[np.unique(idx)], axis=0)
            cov = np.atleast_2d(np.cov(points, rowvar=False))
            w, V = np.linalg.eigh(cov)
            if points.shape[0] < 2 or w[0] <= 1e-10 * max(w[-1], 1e-300):
                raise ValueError("prior: the covariance of the pairs' points is singular, "
                                 "so its inverse is no positive definite prior; use "
                                 "'identity' or remove linearly dependent features.")
            return (V / w) @ V.T
        return check_psd_matrix(prior, "prior", d, definite=True)

    def _data(self, X, idx, labels, bounds):
        return ITMLData(X, idx, labels, gamma=self.gamma, bounds=bounds,
                        M0=self._prior(X, idx))

    def _solve(self, data):
        """Solve ITML on ``data`` and store the fitted state."""
        for name in ("gamma", "tol"):
            value = getattr(self, name)
            if isinstance(value, Real) and not np.isfinite(value):
                raise ValueError(f"{name}: must be finite, got {value!r}.")
        tol = renamed_keyword("tol", self.tol, "convergence_threshold",
                              self.convergence_threshold, exclusive=False)

        def exact():
            check_exact_size(data, "solver")
            return formulation("itml").solve_exact(data)

        result = self._run_solver({
            "fast": lambda: ITMLDualNewton().run(data),
            "exact": exact,
            "bregman": lambda: ITMLBregman(maxiter=self.max_iter, tol=tol).run(data),
        })
        self._store_result(result, data.n_features)
        self.bounds_ = data.bounds.copy()
        self._log_fit(before=[("solver=%s", self.solver), ("gamma=%g", data.gamma)],
                      after=[("time=%.3gs", result.time)])
        return self


@fill_doc(matrix="M")
class ITML(PairsInputMixin, PairsClassifierMixin, _ITMLBase):
    """Information-theoretic metric learning (Davis et al., ICML 2007),
    pairs learner.

    Learns ``M`` solving::

        min_{M PD, xi > 0}  D_ld(M, M0) + gamma D_ld(diag xi, diag xi0)
        s.t.                D_M(i, j) <= xi_ij (similar),  D_M(i, j) >= xi_ij (dissimilar)

    with ``D_ld(A, B) = tr(A B^-1) - log det(A B^-1) - d``, ``D_M`` the
    squared Mahalanobis distance and ``xi0 = u`` on similar pairs, ``l`` on
    dissimilar ones (``bounds_ = (u, l)``).

    Parameters
    ----------
    gamma : float > 0, default=1.0
        Weight of the slacks' LogDet divergence (metric-learn's ``gamma``).
    max_iter : int >= 1, default=1000
        Passes of Algorithm 1 at most (``solver="bregman"``).
    tol : float > 0, default=1e-3
        Algorithm 1's stopping threshold on the relative change of its
        multipliers (metric-learn's rule, ``solver="bregman"``).  The
        certified solvers ignore it: their status is ``optimal`` only when
        the certificate passes at the package's tolerance.
    prior : {"identity", "covariance", "random"} or array_like of shape \
(n_features, n_features), default="identity"
        ``M0`` (metric-learn's meaning): the identity, the inverse
        covariance of the pairs' distinct points, a random SPD matrix
        (``make_spd_matrix`` with ``random_state``) or a symmetric positive
        definite matrix.
    verbose : bool or int, default=False
        ``True`` / ``1``: the solver's progress and the fit's outcome at INFO
        on the ``cvxmetric`` logger.
    preprocessor : array_like of shape (n_samples, n_features) or callable, \
optional
        Forms the points of pairs given as (n_pairs, 2) indicators (integer
        indices into an array, or keys a callable turns into points).
    random_state : int, RandomState instance or None, default=None
        Seeds ``prior="random"``.
    convergence_threshold : float > 0, optional
        Deprecated spelling of ``tol`` (metric-learn renamed it too):
        accepted with a ``FutureWarning``.
    solver : {"fast", "exact", "bregman"}, default="fast"
        The certified dual Newton method, the certified CVXPY solve, or the
        paper's Algorithm 1 (reported).

    Attributes
    ----------
    {mahalanobis_attributes}
    bounds_ : ndarray of shape (2,)
        ``(u, l)`` used by the fit.
    objective_ : float
        ITML's objective at the learned ``M`` (with its best slacks).
    {status_}
    n_iter_ : int
    certificate_ : Certificate
    {result_}
    threshold_ : float
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from cvxmetric import ITML
    >>> X = np.array([[0.0, 0.0], [0.2, 1.0], [1.0, 0.0], [1.1, 1.3]])
    >>> est = ITML(preprocessor=X).fit([[0, 1], [2, 3], [0, 2], [1, 3]],
    ...                                [1, 1, -1, -1])
    >>> est.status_, est.components_.shape
    ('optimal', (2, 2))
    """

    _parameter_constraints = {**_SHARED_CONSTRAINTS}

    def __init__(self, gamma=1.0, max_iter=1000, tol=1e-3, prior="identity",
                 verbose=False, preprocessor=None, random_state=None,
                 convergence_threshold="deprecated", solver="fast"):
        store_arguments(self, locals())

    def fit(self, pairs, y, bounds=None, calibration_params=None):
        """Learn ``M`` from labelled pairs, then calibrate ``threshold_``.

        Parameters
        ----------
        pairs : array_like
            Indicators (n_pairs, 2) formed by ``preprocessor``, or points
            (n_pairs, 2, n_features).
        y : array_like of shape (n_pairs,)
            +1 (similar) or -1 (dissimilar).
        bounds : array_like of two floats > 0, optional
            ``(u, l)``; default the 5th and 95th percentiles of the
            Euclidean distances between the pairs' distinct points.
        {calibration_params}

        Returns
        -------
        self : ITML
        """
        self._solve(self._fit_data(pairs, y, bounds, calibration_params))
        return self._calibrate_after_fit(pairs, np.asarray(y), calibration_params)

    def _declare(self, pairs, y, calibration_params, bounds=None):
        """The ICML 2007 problem on these pairs, unsolved."""
        return declared_problem(self._fit_data(pairs, y, bounds, calibration_params))

    def _fit_data(self, pairs, y, bounds, calibration_params):
        """Validate :meth:`fit`'s input: the :class:`ITMLData`."""
        return self._data(*self._validated_pairs(pairs, y, calibration_params), bounds)


class ITML_Supervised(LabelledMixin, TransformerMixin, _ITMLBase):
    """ITML learned from class labels: ``fit(X, y, bounds=None)``.

    Draws the labelled pairs as metric-learn 0.7 does
    (:func:`metric_learn_pairs`: ``n_constraints`` distinct same-class
    pairs, similar, and as many different-class pairs, dissimilar), drops
    the dissimilar pairs of identical points (no metric separates them) and
    solves ITML as :class:`ITML` does.

    Parameters
    ----------
    gamma, max_iter, tol
        As in :class:`ITML`.
    n_constraints : int >= 1, optional
        Pairs of each kind; default ``20 * n_classes^2`` (metric-learn's).
    prior, verbose
        As in :class:`ITML` (the covariance is that of the drawn pairs'
        points).
    preprocessor : array_like of shape (n_samples, n_features) or callable, \
optional
        metric-learn's meaning: a 1-D ``X`` holds indicators of samples.
    random_state : int, RandomState instance or None, default=None
        Seeds the pair sampling (and ``prior="random"``).
    num_constraints : int, optional
        Deprecated spelling of ``n_constraints``, with a ``FutureWarning``.
    convergence_threshold : float > 0, optional
        Deprecated spelling of ``tol``.
    solver : {"fast", "exact", "bregman"}, default="fast"

    Attributes
    ----------
    components_, mahalanobis_matrix_, bounds_, objective_, status_, n_iter_, \
certificate_, result_, n_features_in_
        As in :class:`ITML`.
    pairs_ : ndarray of int, shape (n_pairs, 2)
        The pairs drawn (indices into ``X``), similar ones first.
    pair_labels_ : ndarray of int, shape (n_pairs,)

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from cvxmetric import ITML_Supervised
    >>> X, y = load_iris(return_X_y=True)
    >>> ITML_Supervised(random_state=0).fit_transform(X, y).shape
    (150, 4)
    """

    _parameter_constraints = {
        **_SHARED_CONSTRAINTS,
        "n_constraints": [Interval(Integral, 1, None, closed="left"), None],
        "num_constraints": [Interval(Integral, 1, None, closed="left"),
                            StrOptions({"deprecated"})],
    }

    def __init__(self, gamma=1.0, max_iter=1000, tol=1e-3, n_constraints=None,
                 prior="identity", verbose=False, preprocessor=None, random_state=None,
                 num_constraints="deprecated", convergence_threshold="deprecated",
                 solver="fast"):
        store_arguments(self, locals())

    def fit(self, X, y, bounds=None):
        """Draw labelled pairs from the classes and learn ``M``.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features) or (n_samples,)
            Samples, or indicators of samples (see ``preprocessor``).
        y : array_like of shape (n_samples,)
            Class labels (at least 2 classes).
        bounds : array_like of two floats > 0, optional
            As in :meth:`ITML.fit`.

        Returns
        -------
        self : ITML_Supervised
        """
        return self._solve(self._sample(X, y, bounds))

    def _fit(self, X, y):
        return self._solve(self._sample(X, y, None))

    def _declare(self, X, y, bounds=None):
        """The ICML 2007 problem on the pairs ``fit(X, y)`` draws."""
        return declared_problem(self._sample(X, y, bounds))

    def _sample(self, X, y, bounds):
        """Validate ``(X, y)``, draw the pairs: the :class:`ITMLData`."""
        X = form_samples(X, self.preprocessor)
        X, y, _, codes = validate_labelled(self, X, y, ensure_min_samples=2)
        n = renamed_keyword("n_constraints", self.n_constraints, "num_constraints",
                            self.num_constraints, exclusive=False)
        if n is None:
            n = 20 * int(codes.max() + 1) ** 2
        a, b, c, d = metric_learn_pairs(codes, n, self.random_state)
        idx = np.vstack([np.column_stack([a, b]), np.column_stack([c, d])])
        lab = np.concatenate([np.ones(len(a), int), -np.ones(len(c), int)])
        keep = (lab == 1) | np.any(X[idx[:, 0]] != X[idx[:, 1]], axis=1)
        if not np.any(keep):
            raise ValueError("X: every drawn pair is a dissimilar pair of identical "
                             "points; ITML has no constraint to learn from.")
        self.pairs_, self.pair_labels_ = idx[keep], lab[keep]
        return self._data(X, self.pairs_, self.pair_labels_, bounds)

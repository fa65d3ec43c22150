"""The covariance metric (Mahalanobis, *On the generalized distance in
statistics*, 1936): ``M`` the (pseudo-)inverse of the sample covariance.

Nothing is learned from labels.  ``M = Sigma^{-1}`` is the minimiser of the
convex ``tr(M Sigma) - log det M`` over positive definite ``M`` (the Gaussian
log-likelihood of the centred data), so the closed form is exact: the
gradient ``Sigma - M^{-1}`` vanishes there.  With a singular ``Sigma`` that
problem is unbounded below; metric-learn's ``Covariance`` then takes the
Moore-Penrose pseudo-inverse, and so does this one (``scipy.linalg.pinvh``),
a metric that ignores the directions along which the data do not vary.
"""

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import validate_data

from .._base import MahalanobisMixin, form_samples
from .._validation import check_finite

__all__ = ["Covariance", "CovarianceData", "covariance_metric"]


def covariance_metric(X):
    """``pinvh(cov(X))``, shape (d, d): the covariance metric of the rows of ``X``.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        At least two samples, finite.

    Returns
    -------
    ndarray of shape (n_features, n_features)
    """
    X = check_finite(X, "X", ndim=2)
    if X.shape[0] < 2:
        raise ValueError(f"X: the covariance needs at least 2 samples, got {X.shape[0]}.")
    cov = np.atleast_2d(np.cov(X, rowvar=False))
    return scipy.linalg.pinvh(cov)


class CovarianceData:
    """The Gaussian log-likelihood problem whose minimiser is the metric.

    ``f(M) = tr(M Sigma) - log det M`` over positive definite ``M``, with
    ``Sigma`` the sample covariance of ``X`` (positive definite). Its
    minimiser ``Sigma^{-1}`` and optimum ``d + log det Sigma`` are closed
    forms: :attr:`optimum` is exact, so ``f(M) - optimum`` is the gap of
    any ``M``.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        Finite, at least two samples, a covariance of full rank.
    """

    def __init__(self, X):
        X = check_finite(X, "X", ndim=2)
        if X.shape[0] < 2:
            raise ValueError(f"X: the covariance needs at least 2 samples, got {X.shape[0]}.")
        self.sigma = np.atleast_2d(np.cov(X, rowvar=False))
        sign, logdet = np.linalg.slogdet(self.sigma)
        if sign <= 0 or not np.isfinite(logdet):
            raise ValueError("X: the covariance is singular; the log-likelihood is "
                             "unbounded below (the estimator takes the pseudo-inverse).")
        self.optimum = self.sigma.shape[0] + logdet

    def objective(self, M):
        """``tr(M Sigma) - log det M`` (``inf`` when ``M`` is not positive definite)."""
        M = np.asarray(M, dtype=float)
        w = np.linalg.eigvalsh(0.5 * (M + M.T))
        if w[0] <= 0:
            return np.inf
        return float(np.sum(M * self.sigma) - np.sum(np.log(w)))


class Covariance(TransformerMixin, MahalanobisMixin, BaseEstimator):
    """The covariance metric, metric-learn 0.7's ``Covariance`` baseline.

    Parameters
    ----------
    preprocessor : array_like or callable, default=None
        As in metric-learn: with an array, ``fit`` and ``transform`` may take
        1-D indices into it; with a callable, 1-D keys it turns into samples.

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_features)
        ``L`` with ``M = L^T L``.
    mahalanobis_matrix_ : ndarray of shape (n_features, n_features)
        ``M``, the pseudo-inverse of the training covariance.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from cvxmetric import Covariance
    >>> X, _ = load_iris(return_X_y=True)
    >>> Covariance().fit(X).transform(X).shape
    (150, 4)
    """

    _parameter_constraints = {"preprocessor": ["array-like", callable, None]}

    def __init__(self, preprocessor=None):
        self.preprocessor = preprocessor

    def fit(self, X, y=None):
        """Compute the pseudo-inverse of the covariance of ``X``.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features) or (n_samples,)
            Samples, or 1-D indicators with a ``preprocessor``.
        y : None
            Ignored (accepted for pipelines).

        Returns
        -------
        self
        """
        X = form_samples(X, self.preprocessor)
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        self._set_metric(covariance_metric(X))
        return self

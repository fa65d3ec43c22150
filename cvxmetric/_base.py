"""The Mahalanobis API every cvxmetric estimator shares (metric-learn conventions).

A learned Mahalanobis metric is a PSD matrix ``M`` (d, d); the squared
distance is ``D2_M(a, b) = (a - b)^T M (a - b)``.  Following metric-learn,
the fitted estimator exposes a factor ``L = components_`` with
``M = L^T L``, so that the metric is the Euclidean distance after the linear
map ``x -> L x`` (:meth:`MahalanobisMixin.transform`).

``L`` is computed from ``M`` by an eigendecomposition ``M = V diag(w) V^T``
with negative eigenvalues (round-off of the solver's PSD constraint) clipped
to zero: ``L = diag(sqrt(w_+)) V^T``, of shape (n_features, n_features) as
in metric-learn.  The matrix the estimator reports,
:meth:`MahalanobisMixin.get_mahalanobis_matrix`, is ``L^T L``, i.e. the
clipped ``M``, so that every method (transform, pair distances, the metric
callable) describes one and the same metric.  The unclipped solver output
stays available on the solver result.

Pairs are passed either as a 3-D array of points (n_pairs, 2, n_features) or,
when the estimator has a ``preprocessor`` (the sample matrix ``X``), as
integer indices (n_pairs, 2) into it.
"""

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._validation import check_finite, check_samples
from .constraints import tuples_to_indices

__all__ = ["MahalanobisMixin", "LabelledMixin", "components_from_metric",
           "validate_labelled"]


class LabelledMixin:
    """Mixin of the ``fit(X, y)`` learners on class labels: ``y`` is required
    (scikit-learn tags); :func:`validate_labelled` checks it."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


def validate_labelled(estimator, X, y, **kwargs):
    """Validate the ``(X, y)`` of a ``fit(X, y)`` learner on class labels.

    :func:`~sklearn.utils.validation.validate_data` (float64, keyword
    arguments passed on), classification targets and at least two classes,
    each error naming its argument.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    classes : ndarray of shape (n_classes,)
    codes : ndarray of shape (n_samples,)
        ``classes[codes] == y``.
    """
    X, y = validate_data(estimator, X, y, dtype=np.float64, **kwargs)
    try:
        check_classification_targets(y)
    except ValueError as exc:  # scikit-learn's message does not name y
        raise ValueError(f"y: {exc}") from None
    classes, codes = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(
            f"y: {type(estimator).__name__} needs at least 2 classes, got 1 class.")
    return X, y, classes, codes


def components_from_metric(M):
    """Factor ``L`` with ``L^T L = Pi_PSD(M)``.

    Parameters
    ----------
    M : ndarray of shape (d, d)
        A symmetric matrix, PSD up to round-off.

    Returns
    -------
    L : ndarray of shape (d, d)
        ``diag(sqrt(max(w, 0))) V^T`` for ``M = V diag(w) V^T``.  Negative
        eigenvalues are clipped to zero, so ``L^T L`` is the projection of
        ``M`` onto the PSD cone.
    """
    M = check_finite(M, "M", ndim=2)
    if M.shape[0] != M.shape[1]:
        raise ValueError(f"M: expected a square matrix, got shape {M.shape}.")
    w, V = np.linalg.eigh(0.5 * (M + M.T))
    return (V * np.sqrt(np.maximum(w, 0.0))).T


class MahalanobisMixin:
    """Mahalanobis-metric methods for a fitted estimator (metric-learn API).

    A subclass sets ``components_`` (via :meth:`_set_metric`) and
    ``n_features_in_`` in ``fit``.  If it has a ``preprocessor`` parameter
    (the sample matrix ``X``), pairs may be given as indices into it.

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_features)
        ``L`` with ``M = L^T L``.
    mahalanobis_matrix_ : ndarray of shape (n_features, n_features)
        ``L^T L``: the learned PSD matrix with round-off negative eigenvalues
        clipped.
    n_features_in_ : int
        Number of features seen in ``fit``.
    """

    def _set_metric(self, M):
        """Store ``components_`` and ``mahalanobis_matrix_`` from a PSD ``M``."""
        L = components_from_metric(M)
        self.components_ = L
        self.mahalanobis_matrix_ = L.T @ L
        return self

    def get_mahalanobis_matrix(self):
        """The learned matrix ``M = components_.T @ components_``.

        Returns
        -------
        M : ndarray of shape (n_features, n_features)
        """
        check_is_fitted(self, "components_")
        return self.components_.T @ self.components_

    def transform(self, X):
        """Map samples to the space where the metric is Euclidean.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
            ``X @ components_.T``.
        """
        check_is_fitted(self, "components_")
        # scikit-learn's validation: standard messages for NaN, sparse input
        # and a wrong number of features ("X has 3 features, but ...")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.components_.T

    def _pair_points(self, pairs):
        """Validate ``pairs`` and return the points, shape (n_pairs, 2, d)."""
        try:
            ndim = np.ndim(pairs)
        except Exception as exc:  # ragged nested lists
            raise ValueError(f"pairs: cannot be read as an array ({exc}).") from None
        preprocessor = getattr(self, "preprocessor", None)
        if ndim == 3:
            points = check_finite(pairs, "pairs", ndim=3)
            if points.shape[1] != 2:
                raise ValueError(
                    f"pairs: expected shape (n_pairs, 2, n_features), got "
                    f"{points.shape}."
                )
        elif preprocessor is None:
            # tuples_to_indices raises the message that explains integer
            # indices need a preprocessor (or that points must be 3-D)
            tuples_to_indices(pairs, "pairs", width=2)
            raise ValueError(
                f"pairs: expected shape (n_pairs, 2, n_features), got "
                f"{np.shape(pairs)}."
            )
        else:
            X = check_samples(preprocessor, "preprocessor")
            X, idx = tuples_to_indices(pairs, "pairs", width=2, preprocessor=X)
            points = X[idx]  # (n_pairs, 2, d)
        if points.shape[0] == 0:
            raise ValueError("pairs: no pairs given.")
        if points.shape[2] != self.n_features_in_:
            raise ValueError(
                f"pairs: points have {points.shape[2]} features, but "
                f"{type(self).__name__} was fitted with {self.n_features_in_}."
            )
        return points

    def pair_distance(self, pairs):
        """Learned distance ``sqrt(D2_M(a, b))`` of each pair.

        Parameters
        ----------
        pairs : array_like
            Points of shape (n_pairs, 2, n_features), or integer indices of
            shape (n_pairs, 2) into the estimator's ``preprocessor``.

        Returns
        -------
        distances : ndarray of shape (n_pairs,)
        """
        check_is_fitted(self, "components_")
        points = self._pair_points(pairs)
        # ||L (a - b)||: the distance of the transformed points, without
        # cancellation from transforming a and b separately
        diff = (points[:, 0] - points[:, 1]) @ self.components_.T
        return np.sqrt(np.sum(diff * diff, axis=1))

    def pair_score(self, pairs):
        """Similarity score of each pair: ``-pair_distance(pairs)``.

        Higher means more similar (the scikit-learn scoring convention).

        Parameters
        ----------
        pairs : array_like
            As in :meth:`pair_distance`.

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
        """
        return -self.pair_distance(pairs)

    def get_metric(self):
        """A callable ``metric(u, v, squared=False)`` on two 1-D points.

        The returned function holds a copy of ``components_``: refitting the
        estimator does not change it.  It can be passed as ``metric=`` to
        scikit-learn's neighbours and clustering estimators.

        Returns
        -------
        metric : callable
        """
        check_is_fitted(self, "components_")
        L = self.components_.copy()
        d = L.shape[1]

        def metric(u, v, squared=False):
            """Learned (squared if ``squared``) distance between ``u`` and ``v``."""
            u = check_finite(u, "u", shape=(d,))
            v = check_finite(v, "v", shape=(d,))
            z = L @ (u - v)
            d2 = float(z @ z)
            return d2 if squared else float(np.sqrt(d2))

        return metric

"""LFDA estimator: metric-learn 0.7's ``LFDA(n_components, k,
embedding_type, preprocessor)``, ``fit(X, y)``.

metric-learn's keywords with its meaning: ``k`` the neighbour of the local
scaling (default ``min(7, n_features - 1)``, a ``k >= n_features`` lowered
with a warning), ``embedding_type`` the embedding; ``components_`` is the
transformation ``L`` (rows: the components), ``transform(X) = X L^T``,
``get_mahalanobis_matrix() = L^T L``.  Two departures where metric-learn
returns NaN: directions with no spread are dropped before the eigenproblem
(at most their span's dimension of components, with a warning), and the
``"weighted"`` embedding scales a direction of negative eigenvalue by 0.
An invalid ``embedding_type`` is refused at ``fit`` (scikit-learn's rule:
``__init__`` only stores), not in ``__init__``.
"""

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import LabelledMixin, MahalanobisMixin, form_samples, store_arguments
from .._base import validate_labelled
from .._docs import fill_doc
from ._problem import EMBEDDINGS, lfda_components

__all__ = ["LFDA"]


@fill_doc
class LFDA(LabelledMixin, TransformerMixin, MahalanobisMixin, BaseEstimator):
    """Local Fisher discriminant analysis (Sugiyama, JMLR 2007).

    The transformation whose rows are the generalised eigenvectors of the
    local between- and within-class scatter, ``S_b v = lam S_w v``, with
    the ``n_components`` largest eigenvalues (:mod:`cvxmetric.lfda`).

    Parameters
    ----------
    n_components : int >= 1, optional
        Dimension of the embedding (default: the number of features).
    k : int >= 1, optional
        The neighbour of the local scaling ``sigma_i`` (default
        ``min(7, n_features - 1)``, metric-learn's).
    embedding_type : {{"weighted", "orthonormalized", "plain"}}, \
default="weighted"
        ``"weighted"``: eigenvectors times ``sqrt(lam)``;
        ``"orthonormalized"``: an orthonormal basis of their span;
        ``"plain"``: the eigenvectors (``v^T S_w v = 1``).
    preprocessor : array_like or callable, optional
        metric-learn's meaning: a 1-D ``X`` holds indicators of samples.
    verbose : bool or int, default=False
        Accepted for the package's convention; nothing iterates (one
        generalised eigendecomposition).

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        The transformation ``L``.
    mahalanobis_matrix_ : ndarray of shape (n_features, n_features)
        ``L^T L``.
    eigenvalues_ : ndarray of shape (n_components,)
        The generalised eigenvalues, descending.
    classes_ : ndarray
    n_features_in_ : int
    {feature_names_in_}

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from cvxmetric import LFDA
    >>> X, y = load_iris(return_X_y=True)
    >>> LFDA(k=2, n_components=2).fit(X, y).transform(X).shape
    (150, 2)
    """

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "k": [Interval(Integral, 1, None, closed="left"), None],
        "embedding_type": [StrOptions(set(EMBEDDINGS))],
        "preprocessor": ["array-like", callable, None],
        "verbose": ["verbose"],
    }

    def __init__(self, n_components=None, k=None, embedding_type="weighted",
                 preprocessor=None, verbose=False):
        store_arguments(self, locals())

    def _fit(self, X, y):
        X = form_samples(X, self.preprocessor)
        X, y, classes, codes = validate_labelled(self, X, y, ensure_min_samples=2)
        d = X.shape[1]
        if self.n_components is not None and self.n_components > d:
            raise ValueError(f"n_components: at most the number of features, {d}; "
                             f"got {self.n_components}.")
        L, vals = lfda_components(X, codes, self.n_components, self.k,
                                  self.embedding_type)
        self.components_ = L
        self.mahalanobis_matrix_ = L.T @ L
        self.eigenvalues_ = vals
        self.classes_ = classes
        return self

    def _declare(self, X, y):
        raise NotImplementedError(
            "LFDA: the trace ratio of LFDA is solved by a generalised "
            "eigenproblem; it is not a convex program and has no declared "
            "CVXPY problem.")

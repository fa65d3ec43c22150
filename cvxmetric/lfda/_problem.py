"""LFDA's local scatter matrices and its generalised eigenproblem.

Local Fisher discriminant analysis (Sugiyama, "Dimensionality reduction
of multimodal labeled data by local Fisher discriminant analysis", JMLR
2007) weighs each same-class pair by the local-scaling affinity

    A_ij = exp(-||x_i - x_j||^2 / (sigma_i sigma_j)),

``sigma_i`` the distance from ``x_i`` to its ``k``-th nearest neighbour
in its class (Eq. 4; ``A_ij = 0`` where ``sigma_i sigma_j = 0``, as
metric-learn), and forms (Eq. 9-12)

    S_w = 1/2 sum_ij W^w_ij (x_i - x_j)(x_i - x_j)^T,   W^w_ij = A_ij / n_c          (same class c)
    S_b = 1/2 sum_ij W^b_ij (x_i - x_j)(x_i - x_j)^T,   W^b_ij = A_ij (1/n - 1/n_c)  (same class c)
                                                                 = 1/n                 (different classes)

LFDA's transformation maximises the trace ratio ``tr((T^T S_w T)^{-1}
T^T S_b T)``: its columns are the generalised eigenvectors of ``S_b v =
lam S_w v`` with the largest eigenvalues (Eq. 13-14), computed here by
LAPACK (``scipy.linalg.eigh``) to machine precision: exact by
construction, with no convex problem and no certificate to state.  Each
class's sums are Laplacian quadratic forms (``1/2 sum_ij a_ij (x_i -
x_j)(x_i - x_j)^T = X^T (diag(a 1) - a) X``), so nothing of size ``n x
n`` is formed across classes.

The embedding (metric-learn's ``embedding_type``): ``"weighted"`` scales
each eigenvector by ``sqrt(lam)`` (negative ``lam``, where ``S_b`` is
indefinite, by 0), ``"orthonormalized"`` replaces them by an orthonormal
basis of their span (QR), ``"plain"`` keeps them (``v^T S_w v = 1``).
"""

import warnings

import numpy as np
import scipy.linalg
from sklearn.metrics import pairwise_distances

__all__ = ["LFDAData", "local_scatter", "lfda_components", "neighbour_k", "EMBEDDINGS"]

#: metric-learn 0.7's ``embedding_type`` values.
EMBEDDINGS = ("weighted", "orthonormalized", "plain")


def neighbour_k(k, n_features):
    """The neighbour of the local scaling, as metric-learn 0.7 chooses it:
    ``min(7, d - 1)`` by default (at least 1), and a ``k >= d`` lowered to
    ``d - 1`` with a ``UserWarning`` (metric-learn compares ``k`` with the
    number of features, not of samples)."""
    if k is None:
        return max(1, min(7, n_features - 1))
    if k >= n_features and n_features > 1:
        warnings.warn(f"k: chosen k ({k}) too large, using {n_features - 1} "
                      f"instead (metric-learn's rule: k < n_features).",
                      UserWarning, stacklevel=3)
        return n_features - 1
    return int(k)


def _class_affinity(Xc, k):
    """The local-scaling affinity of one class (Eq. 4) at its ``k``-th
    neighbour (``min(k, n_c - 1)``)."""
    dist = pairwise_distances(Xc, metric="euclidean", squared=True)
    kc = min(k, Xc.shape[0] - 1)
    sigma = np.sqrt(np.partition(dist, kc, axis=0)[kc])
    scale = np.outer(sigma, sigma)
    with np.errstate(divide="ignore", invalid="ignore"):
        A = np.exp(-dist / scale)
    A[scale == 0] = 0.0
    return A


def _laplacian_form(Xc, A):
    """``1/2 sum_ij A_ij (x_i - x_j)(x_i - x_j)^T = Xc^T (diag(A 1) - A) Xc``."""
    return Xc.T @ (A.sum(axis=1)[:, None] * Xc) - Xc.T @ A @ Xc


def local_scatter(X, codes, k):
    """LFDA's local between- and within-class scatter (module docstring).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    codes : ndarray of int, shape (n,)
        Class codes ``0 .. C - 1``.
    k : int >= 1
        The neighbour of the local scaling (per class, ``min(k, n_c - 1)``).

    Returns
    -------
    S_b, S_w : ndarray of shape (d, d)
        Symmetric.
    """
    n, d = X.shape
    S_w = np.zeros((d, d))
    within_all = np.zeros((d, d))  # 1/2 sum over same-class pairs of (xi-xj)(xi-xj)^T
    local = np.zeros((d, d))      # ... weighted by A_ij (1/n - 1/n_c)
    for c in range(int(codes.max()) + 1):
        Xc = X[codes == c]
        nc = Xc.shape[0]
        if nc == 0:
            continue
        G = _laplacian_form(Xc, _class_affinity(Xc, k))
        S_w += G / nc
        local += G * (1.0 / n - 1.0 / nc)
        within_all += nc * (Xc.T @ Xc) - np.outer(Xc.sum(axis=0), Xc.sum(axis=0))
    s = X.sum(axis=0)
    every_pair = n * (X.T @ X) - np.outer(s, s)  # 1/2 sum_ij over all pairs
    # W^b: 1/n on every pair, less 1/n on the same-class ones, plus A(1/n - 1/n_c)
    S_b = (every_pair - within_all) / n + local
    return 0.5 * (S_b + S_b.T), 0.5 * (S_w + S_w.T)


def _span(X):
    """Orthonormal basis of the span of the centred samples, or ``None``
    when it is the whole space."""
    Xc = X - X.mean(axis=0)
    w, V = np.linalg.eigh(Xc.T @ Xc)
    keep = w > max(X.shape) * np.finfo(float).eps * max(w[-1], 0.0)
    return None if np.all(keep) else V[:, keep]


def lfda_components(X, codes, n_components=None, k=None, embedding_type="weighted"):
    """LFDA's transformation: ``(components, eigenvalues)``.

    Directions along which every sample is equal (a constant feature) carry
    no information and leave ``S_w`` singular: the eigenproblem is solved on
    the span of the centred samples, and at most its dimension ``r`` of
    components are returned (a ``UserWarning`` when fewer than asked;
    metric-learn returns NaN there).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    codes : ndarray of int, shape (n,)
    n_components : int or None
        Default ``d``.
    k : int or None
        :func:`neighbour_k`.
    embedding_type : {"weighted", "orthonormalized", "plain"}

    Returns
    -------
    components : ndarray of shape (n_components, d)
    eigenvalues : ndarray of shape (n_components,)
        Descending.

    Raises
    ------
    ValueError
        Naming ``X`` when ``S_w`` is singular on the span of the samples
        (fewer samples than dimensions, or affinities all zero).
    """
    n, d = X.shape
    dim = d if n_components is None else int(n_components)
    S_b, S_w = local_scatter(X, codes, neighbour_k(k, d))
    U = _span(X)
    if U is not None:
        S_b, S_w = U.T @ S_b @ U, U.T @ S_w @ U
        if U.shape[1] < dim:
            warnings.warn(f"n_components: the samples span {U.shape[1]} of {d} "
                          f"dimensions (constant features, or fewer samples than "
                          f"features); "
                          f"{U.shape[1]} components are returned.", UserWarning,
                          stacklevel=3)
            dim = U.shape[1]
    r = S_w.shape[0]
    w = np.linalg.eigvalsh(S_w)
    if w[0] <= r * np.finfo(float).eps * max(w[-1], 0.0):
        raise ValueError("X: LFDA's local within-class scatter is singular on the "
                         "span of the samples (fewer samples per class than "
                         "dimensions, or duplicated samples); reduce the dimension "
                         "first, e.g. with PCA.")
    vals, vecs = scipy.linalg.eigh(S_b, S_w, subset_by_index=(r - dim, r - 1))
    vals, vecs = vals[::-1], vecs[:, ::-1]
    if U is not None:
        vecs = U @ vecs
    if embedding_type == "weighted":
        vecs = vecs * np.sqrt(np.maximum(vals, 0.0))
    elif embedding_type == "orthonormalized":
        vecs, _ = np.linalg.qr(vecs)
    return np.ascontiguousarray(vecs.T), vals


class LFDAData:
    """LFDA's canonical data: the local scatter matrices of labelled samples.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    y : array_like of shape (n_samples,)
        Class labels.
    k : int or None
        The neighbour of the local scaling (:func:`neighbour_k`).

    Attributes
    ----------
    S_b, S_w : ndarray of shape (d, d)
    codes : ndarray of int
    """

    def __init__(self, X, y, k=None):
        from .._validation import check_samples

        self.X = check_samples(X, "X")
        y = np.asarray(y)
        if y.shape != (self.X.shape[0],):
            raise ValueError(f"y: expected one label per sample, shape "
                             f"({self.X.shape[0]},), got {y.shape}.")
        _, self.codes = np.unique(y, return_inverse=True)
        self.k = k
        self.S_b, self.S_w = local_scatter(self.X, self.codes,
                                           neighbour_k(k, self.X.shape[1]))

    def trace_ratio(self, T):
        """Eq. 13's criterion ``tr((T^T S_w T)^{-1} T^T S_b T)`` of a
        transformation ``T`` of shape (d, r) (``components_.T``)."""
        T = np.asarray(T, dtype=float)
        return float(np.trace(np.linalg.solve(T.T @ self.S_w @ T, T.T @ self.S_b @ T)))

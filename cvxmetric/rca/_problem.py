"""RCA in canonical form: chunklets, the within-chunklet covariance, the
objective and its closed-form dual bound.

Relevant component analysis (Bar-Hillel, Hertz, Shental, Weinshall,
"Learning a Mahalanobis metric from equivalence constraints", JMLR 2005)
learns from *chunklets*: groups of points known to share a class.  With
``m_j`` the mean of chunklet ``j`` and ``p`` the number of chunklet
points, the within-chunklet covariance is

    C = (1/p) sum_j sum_{i in chunklet j} (x_ji - m_j)(x_ji - m_j)^T

and Sec. 4.2 of the paper shows that RCA's metric solves

    minimise_{M PD}  F(M) = (1/p) sum_j sum_i ||x_ji - m_j||_M^2 = <C, M>
    subject to       log det M >= 0                   (|M| >= 1)

a convex problem (a linear objective over the convex superlevel set of
the concave ``log det``), whose solution is ``M* = |C|^{1/d} C^{-1}``
with the optimal value ``F* = d |C|^{1/d}``.  RCA's whitening transform
``C^{-1/2}`` (metric-learn's ``components_``) is the same metric up to
the positive factor ``|C|^{1/d}``.

**The dual bound.**  For ``lam >= 0`` the Lagrangian ``<C, M> - lam log
det M`` is minimised over PD ``M`` at ``M = lam C^{-1}``, so for every
feasible ``M``

    F(M) >= g(lam) = lam (d - d log lam + log det C)

(weak duality; ``g(0) = 0``, and ``F >= 0`` holds on its own since ``C``
and ``M`` are PSD).  ``g`` is maximised at ``lam* = |C|^{1/d}`` where
``g(lam*) = d |C|^{1/d} = F*``: the bound is tight.  The certificate of a
point ``M`` evaluates ``g`` at ``lam = F(M) / d`` (the optimal multiplier
when ``M`` is optimal) and, when a solver gives one, at its multiplier of
the ``log det`` constraint, and keeps the larger: a valid lower bound on
``F*`` whatever ``M`` and the multiplier are.

**A singular C.**  When ``C`` has a null vector ``v`` (fewer chunklet
degrees of freedom than features, or a feature constant within every
chunklet), ``M_t = t v v^T + t^{-1/(d-1)} (I - v v^T)`` is feasible with
``F(M_t) -> 0``: the infimum 0 is approached and not attained (for ``C !=
0``).  The exact path raises :class:`~cvxmetric.result.NotAttainedError`;
the estimators first reduce the dimension (:func:`rca_reduction`) and
solve the problem on the reduced data, where ``C`` is definite.
"""

import numpy as np
import scipy.linalg

from .._linalg import eigh_equilibrated, logdet_pd
from .._tolerances import certificate_tolerance
from .._validation import check_finite, check_int, check_samples
from ..result import Certificate

__all__ = ["RCAData", "check_chunks", "within_chunklet_covariance",
           "chunks_from_labels", "rca_reduction", "covariance_rank"]


def check_chunks(chunks, n_samples, name="chunks"):
    """Chunklet labels validated: integers, one per sample, ``-1`` for a
    sample in no chunklet, every chunklet of at least 2 samples, at least
    one chunklet.

    Returns
    -------
    ndarray of int, shape (n_samples,)
    """
    try:
        arr = np.asarray(chunks)
    except Exception as exc:  # ragged nested lists
        raise ValueError(f"{name}: cannot be read as an array ({exc}).") from None
    if arr.ndim != 1 or arr.shape[0] != n_samples:
        raise ValueError(f"{name}: expected one label per sample, shape "
                         f"({n_samples},), got {arr.shape}.")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name}: expected integer chunklet labels (-1: no "
                             f"chunklet), got non-integer values.")
    elif arr.dtype.kind not in "iub":
        raise ValueError(f"{name}: expected integer chunklet labels (-1: no "
                         f"chunklet), got dtype {arr.dtype}.")
    arr = arr.astype(np.int64)
    if np.any(arr < -1):
        raise ValueError(f"{name}: labels are chunklet numbers >= 0 or -1 (no "
                         f"chunklet); got {int(arr.min())}.")
    labels, counts = np.unique(arr[arr >= 0], return_counts=True)
    if labels.size == 0:
        raise ValueError(f"{name}: no chunklet (every label is -1); RCA needs at "
                         f"least one chunklet of 2 or more samples.")
    if np.any(counts < 2):
        raise ValueError(f"{name}: chunklet {int(labels[np.argmax(counts < 2)])} has "
                         f"one sample; a chunklet needs at least 2 (label a lone "
                         f"sample -1).")
    return arr


def within_chunklet_covariance(X, chunks):
    """``C = (1/p) sum_j sum_i (x_ji - m_j)(x_ji - m_j)^T`` over the samples
    of a chunklet (``chunks >= 0``; ``-1``: none).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    chunks : ndarray of int, shape (n,)
        Validated (:func:`check_chunks`).

    Returns
    -------
    C : ndarray of shape (d, d)
        Symmetric PSD.
    R : ndarray of shape (p, d)
        The chunklet samples centred on their chunklet's mean.
    """
    in_chunk = chunks >= 0
    Xc = X[in_chunk]
    _, codes = np.unique(chunks[in_chunk], return_inverse=True)
    counts = np.bincount(codes)
    sums = np.zeros((counts.size, X.shape[1]))
    np.add.at(sums, codes, Xc)
    R = Xc - (sums / counts[:, None])[codes]
    C = R.T @ R / Xc.shape[0]
    return 0.5 * (C + C.T), R


def covariance_rank(C):
    """Numerical rank of a PSD ``C``: eigenvalues above ``d eps lambda_max``
    (numpy's ``matrix_rank`` rule, which metric-learn applies)."""
    w = np.linalg.eigvalsh(C)
    return int(np.sum(w > max(C.shape) * np.finfo(float).eps * max(w[-1], 0.0)))


def chunks_from_labels(y, n_chunks=100, chunk_size=2, random_state=None):
    """metric-learn 0.7's chunklet draw (``Constraints(y).chunks``), draw for
    draw: with the same ``random_state`` it returns the same chunklets.

    Each of ``n_chunks`` chunklets takes ``chunk_size`` samples of one
    class drawn at random, each sample in at most one chunklet: a class
    is drawn with ``randint(0, n_left - 1)`` among the classes left (so,
    as in metric-learn, the last class left is drawn only when it is the
    only one), a class with fewer than ``chunk_size`` samples left is
    dropped.  Negative labels are unlabelled samples.

    Parameters
    ----------
    y : ndarray of shape (n,)
    n_chunks, chunk_size : int >= 1
    random_state : int, RandomState instance or None

    Returns
    -------
    chunks : ndarray of int, shape (n,)
        ``-1`` for a sample in no chunklet.
    n_available : int
        ``sum_c floor(n_c / chunk_size)``: the most chunklets the labels
        allow; fewer than ``n_chunks`` are drawn when it is smaller.
    """
    from sklearn.utils import check_random_state

    rng = check_random_state(random_state)
    chunks = -np.ones(len(y), dtype=np.int64)
    uniq, lookup = np.unique(y, return_inverse=True)
    numeric = np.issubdtype(uniq.dtype, np.number)
    unlabelled = set(np.flatnonzero(uniq < 0).tolist()) if numeric else set()
    pools = [set(np.flatnonzero(lookup == c).tolist()) for c in range(len(uniq))
             if c not in unlabelled]
    n_available = int(sum(len(s) // chunk_size for s in pools))
    idx = 0
    while idx < min(n_chunks, n_available) and pools:
        c = 0 if len(pools) == 1 else rng.randint(0, high=len(pools) - 1)
        pool = pools[c]
        if len(pool) < chunk_size:
            del pools[c]
            continue
        chosen = rng.choice(list(pool), chunk_size, replace=False)
        pool.difference_update(chosen)
        chunks[chosen] = idx
        idx += 1
    return chunks, n_available


def rca_reduction(X, chunks, C, n_components):
    """RCA's dimension reduction (the paper's Sec. 3, metric-learn's Fisher
    projection), restricted to the range of ``C``.

    The ``n_components`` directions of smallest within-chunklet variance
    relative to the total variance of the chunklet samples: the
    generalised eigenvectors of ``(C, T)`` with the smallest eigenvalues,
    ``T`` the (unbiased) covariance of the chunklet samples.  metric-learn
    solves ``lstsq(T, C)`` with a general eigensolver over every feature;
    here the directions are sought in the range of ``C`` only, where ``T``
    is definite (``(p - 1) T >= p C``), so that a direction ``C`` does not
    see (a feature constant within every chunklet, or one the chunklets
    are too few to span) is never kept: RCA's metric there would be
    infinite.  The span of the kept directions, hence the metric, is
    metric-learn's whenever ``C`` is definite.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    chunks : ndarray of int, shape (n,)
    C : ndarray of shape (d, d)
        :func:`within_chunklet_covariance` of ``(X, chunks)``.
    n_components : int
        At most the rank of ``C``.

    Returns
    -------
    A : ndarray of shape (d, n_components)
        Orthonormal columns spanning the kept directions.
    """
    w, V = np.linalg.eigh(C)
    keep = w > max(C.shape) * np.finfo(float).eps * max(w[-1], 0.0)
    U = V[:, keep]
    T = np.atleast_2d(np.cov(X[chunks >= 0], rowvar=False))
    Cr, Tr = U.T @ C @ U, U.T @ T @ U
    _, W = scipy.linalg.eigh(0.5 * (Cr + Cr.T), 0.5 * (Tr + Tr.T),
                             subset_by_index=(0, n_components - 1))
    A, _ = np.linalg.qr(U @ W)
    return A


class RCAData:
    """The within-chunklet covariance of RCA's problem (module docstring).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    chunks : array_like of int, shape (n_samples,)
        Chunklet numbers, ``-1`` for a sample in no chunklet; every
        chunklet of at least 2 samples.

    Attributes
    ----------
    C : ndarray of shape (d, d)
    R : ndarray of shape (p, d)
        The chunklet samples centred on their chunklet's mean (the
        declared problem's data: ``C = R^T R / p``).
    n_points, n_chunks, n_features : int
    """

    def __init__(self, X, chunks):
        X = check_samples(X, "X")
        self.chunks = check_chunks(chunks, X.shape[0])
        self.X = X
        self.C, self.R = within_chunklet_covariance(X, self.chunks)
        if not np.all(np.isfinite(self.C)):
            raise ValueError("X: the within-chunklet covariance overflows; rescale X.")
        self.n_points = self.R.shape[0]
        self.n_chunks = int(np.unique(self.chunks[self.chunks >= 0]).size)
        self.n_features = X.shape[1]

    @classmethod
    def projected(cls, data, A):
        """The same chunklets on the reduced samples ``X A``."""
        return cls(data.X @ A, data.chunks)

    @property
    def rank(self):
        """Numerical rank of ``C`` (:func:`covariance_rank`)."""
        return covariance_rank(self.C)

    def logdet_C(self):
        """``log det C`` (``-inf`` when ``C`` is singular), from the
        equilibrated ``C`` (:func:`~cvxmetric._linalg.eigh_equilibrated`:
        raw features of very different scales)."""
        return logdet_pd(self.C, self.n_features * np.finfo(float).eps)

    def objective(self, M):
        """``F(M) = <C, M> = (1/p) sum_j sum_i ||x_ji - m_j||_M^2``."""
        M = check_finite(M, "M", ndim=2)
        return float(np.sum(self.C * M))

    def dual_bound(self, lam):
        """``max(0, g(lam))`` with ``g(lam) = lam (d - d log lam + log det C)``:
        a lower bound on the optimum for any ``lam >= 0``."""
        lam = float(lam)
        if not np.isfinite(lam) or lam <= 0:
            return 0.0
        d = self.n_features
        g = lam * (d - d * np.log(lam) + self.logdet_C())
        return max(0.0, float(g)) if np.isfinite(g) else 0.0

    def closed_form(self):
        """``(M*, lam*)``: ``M* = |C|^{1/d} C^{-1}`` and the optimal
        multiplier ``lam* = |C|^{1/d}``, from one ``eigh`` of ``C``.

        Raises
        ------
        NotAttainedError
            When ``C`` is singular (module docstring).
        """
        from ..result import NotAttainedError

        # C = S^-1 V diag(w) V^T S^-1, so C^-1 = S V diag(1 / w) V^T S
        w, V, s = eigh_equilibrated(self.C)
        if w[0] <= self.n_features * np.finfo(float).eps * max(w[-1], 0.0):
            raise NotAttainedError(_singular_message(self))
        lam = float(np.exp(np.mean(np.log(w)) - 2.0 * np.mean(np.log(s))))
        M = (V * (lam / w)) @ V.T * s[:, None] * s[None, :]
        return 0.5 * (M + M.T), lam

    def certificate(self, M, lam=None, solver="", **about):
        """The certificate of ``M``: ``F(M)``, the dual bound (the larger of
        ``g(F(M) / d)`` and ``g(lam)`` for a given multiplier ``lam``), and
        the violation ``max(0, -log det M)`` (``inf`` when ``M`` is not
        definite); judged at the package's tolerance."""
        tol_gap, tol_feas = certificate_tolerance("rca")
        M = 0.5 * (M + M.T)
        w = np.linalg.eigvalsh(M)
        # log det from the equilibrated M: M's conditioning is C's
        logdet = logdet_pd(M)
        violation = max(0.0, -logdet) if np.isfinite(logdet) else np.inf
        objective = self.objective(M)
        bound = self.dual_bound(objective / self.n_features)
        if lam is not None:
            bound = max(bound, self.dual_bound(lam))
        return Certificate.from_bound(objective, bound, max_violation=violation,
                                      min_eig=float(w[0]), tol_gap=tol_gap,
                                      tol_feas=tol_feas, solver=solver, **about)


def _singular_message(data):
    return (f"X: the within-chunklet covariance has rank {data.rank} < "
            f"{data.n_features} features, so RCA's problem (min <C, M> subject to "
            f"log det M >= 0) has infimum 0, approached as M grows along the null "
            f"directions of C, and not attained. Reduce the dimension "
            f"(RCA(n_components=...) or the estimators' automatic reduction to the "
            f"rank), or use more or larger chunklets.")

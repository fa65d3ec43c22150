"""Linear algebra shared by the solvers: pair operators and PSD projection.

The one rule of this module: never build one (d, d) matrix per constraint.
Weighted sums of outer products ``sum_p w_p phi_p phi_p^T`` are computed as
``Phi^T (w * Phi)`` over the pairs that carry weight, or as ``X^T L X`` with
the weighted graph Laplacian ``L`` of the pairs, whichever a simple cost
model says is cheaper.
Squared distances of many pairs are ``rowsum((Phi @ M) * Phi)``, or, from
the samples, ``q_i + q_j - 2 x_i^T M x_j`` evaluated chunk by chunk.
"""

import numpy as np
import scipy.sparse as sp

from ._settings import (
    _GATHER_COST,
    _KERNEL_MAX,
    _SMALL_PHI,
    _SPARSE_COST,
)
from ._settings import (
    _LINALG_CHUNK as _CHUNK,
)

__all__ = [
    "PairOperator",
    "eigenvalue_roundoff",
    "eigh_equilibrated",
    "eigh_psd",
    "logdet_pd",
    "pow2_rms_exponents",
    "project_psd",
    "signed_factors",
]


def pow2_rms_exponents(diff):
    """Per column of ``diff`` (n, d), the exponent ``e`` of the power of two
    nearest its root mean square: the per-feature (Jacobi) scale of the
    exact models that solve in each feature's own units.

    Computed without overflow or a logarithm of a subnormal (each column is
    divided by its largest entry first; ``2^e`` is rounded through
    ``frexp``).

    Returns
    -------
    e : ndarray of int, shape (d,)
        0 for a column of zeros (or without rows).
    live : ndarray of bool, shape (d,)
        The columns that are not all zero.
    """
    diff = np.asarray(diff, dtype=float)
    d = diff.shape[1]
    e = np.zeros(d, dtype=int)
    if diff.shape[0] == 0:
        return e, np.zeros(d, dtype=bool)
    top = np.max(np.abs(diff), axis=0)
    live = top > 0
    safe = np.where(live, top, 1.0)
    with np.errstate(under="ignore"):
        rms = safe * np.sqrt(np.mean((diff / safe) ** 2, axis=0))
    # frexp's exponent of rms / sqrt(2) is round(log2(rms))
    e[live] = np.frexp(rms[live] * np.sqrt(0.5))[1]
    return e, live


def eigh_psd(A):
    """Eigen-decomposition of the symmetric part of ``A``: (w, V)."""
    return np.linalg.eigh(0.5 * (A + A.T))


def eigh_equilibrated(A):
    """``eigh`` of the symmetric ``A`` after an exact diagonal scaling.

    ``S = diag(s)``, ``s_i`` the power of two nearest ``A_ii^{-1/2}`` (1
    where ``A_ii <= 0``): ``S A S`` has a unit-order diagonal and is formed
    without rounding, so ``A = S^-1 V diag(w) V^T S^-1`` holds as exactly as
    the eigendecomposition of ``S A S`` does.  For a positive definite ``A``
    whose features have very different scales (a covariance of raw
    measurements: condition numbers of 1e12 and more), the eigenvalues of
    ``S A S`` carry relative accuracy where those of ``A`` do not, and so do
    ``log det`` and ``A^{-1}`` computed from them.

    Returns
    -------
    w : ndarray of shape (d,)
        Eigenvalues of ``S A S``, ascending.
    V : ndarray of shape (d, d)
    s : ndarray of shape (d,)
    """
    A = 0.5 * (A + A.T)
    dg = np.diag(A)
    s = np.ones(A.shape[0])
    pos = dg > 0
    # frexp: dg = m 2^k with m in [1/2, 1); s = 2^{-round(k / 2)}
    s[pos] = np.ldexp(1.0, -np.round(np.frexp(dg[pos])[1] / 2.0).astype(int))
    w, V = np.linalg.eigh(A * s[:, None] * s[None, :])
    return w, V, s


def logdet_pd(A, rank_tol=0.0):
    """``log det A`` of a symmetric ``A`` from :func:`eigh_equilibrated`.

    ``-inf`` unless the least eigenvalue of the scaled matrix exceeds
    ``rank_tol`` times the largest (``rank_tol = 0``: unless it is
    positive definite).
    """
    w, _, s = eigh_equilibrated(A)
    if w[0] <= rank_tol * max(w[-1], 0.0):
        return -np.inf
    return float(np.sum(np.log(w)) - 2.0 * np.sum(np.log(s)))


def signed_factors(M):
    """``(G+, G-)`` with ``M = G+ G+^T - G- G-^T`` for the symmetric part of
    ``M``, up to its round-off.

    Eigenvalues within ``d eps max|w|`` of zero -- the round-off that
    forming ``M`` (e.g. as ``G G^T``) leaves in every eigenvalue -- are
    taken as zero: a rank-r iterate then has r columns in ``G+`` and none
    in ``G-``, where its ``d - r`` round-off eigenvalues of either sign
    would double the cost of every pass over pairs that reads it and change
    each distance by less than the round-off of computing it.
    """
    w, V = eigh_psd(M)
    tiny = eigenvalue_roundoff(M.shape[0], float(w[0]), float(w[-1]))
    pos, neg = w > tiny, w < -tiny
    return V[:, pos] * np.sqrt(w[pos]), V[:, neg] * np.sqrt(-w[neg])


def eigenvalue_roundoff(d, w_min, w_max):
    """``d eps max(|w_min|, |w_max|)``: below it an eigenvalue of a ``d x d``
    symmetric matrix with extreme eigenvalues ``w_min``, ``w_max`` is
    round-off (see :func:`signed_factors`)."""
    return d * float(np.finfo(float).eps) * max(abs(w_min), abs(w_max), 0.0)


def project_psd(A, return_factor=False):
    """Euclidean projection of a (symmetrised) matrix onto the PSD cone.

    Parameters
    ----------
    A : ndarray of shape (d, d)
    return_factor : bool
        Also return ``G`` (d, r) with ``P = G G^T``, r the number of positive
        eigenvalues.

    Returns
    -------
    P : ndarray of shape (d, d)
    G : ndarray of shape (d, r), only if ``return_factor``
    """
    w, V = eigh_psd(A)
    pos = w > 0
    G = V[:, pos] * np.sqrt(w[pos])
    P = G @ G.T
    return (P, G) if return_factor else P


def _centred_span(X, R=None):
    """``(sv, V)``: the singular values of the centred rows of ``X`` above
    ``max(n, d) eps`` times the largest (the numerical rank ``r``) and
    their right singular vectors, ``V`` of shape (d, r); ``r = 0`` when
    every row is the same point.  ``R``, when given, is a matrix of ``d``
    columns with the centred rows' singular values and right singular
    vectors -- the centred rows themselves, already formed, or the
    triangular factor of their QR decomposition computed where ``X``
    lives -- and ``X`` only gives the shape (n, d)."""
    if R is None:
        R = X - X.mean(axis=0)
    _, sv, Vt = np.linalg.svd(R, full_matrices=False)
    if sv.size == 0 or sv[0] == 0:
        return sv[:0], np.zeros((X.shape[1], 0))
    keep = sv > sv[0] * max(X.shape) * np.finfo(float).eps
    return sv[keep], Vt[keep].T


def span_basis(X):
    """``B`` (d, r), orthonormal, spanning the centred rows of ``X`` (every
    difference of two rows); ``r`` the numerical rank, 0 when every row is
    the same point."""
    return _centred_span(X)[1]


def whitening_basis(X, R=None):
    """``B`` (d, r) spanning the centred rows of ``X``, whitened: ``X_c B``
    has orthogonal columns of norm ``sqrt(n)`` (unit variance).  ``r`` is
    the numerical rank (singular values above ``max(n, d) eps`` times the
    largest).  ``R``: as in :func:`_centred_span` (``X`` on a device or a
    cluster, of which only the shape is read)."""
    sv, V = _centred_span(X, R)
    return V * (np.sqrt(X.shape[0]) / sv)


class PairOperator:
    """Weighted outer-product sums and squared distances for a set of pairs.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    pairs : ndarray of int, shape (n_pairs, 2)
        Pairs ``(i, j)``; ``i == j`` is allowed (a zero difference vector).
    materialize : bool, optional
        Force (True) or forbid (False) storing the difference vectors; by
        default they are stored when ``n_pairs * d`` is below a budget.
    dtype : {numpy.float64, numpy.float32}
        Precision of the stored data and of the products (results are
        float64 either way).  float32 halves the time of the large products
        for callers that need about six digits (a first, coarse working-set
        round); anything certified is computed in float64.
    """

    def __init__(self, X, pairs, materialize=None, *, centered=False,
                 dtype=np.float64):
        # distances are translation invariant; centring keeps the
        # sample-space form x_i'Vx_i + x_j'Vx_j - 2 x_i'Vx_j well conditioned
        self.dtype = np.dtype(dtype)
        X = X if centered else X - X.mean(axis=0)
        self.X = X = X.astype(self.dtype, copy=False)
        self.i = np.ascontiguousarray(pairs[:, 0])
        self.j = np.ascontiguousarray(pairs[:, 1])
        self.n_pairs = len(self.i)
        n, d = X.shape
        if materialize is None:
            # the sample-space forms cost O(n d^2 + n_pairs d) instead of
            # O(n_pairs d^2): better as soon as pairs outnumber points, except
            # on tiny problems where call overheads dominate
            materialize = self.n_pairs <= n or self.n_pairs * d <= _SMALL_PHI
        self.Phi = X[self.i] - X[self.j] if materialize else None  # (n_pairs, d)
        # dense n x n kernels pay off while n^2 is comparable to the number
        # of pairs; beyond, sparse Laplacians and row gathers are cheaper
        self._dense_kernel = n <= _KERNEL_MAX and n * n <= 4 * self.n_pairs

    def _init_laplacian(self, n):
        # L = sum_p w_p (e_i - e_j)(e_i - e_j)^T: off the diagonal one entry
        # per distinct unordered pair (and its mirror), on it the weighted
        # degrees.  Fix the sparsity pattern once -- a sort of the distinct
        # pairs' keys, one per pair rather than four (at 2 * 10^6 pairs the
        # four-key sort was 3 s of a solve that builds one Laplacian) --
        # then each L.data is two bincounts and a gather.
        i, j = self.i, self.j
        off = i != j  # a pair (i, i) has phi = 0 and adds nothing
        lo, hi = np.minimum(i[off], j[off]), np.maximum(i[off], j[off])
        ukeys, inv = np.unique(lo.astype(np.int64) * n + hi, return_inverse=True)
        ulo, uhi = ukeys // n, ukeys % n
        m, diag = len(ukeys), np.arange(n)
        # each entry's number as its value: after the conversion (which
        # orders the entries by row and column) data[k] names the entry at
        # position k; no entry repeats, so nothing is summed
        pattern = sp.csr_matrix(
            (np.arange(2 * m + n, dtype=float),
             (np.concatenate([ulo, uhi, diag]), np.concatenate([uhi, ulo, diag]))),
            shape=(n, n))
        self._lap_off, self._lap_inv, self._lap_m = off, inv, m
        self._lap_perm = pattern.data.astype(np.intp)
        self._lap_cols, self._lap_indptr = pattern.indices, pattern.indptr
        self._n = n

    def laplacian(self, w):
        """Sparse ``L`` with ``X^T L X = sum_p w_p phi_p phi_p^T``."""
        if not hasattr(self, "_lap_inv"):
            self._init_laplacian(self.X.shape[0])
        w = np.where(self._lap_off, w, 0.0)
        pair = np.bincount(self._lap_inv, weights=w[self._lap_off], minlength=self._lap_m)
        degree = (np.bincount(self.i, weights=w, minlength=self._n)
                  + np.bincount(self.j, weights=w, minlength=self._n))
        data = np.concatenate([-pair, -pair, degree])[self._lap_perm]
        return sp.csr_matrix(
            (data, self._lap_cols, self._lap_indptr), shape=(self._n, self._n)
        )

    def gram(self, w, *, single=False):
        """``sum_p w_p phi_p phi_p^T`` as a dense (d, d) matrix.

        ``single=True`` computes it in float32 from the stored difference
        vectors (when stored; else as usual): for increments of a matrix
        that is recomputed in full precision now and then.
        """
        n, d = self.X.shape
        nz = np.flatnonzero(w)
        if single and self.Phi is not None:
            P32 = getattr(self, "_Phi32", None)
            if P32 is None:
                P32 = self._Phi32 = self.Phi.astype(np.float32, copy=False)
            w32 = w.astype(np.float32)
            if 2 * len(nz) < self.n_pairs:
                P32, w32 = P32[nz], w32[nz]
            return (P32.T @ (w32[:, None] * P32)).astype(float)
        # the pairs that carry weight, gathered: O(n_nz d^2) (plus the
        # gather when Phi is not stored), against the Laplacian's
        # O(n_pairs d) sparse product and O(n d^2) dense one
        gather = len(nz) * d * (d + (0 if self.Phi is not None else _GATHER_COST))
        laplacian = _SPARSE_COST * 4 * self.n_pairs * (d + 1) + n * d * d
        if self._dense_kernel:
            laplacian = min(laplacian, n * n * d + n * d * d)
        w = w.astype(self.dtype, copy=False)
        if gather <= laplacian:
            # most pairs weighted: the stored vectors as they are (zero
            # weights cost less than gathering the others)
            if self.Phi is not None and 2 * len(nz) >= self.n_pairs:
                return (self.Phi.T @ (w[:, None] * self.Phi)).astype(float, copy=False)
            P = self._diffs(nz)  # (n_nz, d)
            return (P.T @ (w[nz, None] * P)).astype(float, copy=False)
        if self._dense_kernel:
            # dense Laplacian: L = diag(W 1) - W with W the symmetrised
            # weighted adjacency of the pairs
            W = np.bincount(self.i * n + self.j, w, n * n).reshape(n, n)
            W = W + W.T
            L = np.diag(W.sum(axis=1)) - W
            return (self.X.T @ (L @ self.X)).astype(float, copy=False)
        L = self.laplacian(w)
        return (self.X.T @ (L @ self.X)).astype(float, copy=False)

    def _diffs(self, idx):
        """Difference vectors of the pairs ``idx``, shape (len(idx), d)."""
        if self.Phi is not None:
            return self.Phi[idx]
        return self.X[self.i[idx]] - self.X[self.j[idx]]

    def sqdist(self, M=None, G=None, subset=None):
        """Squared distances ``phi_p^T M phi_p`` of every pair (or ``subset``).

        Pass either ``M`` (d, d) or a factor ``G`` (d, r) with ``M = G G^T``
        (cheaper when r < d).  ``subset`` (int array) restricts the pairs;
        the result then has ``len(subset)`` entries.
        """
        if G is not None:
            G = G.astype(self.dtype, copy=False)
        elif M is not None and subset is not None:
            M = M.astype(self.dtype, copy=False)
        if subset is not None:
            out = np.empty(len(subset))
            for s in range(0, len(subset), _CHUNK):
                P = self._diffs(subset[s:s + _CHUNK])  # (chunk, d)
                Z = P @ G if G is not None else P @ M
                out[s:s + _CHUNK] = np.einsum("pr,pr->p", Z, Z if G is not None else P)
            return out
        if G is None:
            G, G_neg = signed_factors(M)
            # an indefinite M (a subgradient iterate) still needs exact
            # values: M = G+ G+^T - G- G-^T, the negative part with as many
            # columns as negative eigenvalues beyond round-off
            if G_neg.shape[1]:
                return self.sqdist(G=G) - self.sqdist(G=G_neg)
            G = G.astype(self.dtype, copy=False)
        if G.shape[1] == 0:
            return np.zeros(self.n_pairs)
        if self.Phi is not None:
            Z = self.Phi @ G  # (n_pairs, r)
            return np.einsum("pr,pr->p", Z, Z).astype(float, copy=False)
        Z = self.X @ G  # (n, r)
        return self._sample_space(Z, Z)

    def quadform(self, V, subset=None):
        """``phi_p^T V phi_p`` for a symmetric, possibly indefinite ``V``.

        Without stored difference vectors it uses
        ``x_i^T V x_i + x_j^T V x_j - 2 x_i^T V x_j``: O(n d^2 + n_pairs d)
        instead of O(n_pairs d^2).
        """
        idx = np.arange(self.n_pairs) if subset is None else subset
        V = V.astype(self.dtype, copy=False)
        if self.Phi is not None:
            P = self.Phi[idx]
            return np.einsum("pd,pd->p", P @ V, P).astype(float, copy=False)
        return self._sample_space(self.X @ V, self.X, subset)

    def _sample_space(self, A, B, subset=None):
        """``q_i + q_j - 2 a_i^T b_j`` with ``q_i = a_i^T b_i``, per pair.

        With ``A = X V`` and ``B = X`` this is ``phi^T V phi``; with
        ``A = B = X G`` it is ``||G^T phi||^2``.
        """
        i, j = (self.i, self.j) if subset is None else (self.i[subset], self.j[subset])
        q = np.einsum("nr,nr->n", A, B)
        q = q.astype(float, copy=False)
        if self._dense_kernel:
            K = A @ B.T  # (n, n)
            return q[i] + q[j] - 2 * K[i, j]
        out = np.empty(len(i))
        for s in range(0, len(i), _CHUNK):
            ii, jj = i[s:s + _CHUNK], j[s:s + _CHUNK]
            out[s:s + _CHUNK] = q[ii] + q[jj] - 2 * np.einsum("pr,pr->p", A[ii], B[jj])
        return out

"""The SLR problem in the coordinates of ``range(X)``, shared by every solver.

Qian, Baytas, Jin, Jain, Zhu (2015).  The paper's data matrix is ``d x n``
(columns are samples); here ``X`` is ``(n, d)`` with one sample per row, so
the paper's ``X^T M X`` is ``K = X M X^T`` (n, n) with ``K_ij = x_i^T M x_j``,
the bilinear similarity.  ``M`` (d, d) is a general matrix: neither
symmetric nor PSD.

The two problems
----------------
**Eq. 1** (least squares onto a fixed target ``Y``, Eq. 2 by default)::

    min_M ||X M X^T - Y||_F^2,      closed form (Eq. 3)  M = X^+ Y X^{+T}

(the paper's ``(X_p^+)^T Y X_p^+`` with ``X_p = X^T``).

**Eq. 4** (squared hinge, thresholds ``delta1 > delta2``, every ordered
pair ``(i, j)`` including ``i = j``, as Eq. 2 does)::

    f(M) = sum_{y_i = y_j} [delta1 - K_ij]_+^2 + sum_{y_i != y_j} [K_ij - delta2]_+^2

Equivalently ``min_{M, T in B} ||X M X^T - T||_F^2`` with the box of
targets ``B = {T : T_ij >= delta1 if y_i = y_j, T_ij <= delta2 otherwise}``
(minimising over ``T`` entry by entry gives the squared hinge); Algorithm 1
alternates between the two sets.  Write ``s_ij = +1`` for same-class and
``-1`` for different-class pairs and ``b_ij = delta1`` or ``-delta2``: every
term is ``[b_ij - s_ij K_ij]_+^2`` and ``a_ij = b_ij - s_ij K_ij`` is its
*hinge argument* (``> 0``: active).

Coordinates of ``range(X)`` (the Gram rewrite)
----------------------------------------------
With the thin SVD ``X = U S V^T`` (rank ``r``, ``U`` (n, r) orthonormal),
``K = X M X^T = U Z U^T`` with ``Z = S V^T M V S`` (r, r), and every ``Z``
comes from some ``M`` (``M = V S^{-1} Z S^{-1} V^T``, the minimum-norm one;
components of ``M`` outside ``range(V) x range(V)`` do not change ``K``).
So Eq. 1 and Eq. 4 are problems in ``Z``: the set ``{X M X^T}`` is the
subspace ``L = {U Z U^T}`` and its orthogonal projection is
``T -> U (U^T T U) U^T``.  Eq. 1 splits as

    ||U Z U^T - Y||^2 = ||Z - U^T Y U||^2 + (||Y||^2 - ||U^T Y U||^2),

the first part fitted exactly by ``Z = U^T Y U`` (this is Eq. 3), the
second the part of ``Y`` no ``M`` can reach.  Eq. 4 becomes
``f(Z) = sum_ij [b_ij - s_ij u_i^T Z u_j]_+^2`` (``u_i`` the rows of ``U``),
a convex, piecewise quadratic, continuously differentiable function of
``r^2`` variables.  With ``Lambda_ij = -2 s_ij [a_ij]_+``,

    grad f(Z) = U^T Lambda U,   and   ||grad f(Z) - grad f(Z')|| <= 2 ||Z - Z'||

(the map ``Z -> U Z U^T`` is an isometry).

Symmetry.  ``f(Z^T) = f(Z)`` (the class relation and the thresholds are
symmetric), so by convexity ``f((Z + Z^T)/2) <= f(Z)``: Eq. 4 has a
symmetric minimiser, and the solvers work in the ``p = r(r+1)/2``
orthonormal coordinates ``svec(Z)`` of symmetric matrices (off-diagonal
entries scaled by ``sqrt(2)``).  There the (generalised) Hessian is

    H(Z) = 2 sum_{ij : a_ij > 0} phi_ij phi_ij^T,   phi_ij = svec(sym(u_i u_j^T)),

with ``0 <= H <= 2 I`` (``H = 2 I`` when every term is active).

Dual and certificate
--------------------
For ``min_{Z, T in B} ||U Z U^T - T||^2`` the Lagrangian dual is

    g(Lambda) = -||Lambda||_F^2 / 4 - <Lambda, D>,   D_ij = s_ij b_ij (= delta1 or delta2),

over ``Lambda`` with ``U^T Lambda U = 0``, ``Lambda_ij <= 0`` on same-class
and ``>= 0`` on different-class pairs; strong duality holds and the optimal
``Lambda`` is the gradient ``-2 s [a]_+`` at any minimiser (unique).  The
certificate of a point (:meth:`SLRData.certificate`) takes the largest of
three valid lower bounds on the optimum:

1. ``0`` (the loss is nonnegative; tight when the classes are separable by a
   bilinear form, e.g. ``n <= d`` with ``X`` of full row rank).
2. The dual bound ``g(Lambda_1)``: one Newton step on the active set of the
   (symmetrised) point gives ``Z_1`` where the quadratic model's gradient
   ``Lambda_1`` (the hinge residuals of the active terms at ``Z_1``)
   satisfies ``U^T Lambda_1 U = 0``; when every active term is still active
   at ``Z_1``, ``Lambda_1`` is dual feasible.  Exact once the active set has
   been identified.
3. A local strong-convexity (KKT residual) bound: terms with
   ``a_ij > rho ||u_i|| ||u_j||`` stay active on the ball ``||Z' - Z||_F <= rho``,
   so there ``f >= f(Z) + <g, dZ> + dZ^T H_rho dZ / 2`` with ``H_rho`` their
   Hessian (the other terms are convex).  If ``lambda_min(H_rho) rho > 2 ||g||``
   the minimum over the ball is interior, hence global, and
   ``f* >= f(Z) - g^T H_rho^{-1} g / 2``.  Robust to terms that sit exactly on
   their threshold at the optimum.

``gap = f(M) - bound`` with ``f(M)`` recomputed from ``X M X^T``.

Memory: nothing of size ``n x n`` is stored.  Every pass runs over blocks of
rows (``block_rows x n``, about ``2^20`` entries, 8 MB), so a pass costs
``O(n^2 r)`` time (``O(n^2 p)`` with the Hessian) and ``O(n r + n p + p^2)``
memory.
"""

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

from .._tolerances import certificate_tolerance
from .._validation import check_samples, check_scalar
from ..result import Certificate

_GAP, _FEAS = certificate_tolerance("slr")

__all__ = ["SLRData", "eq3_closed_form", "check_thresholds", "svec", "smat",
           "newton_decrement", "DEFAULT_BLOCK", "SMALL_SAMPLES"]

#: Entries of one row block (b x n) in a pass over the pairs.
DEFAULT_BLOCK = 1 << 20

# Up to this many terms change side on the certificate's ball, their
# features are subtracted from the Hessian instead of a masked pass.
_FEW_TERMS = 50_000
# Curvature below this (H has eigenvalues in [0, 2]) counts as singular.
_TINY_CURVATURE = 1e-12
#: Up to this many samples the passes are small products and BLAS runs
#: single-threaded: on a loaded machine threading made the certificate of a
#: p = 300 problem 140x slower (measured: 5.3 s against 0.037 s).
SMALL_SAMPLES = 400


def blas_threads(n_samples):
    """``threadpool_limits`` context: one BLAS thread for small ``n``."""
    return threadpool_limits(limits=1 if n_samples <= SMALL_SAMPLES else None,
                             user_api="blas")

_SQRT2 = np.sqrt(2.0)


def svec(Z):
    """Orthonormal coordinates of the symmetric part of ``Z`` (r, r) -> (p,).

    Upper triangle row by row, off-diagonal entries times ``sqrt(2)``, so that
    ``svec(A) @ svec(B) = <A, B>`` for symmetric ``A``, ``B``.
    """
    Z = np.asarray(Z, dtype=float)
    r = Z.shape[0]
    iu = np.triu_indices(r)
    S = 0.5 * (Z + Z.T)
    return S[iu] * np.where(iu[0] == iu[1], 1.0, _SQRT2)


def smat(z, r):
    """Inverse of :func:`svec`: the symmetric (r, r) matrix of ``z`` (p,)."""
    iu = np.triu_indices(r)
    vals = np.asarray(z, dtype=float) / np.where(iu[0] == iu[1], 1.0, _SQRT2)
    Z = np.zeros((r, r))
    Z[iu] = vals
    Z[(iu[1], iu[0])] = vals
    return Z


def newton_decrement(f, g, H):
    """``g^T H^{-1} g / 2`` relative to ``max(1, f)`` (``inf`` if ``H`` is singular).

    Estimates ``f - min f`` once the active set is the optimum's (then the
    quadratic model is exact); the certificate makes it rigorous.
    """
    if not np.any(g):
        return 0.0
    try:
        c = scipy.linalg.cho_factor(H, check_finite=False)
    except np.linalg.LinAlgError:
        return np.inf
    val = 0.5 * float(g @ scipy.linalg.cho_solve(c, g, check_finite=False))
    return max(0.0, val) / max(1.0, f)


def eq3_closed_form(X, Y):
    """Eq. 3: the minimum-norm minimiser ``M = X^+ Y X^{+T}`` of Eq. 1.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Y : ndarray of shape (n, n)
        Target similarities.

    Returns
    -------
    M : ndarray of shape (d, d)
    """
    X = check_samples(X, "X")
    n = X.shape[0]
    Y = np.asarray(Y, dtype=float)
    if Y.shape != (n, n):
        raise ValueError(f"Y: expected shape ({n}, {n}), got {Y.shape}.")
    if not np.all(np.isfinite(Y)):
        raise ValueError("Y: contains NaN or infinite values.")
    P = np.linalg.pinv(X)  # (d, n)
    return P @ Y @ P.T


def check_thresholds(delta1, delta2):
    """Validate ``delta1 > delta2`` (finite reals); return them as floats."""
    delta1 = check_scalar(delta1, "delta1")
    delta2 = check_scalar(delta2, "delta2")
    if not delta1 > delta2:
        raise ValueError(
            f"delta1, delta2: need delta1 > delta2 (same-class similarities "
            f"above different-class ones), got delta1={delta1}, delta2={delta2}."
        )
    return delta1, delta2


def _encode_labels(y, n):
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y: expected shape ({n},), got {y.shape}.")
    if y.dtype == object or y.dtype.kind not in "iub":
        if y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
            pass  # integral floats are class labels
        else:
            raise ValueError(
                f"y: expected integer class labels, got dtype {y.dtype}."
            )
    classes, codes = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(
            f"y: SLR needs at least 2 classes, got {classes.size} class; with "
            "one class every pair is similar and Eq. 4 has no different-class "
            "term."
        )
    return codes.reshape(-1).astype(np.intp), classes


@dataclass(eq=False)
class SLRData:
    """Eq. 4 data: samples, labels, thresholds and the thin SVD of ``X``.

    Build with :meth:`from_labels`.

    Attributes
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of int, shape (n,)
        Class codes ``0 .. n_classes - 1``.
    classes : ndarray
        The original labels (``classes[y]``).
    delta1, delta2 : float
        Thresholds, ``delta1 > delta2``.
    U : ndarray of shape (n, r)
    s : ndarray of shape (r,)
        Singular values above the rank tolerance, decreasing.
    V : ndarray of shape (d, r)
    block_rows : int
        Rows per block in a pass over the pairs.
    """

    X: np.ndarray
    y: np.ndarray
    classes: np.ndarray
    delta1: float
    delta2: float
    U: np.ndarray
    s: np.ndarray
    V: np.ndarray
    block_rows: int
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_labels(cls, X, y, *, delta1=1.0, delta2=0.0, rank_tol=None,
                    block=DEFAULT_BLOCK):
        """Validate and factor.

        Parameters
        ----------
        X : array_like of shape (n, d)
        y : array_like of int, shape (n,)
            Class labels; at least two classes.
        delta1, delta2 : float
            Same-class similarities should reach ``delta1``, different-class
            ones stay below ``delta2``; ``delta1 > delta2``.
        rank_tol : float, optional
            Singular values below ``rank_tol * s_max`` are dropped (default
            ``max(n, d) * eps``, as :func:`numpy.linalg.matrix_rank`).
        block : int
            Entries per row block of a pass.
        """
        X = check_samples(X, "X")
        n, d = X.shape
        codes, classes = _encode_labels(y, n)
        delta1, delta2 = check_thresholds(delta1, delta2)
        U, s, Vt = np.linalg.svd(X, full_matrices=False)
        if s[0] == 0:
            raise ValueError("X: all samples are zero; x_i^T M x_j is 0 for every M.")
        tol = rank_tol if rank_tol is not None else max(n, d) * np.finfo(float).eps
        r = int(np.sum(s > tol * s[0]))
        block = int(block)
        if block < 1:
            raise ValueError(f"block: must be >= 1, got {block}.")
        return cls(
            X=X, y=codes, classes=classes, delta1=delta1, delta2=delta2,
            U=np.ascontiguousarray(U[:, :r]), s=s[:r].copy(),
            V=np.ascontiguousarray(Vt[:r].T), block_rows=max(1, block // n),
        )

    # -- sizes -----------------------------------------------------------------

    @property
    def n_samples(self):
        return self.X.shape[0]

    @property
    def n_features(self):
        return self.X.shape[1]

    @property
    def rank(self):
        return self.s.shape[0]

    @property
    def n_classes(self):
        return self.classes.shape[0]

    @property
    def n_sym(self):
        """``p = r (r + 1) / 2``, the number of symmetric coordinates."""
        r = self.rank
        return r * (r + 1) // 2

    # -- coordinates -----------------------------------------------------------

    def Z_of_M(self, M):
        """``Z = S V^T M V S`` (r, r): ``X M X^T = U Z U^T``."""
        M = np.asarray(M, dtype=float)
        d = self.n_features
        if M.shape != (d, d):
            raise ValueError(f"M: expected shape ({d}, {d}), got {M.shape}.")
        W = self.V * self.s  # (d, r) = V S
        return W.T @ M @ W

    def M_of_Z(self, Z):
        """The minimum-norm ``M = V S^{-1} Z S^{-1} V^T`` with ``Z_of_M(M) = Z``."""
        W = self.V / self.s  # (d, r) = V S^{-1}
        return W @ Z @ W.T

    def target(self):
        """``D`` (n, n): ``delta1`` on same-class pairs, ``delta2`` elsewhere.

        The Eq. 2 target when ``delta1 = 1``, ``delta2 = 0``.  Built in full;
        meant for small ``n`` (tests, Eq. 1 / Eq. 3).
        """
        same = self.y[:, None] == self.y[None, :]
        return np.where(same, self.delta1, self.delta2)

    def least_squares_Z(self, Y=None):
        """Eq. 3 in coordinates: ``Z = U^T Y U`` (``Y`` default :meth:`target`).

        Without ``Y`` the product is taken block by block (no n x n array).
        """
        if Y is not None:
            Y = np.asarray(Y, dtype=float)
            return self.U.T @ Y @ self.U
        r = self.rank
        Z = np.zeros((r, r))
        for rows, same in self._blocks():
            D = np.where(same, self.delta1, self.delta2)
            Z += self.U[rows].T @ (D @ self.U)
        return Z

    def _blocks(self):
        """Row blocks: ``(slice, same)`` with ``same`` (b, n) the class mask."""
        n, b = self.n_samples, self.block_rows
        for start in range(0, n, b):
            rows = slice(start, min(n, start + b))
            yield rows, self.y[rows, None] == self.y[None, :]

    def _args(self, K, same):
        """Hinge arguments ``a = b - s K`` of a block."""
        return np.where(same, self.delta1 - K, K - self.delta2)

    # -- objective, gradient, Hessian ---------------------------------------

    def objective(self, M):
        """Eq. 4 at ``M`` (d, d), recomputed from ``X M X^T``."""
        M = np.asarray(M, dtype=float)
        d = self.n_features
        if M.shape != (d, d):
            raise ValueError(f"M: expected shape ({d}, {d}), got {M.shape}.")
        XM = self.X @ M  # (n, d)
        f = 0.0
        for rows, same in self._blocks():
            K = XM[rows] @ self.X.T
            a = np.maximum(self._args(K, same), 0.0)
            f += float(np.sum(a * a))
        return f

    def objective_Z(self, Z):
        """Eq. 4 at ``X M X^T = U Z U^T``."""
        return self.evaluate(Z)[0]

    def eq1_objective(self, M, Y=None):
        """Eq. 1, ``||X M X^T - Y||_F^2`` (``Y`` default :meth:`target`)."""
        Y = self.target() if Y is None else np.asarray(Y, dtype=float)
        R = self.X @ M @ self.X.T - Y
        return float(np.sum(R * R))

    def evaluate(self, Z, *, grad=False, hessian=False):
        """One pass: ``f(Z)``, and optionally the gradient and the Hessian.

        Parameters
        ----------
        Z : ndarray of shape (r, r)
            Not necessarily symmetric (the Hessian is only formed for
            symmetric ``Z``).
        grad : bool
            Return ``grad f(Z) = U^T Lambda U`` (r, r).
        hessian : bool
            Return the generalised Hessian in symmetric coordinates (p, p),
            from the terms with ``a_ij > 0``.

        Returns
        -------
        f : float
        G : ndarray of shape (r, r) or None
        H : ndarray of shape (p, p) or None
        n_active : int
            Number of terms with ``a_ij > 0``.
        """
        U = self.U
        W = Z @ U.T  # (r, n): K_B = U_B W
        f, n_active = 0.0, 0
        G = np.zeros_like(Z) if grad else None
        Gq = None
        if hessian:
            Q = self._sym_features()
            Gq = np.zeros((Q.shape[1], Q.shape[1]))
        for rows, same in self._blocks():
            a = self._args(U[rows] @ W, same)
            act = a > 0
            rho = np.where(act, a, 0.0)
            f += float(np.sum(rho * rho))
            n_active += int(np.count_nonzero(act))
            if grad:
                Lam = np.where(same, -2.0 * rho, 2.0 * rho)  # (b, n)
                G += U[rows].T @ (Lam @ U)
            if hessian:
                Gq += Q[rows].T @ (act.astype(float) @ Q)
        H = self._hessian_from_gram(Gq) if hessian else None
        return f, G, H, n_active

    def _sym_features(self):
        """``Q`` (n, p): ``Q_i[(x, y)] = u_ix u_iy`` for ``x <= y``."""
        Q = self._cache.get("Q")
        if Q is None:
            a, b = np.triu_indices(self.rank)
            Q = np.ascontiguousarray(self.U[:, a] * self.U[:, b])
            self._cache["Q"] = Q
        return Q

    def _hessian_index(self):
        """Index arrays turning the Gram ``Q^T m Q`` into the Hessian."""
        idx = self._cache.get("hidx")
        if idx is None:
            r = self.rank
            a, b = np.triu_indices(r)
            pos = np.zeros((r, r), dtype=np.intp)
            pos[a, b] = np.arange(a.size)
            pos[b, a] = pos[a, b]
            w = np.where(a == b, 0.5, 1.0 / _SQRT2)
            idx = (pos[a[:, None], a[None, :]], pos[b[:, None], b[None, :]],
                   pos[a[:, None], b[None, :]], pos[b[:, None], a[None, :]],
                   4.0 * np.outer(w, w))
            self._cache["hidx"] = idx
        return idx

    def _hessian_from_gram(self, Gq):
        """``H_kl = 2 sum m_ij phi_ij[k] phi_ij[l]`` from ``Gq = Q^T m Q``.

        With ``phi_ij[(a, b)] = w_ab (u_ia u_jb + u_ib u_ja)`` (``w = 1/2`` on
        the diagonal, ``1/sqrt(2)`` off it) and ``Gq[xy, zw] =
        sum m_ij u_ix u_iy u_jz u_jw`` (symmetric for a symmetric mask ``m``),
        ``sum m phi[k] phi[l] = 2 w_k w_l (Gq[ac, be] + Gq[ae, bc])`` for
        ``k = (a, b)``, ``l = (c, e)``.
        """
        Gq = 0.5 * (Gq + Gq.T)
        ac, be, ae, bc, ww = self._hessian_index()
        return ww * (Gq[ac, be] + Gq[ae, bc])

    def pair_features(self, i, j):
        """``phi_ij`` (k, p) for index arrays ``i``, ``j`` of length k."""
        a, b = np.triu_indices(self.rank)
        Ui, Uj = self.U[i], self.U[j]
        w = np.where(a == b, 0.5, 1.0 / _SQRT2)
        return w * (Ui[:, a] * Uj[:, b] + Ui[:, b] * Uj[:, a])

    # -- Algorithm 1 step ------------------------------------------------------

    def projection_step(self, Z):
        """``(f(Z), Z+)``: ``Z+ = U^T Pi_B(U Z U^T) U``, one step of Algorithm 1.

        ``Pi_B(K) = K + s [a]_+`` (clip to the box of targets), and in
        coordinates ``Z+ = Z + U^T (s [a]_+) U = Z - grad f(Z) / 2``.
        """
        U = self.U
        W = Z @ U.T
        f = 0.0
        step = np.zeros_like(Z)
        for rows, same in self._blocks():
            a = self._args(U[rows] @ W, same)
            rho = np.maximum(a, 0.0)
            f += float(np.sum(rho * rho))
            step += U[rows].T @ (np.where(same, rho, -rho) @ U)
        return f, Z + step

    # -- certificate -------------------------------------------------------------

    def _dual_bound(self, Z, H, g):
        """Bound 2 of the module docstring, or ``-inf`` when not available."""
        p = g.shape[0]
        try:
            c, low = scipy.linalg.cho_factor(H, check_finite=False)
            dz = -scipy.linalg.cho_solve((c, low), g, check_finite=False)
        except np.linalg.LinAlgError:
            return -np.inf
        if not np.all(np.isfinite(dz)) or p == 0:
            return -np.inf
        Z1 = Z + smat(dz, self.rank)
        U = self.U
        W0, W1 = Z @ U.T, Z1 @ U.T
        sq, lin, worst, scale = 0.0, 0.0, 0.0, 0.0
        E = np.zeros_like(Z)
        for rows, same in self._blocks():
            a0 = self._args(U[rows] @ W0, same)
            a1 = self._args(U[rows] @ W1, same)
            act = a0 > 0
            if np.any(act):
                worst = min(worst, float(np.min(a1[act])))
                scale = max(scale, float(np.max(np.abs(a1[act]))))
            rho1 = np.where(act, np.maximum(a1, 0.0), 0.0)
            Lam = np.where(same, -2.0 * rho1, 2.0 * rho1)
            D = np.where(same, self.delta1, self.delta2)
            sq += float(np.sum(Lam * Lam))
            lin += float(np.sum(Lam * D))
            E += U[rows].T @ (Lam @ U)
        # a term that left its active side makes Lambda_1 infeasible (beyond
        # round-off, which is clipped above)
        tiny = 1e-12 * max(1.0, scale, abs(self.delta1), abs(self.delta2))
        if worst < -tiny:
            return -np.inf
        if np.linalg.norm(E) > 1e-9 * max(1.0, np.sqrt(sq)):
            return -np.inf
        return -sq / 4.0 - lin

    def _hessian_robust(self, Z, H, rho):
        """Hessian of the terms with ``a_ij > rho ||u_i|| ||u_j||`` at ``Z``.

        Those terms stay active on the ball ``||Z' - Z||_F <= rho``.  Computed
        as ``H`` minus the few terms in ``(0, rho ||u_i|| ||u_j||]`` when they
        are few, else by a masked pass.
        """
        U = self.U
        W = Z @ U.T
        un = np.linalg.norm(U, axis=1)
        ii, jj, count = [], [], 0
        for rows, same in self._blocks():
            a = self._args(U[rows] @ W, same)
            near = (a > 0) & (a <= rho * un[rows, None] * un[None, :])
            count += int(np.count_nonzero(near))
            if count <= _FEW_TERMS:
                bi, bj = np.nonzero(near)
                ii.append(bi + rows.start)
                jj.append(bj)
        if count == 0:
            return H
        if count <= _FEW_TERMS:
            Phi = self.pair_features(np.concatenate(ii), np.concatenate(jj))
            return H - 2.0 * (Phi.T @ Phi)
        Q = self._sym_features()
        Gq = np.zeros((Q.shape[1], Q.shape[1]))
        for rows, same in self._blocks():
            a = self._args(U[rows] @ W, same)
            keep = a > rho * un[rows, None] * un[None, :]
            Gq += Q[rows].T @ (keep.astype(float) @ Q)
        return self._hessian_from_gram(Gq)

    def _ball_bound(self, Z, f, g, H):
        """Bound 3 of the module docstring, or ``-inf`` when not available."""
        gn = float(np.linalg.norm(g))
        if gn == 0.0:
            return f  # a stationary point of a convex C^1 function
        mu = float(np.linalg.eigvalsh(H)[0]) if H.size else 0.0
        if mu <= _TINY_CURVATURE:
            return -np.inf
        rho = 4.0 * gn / mu
        for _ in range(4):
            Hr = self._hessian_robust(Z, H, rho)
            mu = float(np.linalg.eigvalsh(Hr)[0])
            if mu > _TINY_CURVATURE and mu * rho > 2.0 * gn * (1.0 + 1e-9):
                try:
                    c = scipy.linalg.cho_factor(Hr, check_finite=False)
                except np.linalg.LinAlgError:  # round-off at a tiny mu
                    return -np.inf
                step = scipy.linalg.cho_solve(c, g, check_finite=False)
                return f - 0.5 * float(g @ step)
            if mu <= _TINY_CURVATURE:
                return -np.inf
            rho = 4.0 * gn / mu  # mu(rho) decreases: a larger ball, retried
        return -np.inf

    def lower_bound(self, Z, *, evaluated=None):
        """Best of the three lower bounds on ``min f`` at (the symmetric part of) ``Z``.

        Parameters
        ----------
        Z : ndarray of shape (r, r)
        evaluated : tuple, optional
            ``evaluate(Z, grad=True, hessian=True)`` for a symmetric ``Z``,
            when the caller has it.

        Returns
        -------
        bound : float
        parts : dict
            ``zero``, ``dual`` and ``ball`` bounds (``-inf``: not
            available), ``n_active`` and ``grad_norm`` at the symmetric part.
        """
        Zs = 0.5 * (Z + Z.T)
        with blas_threads(self.n_samples):
            if evaluated is None:
                evaluated = self.evaluate(Zs, grad=True, hessian=True)
            f, G, H, n_active = evaluated
            g = svec(G)
            dual = self._dual_bound(Zs, H, g)
            ball = self._ball_bound(Zs, f, g, H)
        bound = max(0.0, dual, ball)
        return bound, {"zero": 0.0, "dual": float(dual), "ball": float(ball),
                       "n_active": int(n_active),
                       "grad_norm": float(np.linalg.norm(g))}

    def certificate(self, M, *, solver, solver_version="", tolerances=None,
                    times=None, tol_gap=_GAP, tol_feas=_FEAS, Z=None,
                    lower=None, return_parts=False):
        """Certificate of ``M`` for Eq. 4 (no constraints: violation 0).

        Parameters
        ----------
        M : ndarray of shape (d, d)
        Z : ndarray of shape (r, r), optional
            ``Z_of_M(M)`` when the caller has it.
        lower : tuple, optional
            ``lower_bound(Z)`` when the caller has it.
        return_parts : bool
            Also return the three bounds (see :meth:`lower_bound`).

        Returns
        -------
        Certificate
            ``min_eig`` is ``nan``: ``M`` is a general (non-symmetric)
            matrix and no eigenvalue condition applies.
        parts : dict, only if ``return_parts``
        """
        with blas_threads(self.n_samples):
            obj = self.objective(M)
        if lower is None:
            if Z is None:
                Z = self.Z_of_M(M)
            lower = self.lower_bound(Z)
        bound, parts = lower
        obj - bound
        cert = Certificate.from_bound(
            obj, bound, max_violation=0.0, min_eig=float("nan"),
            solver=solver, solver_version=solver_version, tolerances=tolerances,
            times=times, tol_gap=tol_gap, tol_feas=tol_feas)
        return (cert, parts) if return_parts else cert

"""The MMC problem (Xing, Ng, Jordan, Russell 2002), shared by every MMC solver.

Xing et al.'s problem, as stated by Law et al. (IJCV 2016, Eq. 2) and by
Lee et al. (2008, the constraint-based baseline of Eq. 1)::

    (P)   minimise_{M PSD}  f(M) = sum_S D2_M(i, j) = <A_S, M>
          subject to        g(M) = sum_D sqrt(D2_M(i, j)) >= 1

with ``A_S = sum_S C_ij`` and ``D2_M(i, j) = <M, C_ij>``.  The square root
in the constraint (rather than ``D2``) is on purpose: with ``D2`` the
optimum would be rank one (Law et al., footnote 2).  ``diagonal=True``
restricts ``M = diag(w)``, ``w >= 0``; then ``D2_w(i, j) = w^T psi_ij`` with
``psi_ij = phi_ij * phi_ij`` and ``f(w) = a^T w``, ``a = diag(A_S)``.

**Scale-free value.**  ``f`` is homogeneous of degree 1 and ``g`` of degree
1/2, so the optimal ``M`` of any positive scaling of the constraint is a
multiple of the same matrix and

    r(M) = f(M) / g(M)^2 = sum_S D2 / (sum_D sqrt D2)^2

is invariant under ``M -> c M`` (and ``X -> c X``).  ``r`` compares any
two solutions, whatever their scale; at a feasible ``M`` with ``g(M) = 1``
it equals ``f(M)``, and the optimal value of (P) is ``r* = min r``.  Xing's
own algorithm solves the equivalent ``max g(M) s.t. <A_S, M> <= 1`` whose
optimum is ``1 / sqrt(r*)``; the fast solvers map their point back by
``M -> M / g(M)^2`` (then ``g = 1`` and ``f = r``).

**Dual bound (derivation).**  For ``a >= 0`` and any ``u > 0``,
``sqrt(a) <= a / (2u) + u / 2`` (AM-GM, equality iff ``u = sqrt(a)``).
Hence for every ``u in R^|D|, u > 0``,

    g(M) <= <B_u, M> + ||u||_1 / 2,     B_u = sum_D C_ij / (2 u_ij),

and every feasible ``M`` satisfies ``<B_u, M> >= 1 - ||u||_1 / 2``.  The
same holds for ``s u`` (``s > 0``), i.e. ``<B_u, M> >= s - s^2 ||u||_1 / 2``;
the best ``s = 1 / ||u||_1`` gives ``<B_u, M> >= 1 / (2 ||u||_1)``.  If
``B_u <= lambda A_S`` in the Loewner order, ``<B_u, M> <= lambda <A_S, M>``
for every PSD ``M``, so

    f(M) >= LB(u) = 1 / (2 ||u||_1 lambda_max(B_u, A_S))
                  = 1 / (||u||_1 lambda_max(2 B_u, A_S))

for every feasible ``M``, with ``lambda_max(B, A) = max_v v'Bv / v'Av`` the
largest generalised eigenvalue (``+inf``, i.e. ``LB = 0``, when ``B`` has a
component outside the range of ``A_S``).  Diagonal: ``lambda_max`` becomes
``max_k b_k / a_k`` with ``b = diag(B_u)``.  ``LB`` is invariant under
``u -> c u``.

*It is tight.*  At an optimum ``M*`` every dissimilar distance is positive
(moving ``M*`` towards ``C_ij`` raises ``g`` at rate ``sqrt(t)`` and ``f``
at rate ``t``), and the KKT conditions of (P) read
``A_S - lambda grad g(M*) = Z >= 0``, ``<Z, M*> = 0``, with
``grad g = sum_D C_ij / (2 sqrt D2) = B_u`` at ``u = sqrt(D2_{M*})``.  With
``g(M*) = 1``, Euler's relation ``<grad g, M> = g / 2`` gives
``lambda = 2 f*``, so ``lambda_max(B_u, A_S) = 1 / (2 f*)`` and
``LB(u) = f*`` (``||u||_1 = g(M*) = 1``).  The certificates therefore use
``u = sqrt(D2_M)`` at the point being certified (entries floored at a tiny
positive value; any ``u > 0`` is valid), and the bound needs no dual
variables from a solver: the same formula certifies the exact and the fast
solvers.

**Degenerate data.**  If some dissimilar difference has a component in
the null space of ``A_S`` (a direction no similar pair varies along),
``M = v v^T`` for such a ``v`` gives ``f = 0`` with ``g > 0``: the optimal
value is 0, attained, and the optimal ``M`` ignores every direction the
similar pairs use.  :meth:`MMCData.degenerate_solution` returns a PSD
matrix whose range is the part of ``null(A_S)`` the dissimilar pairs see
(the projector onto it when that part is spanned by features), scaled to
``g = 1``, certified by the trivial bound ``f >= 0``.  The rank decision
is made on the Jacobi-scaled ``A_S`` (unit diagonal), so it does not depend
on the units of the features.  The
solvers return it (``info["degenerate"]`` says why) instead of running an
ill-posed solve.  Directions orthogonal to every difference vector are
harmless (they change no distance) and are left alone.
"""

from dataclasses import dataclass

import numpy as np
import scipy.optimize

from .._linalg import PairOperator, eigh_psd, project_psd
from .._tolerances import certificate_tolerance
from ..constraints import LabeledPairs
from ..result import Certificate

_GAP, _FEAS = certificate_tolerance("mmc")

__all__ = [
    "MMCData",
    "project_psd_halfspace",
    "project_nonneg_halfspace",
]

#: Eigenvalues of the Jacobi-scaled ``A_S`` (unit diagonal) below this
#: fraction of the largest are its null space.
NULL_RTOL = 1e-12
#: A dissimilar difference "sees" the null space when this fraction of its
#: squared length lies there (above round-off of the eigenvectors).
SEEN_RTOL = 1e-10
#: Floor of ``u`` in the dual bound, relative to ``max(u)``.
U_FLOOR = 1e-12
#: The degenerate solution is accepted when its objective is below this
#: fraction of the Euclidean metric's scale-free value ``r(I)``.
DEGENERATE_RTOL = 1e-10


# ---------------------------------------------------------------------------
# Exact projections onto {PSD, <A, M> <= rhs} and {w >= 0, a'w <= rhs}
# ---------------------------------------------------------------------------


def project_psd_halfspace(Y, A, rhs=1.0, *, return_multiplier=False):
    """Euclidean projection of ``Y`` onto ``{M PSD, <A, M> <= rhs}``.

    The KKT conditions of ``min ||M - Y||_F^2 / 2`` over that set give
    ``M = Pi_PSD(Y - mu A)`` with ``mu >= 0``, ``mu (<A, M> - rhs) = 0``.
    ``phi(mu) = <Pi_PSD(Y - mu A), A>`` is nonincreasing (``Pi_PSD`` is
    firmly nonexpansive), so ``mu = 0`` when ``phi(0) <= rhs`` and otherwise
    ``mu`` is the root of ``phi(mu) = rhs``, bracketed by
    ``[0, hi]``, ``hi = ||Pi_PSD(Y)||_F^2 / (2 rhs)`` (comparing ``M(mu)``
    with ``M = 0`` in ``||M - Y||^2 / 2 + mu <A, M>`` gives
    ``mu phi(mu) <= ||Pi_PSD(Y)||_F^2 / 2``) and found by Brent's method to
    machine precision (``|mu - mu*| <= 4 eps (hi + mu)``).  This is the
    exact projection -- alternating
    projections onto the two sets (Xing et al.'s scheme) converge to a
    point of the intersection, not to the projection.

    The returned point is feasible by construction: if the root's last
    digit leaves ``<A, M>`` above ``rhs`` it is scaled by ``rhs / <A, M>``
    (a relative change of order 1e-15).

    Parameters
    ----------
    Y : ndarray of shape (d, d)
        Symmetrised before projecting.
    A : ndarray of shape (d, d)
        Symmetric PSD.
    rhs : float > 0
    return_multiplier : bool
        Also return ``mu``.

    Returns
    -------
    M : ndarray of shape (d, d)
    mu : float, only if ``return_multiplier``
    """
    Y = 0.5 * (Y + Y.T)

    def phi(mu):
        P = project_psd(Y - mu * A)
        return float(np.sum(P * A)), P

    val, P = phi(0.0)
    mu = 0.0
    if val > rhs:
        hi = float(np.sum(P * P)) / (2.0 * rhs)
        val_hi, P_hi = phi(hi)
        if val_hi > rhs:  # round-off at the bracket's end: widen once more
            hi *= 2.0
            val_hi, P_hi = phi(hi)
        mu = scipy.optimize.brentq(lambda m: phi(m)[0] - rhs, 0.0, hi,
                                   xtol=4 * np.finfo(float).eps * hi,
                                   rtol=4 * np.finfo(float).eps, maxiter=500)
        val, P = phi(mu)
        if val > rhs:
            P = P * (rhs / val)
    return (P, mu) if return_multiplier else P


def project_nonneg_halfspace(y, a, rhs=1.0, *, return_multiplier=False):
    """Euclidean projection of ``y`` onto ``{w >= 0, a^T w <= rhs}`` (``a >= 0``).

    ``w = max(y - mu a, 0)`` with the multiplier ``mu >= 0`` of the
    half-space; ``phi(mu) = a^T max(y - mu a, 0)`` is piecewise linear and
    nonincreasing with breakpoints ``y_k / a_k``, so the root of
    ``phi(mu) = rhs`` is found exactly by sorting them (O(d log d)).

    Returns
    -------
    w : ndarray of shape (d,)
    mu : float, only if ``return_multiplier``
    """
    y = np.asarray(y, dtype=float)
    w = np.maximum(y, 0.0)
    mu = 0.0
    if float(a @ w) > rhs:
        act = (a > 0) & (y > 0)
        t = y[act] / a[act]  # breakpoints: coordinate k is positive for mu < t_k
        order = np.argsort(-t)
        t = t[order]
        ay = np.cumsum((a[act] * y[act])[order])
        aa = np.cumsum((a[act] ** 2)[order])
        # with the first k breakpoints active: phi(mu) = ay_k - mu aa_k
        cand = (ay - rhs) / aa
        nxt = np.append(t[1:], 0.0)
        ok = (cand <= t) & (cand >= nxt)
        k = int(np.flatnonzero(ok)[0]) if np.any(ok) else len(t) - 1
        mu = max(float(cand[k]), 0.0)
        w = np.maximum(y - mu * a, 0.0)
        val = float(a @ w)
        if val > rhs:  # round-off: scale the coordinates that a^T w sees
            w = np.where(a > 0, w * (rhs / val), w)
    return (w, mu) if return_multiplier else w


# ---------------------------------------------------------------------------
# The problem data
# ---------------------------------------------------------------------------


def _whiten(A_S, a, K, Phi_D):
    """Whitening ``W`` of ``A_S`` on its range and the null directions D sees.

    Everything is computed on the Jacobi-scaled ``At = A_S[K, K] / sqrt(a a^T)``
    (unit diagonal), so that the rank decision does not depend on the units
    of the features: raw features of scales 1e-2 and 1e3 give ``A_S`` a
    condition number of 1e10 without any near-dependence.

    Returns
    -------
    W : ndarray of shape (d, r)
        ``W^T A_S W = I_r``, zero rows outside ``K``.
    null : ndarray of shape (d, k)
        Unit-norm columns spanning the part of ``null(A_S)`` that the
        dissimilar differences ``Phi_D`` (n_D, d) see: the features with
        ``a_k = 0`` some dissimilar pair varies along, and the seen
        directions of ``null(At)``.
    """
    d = len(a)
    sc = np.sqrt(a[K])  # (|K|,)
    At = A_S[np.ix_(K, K)] / np.outer(sc, sc)
    s, V = eigh_psd(At)
    keep = s > NULL_RTOL * max(s[-1], 1.0) if s.size else np.zeros(0, bool)
    W = np.zeros((d, int(keep.sum())))
    W[K] = (V[:, keep] / np.sqrt(s[keep])) / sc[:, None]
    cols = [np.eye(d)[:, ~K & np.any(Phi_D != 0, axis=0)]]
    N = V[:, ~keep]  # (|K|, k): null(At), orthonormal
    if N.shape[1]:
        Pt = Phi_D[:, K] / sc  # (n_D, |K|) scaled differences
        Z = Pt @ N
        norms = np.sum(Pt * Pt, axis=1)
        frac = np.sum(Z * Z, axis=1) / np.where(norms > 0, norms, 1.0)
        if np.any(frac > SEEN_RTOL):
            _, sv, Vt = np.linalg.svd(Z, full_matrices=False)
            seen = sv > np.sqrt(SEEN_RTOL * norms.max())
            B = np.zeros((d, int(seen.sum())))
            B[K] = (N @ Vt[seen].T) / sc[:, None]  # back to the features' units
            cols.append(B / np.linalg.norm(B, axis=0))
    return W, np.hstack(cols)


@dataclass(eq=False)
class MMCData:
    """Problem (P) of the module docstring, full or diagonal.

    Build with :meth:`from_pairs` or :meth:`create`.

    Attributes
    ----------
    X : ndarray of shape (n, d)
    similar, dissimilar : ndarray of int, shapes (n_S, 2) and (n_D, 2)
        The sets ``S`` and ``D``.
    diagonal : bool
        ``M = diag(w)``, ``w >= 0``.
    A_S : ndarray of shape (d, d)
        ``sum_S C_ij``.
    op_S, op_D : PairOperator
        Over the similar and the dissimilar pairs.
    Psi_D : ndarray of shape (n_D, d) or None
        ``phi_ij * phi_ij`` of the dissimilar pairs (diagonal only).
    a : ndarray of shape (d,)
        ``diag(A_S)``.
    W : ndarray of shape (d, r)
        Whitening of ``A_S`` on its range: ``W^T A_S W = I_r`` (full only).
    null : ndarray of shape (d, k)
        Unit columns spanning the part of ``null(A_S)`` that the dissimilar
        differences see (``k = 0`` unless the data are degenerate).
    """

    X: np.ndarray
    similar: np.ndarray
    dissimilar: np.ndarray
    diagonal: bool
    A_S: np.ndarray
    op_S: PairOperator
    op_D: PairOperator
    Psi_D: np.ndarray
    a: np.ndarray
    W: np.ndarray
    null: np.ndarray

    @classmethod
    def from_pairs(cls, pairs, *, diagonal=False):
        """Build from labelled pairs: +1 is ``S``, -1 is ``D``.

        Parameters
        ----------
        pairs : LabeledPairs
            Validated pairs (finite ``X``, indices in range, no zero-length
            difference vector).
        diagonal : bool

        Raises
        ------
        ValueError
            When ``S`` or ``D`` is empty.
        """
        if not isinstance(pairs, LabeledPairs):
            raise TypeError("pairs: expected a LabeledPairs instance.")
        if not isinstance(diagonal, (bool, np.bool_)):
            raise ValueError(
                f"diagonal: expected True or False, got {diagonal!r}.")
        S, D = pairs.similar, pairs.dissimilar
        if len(S) == 0:
            raise ValueError(
                "pairs: no similar pair (label +1); MMC minimises the similar "
                "pairs' distances and needs at least one.")
        if len(D) == 0:
            raise ValueError(
                "pairs: no dissimilar pair (label -1); MMC's constraint "
                "sum_D sqrt(D2) >= 1 needs at least one.")
        X = pairs.X
        d = X.shape[1]
        op_S = PairOperator(X, S)
        op_D = PairOperator(X, D)
        A_S = op_S.gram(np.ones(len(S)))
        A_S = 0.5 * (A_S + A_S.T)
        # diag(A_S) from the differences themselves: a_k = 0 exactly when
        # feature k is constant within every similar pair
        a = np.zeros(d)
        for start in range(0, len(S), 4096):
            P = X[S[start:start + 4096, 0]] - X[S[start:start + 4096, 1]]
            a += np.sum(P * P, axis=0)
        Phi_D = X[D[:, 0]] - X[D[:, 1]]  # (n_D, d)
        Psi_D = Phi_D * Phi_D if diagonal else None
        K = a > 0
        if diagonal:
            # coordinates with a_k = 0 that some dissimilar pair varies along
            null = np.eye(d)[:, ~K & (Psi_D.max(axis=0) > 0)]
            W = np.zeros((d, 0))
        else:
            W, null = _whiten(A_S, a, K, Phi_D)
        return cls(X=X, similar=S, dissimilar=D, diagonal=bool(diagonal),
                   A_S=A_S, op_S=op_S, op_D=op_D, Psi_D=Psi_D, a=a, W=W,
                   null=null)

    @classmethod
    def create(cls, X, pairs, labels, *, diagonal=False):
        """Validate ``X``, index pairs (n, 2) and labels (+1 / -1), then build."""
        return cls.from_pairs(LabeledPairs.create(X, pairs, labels),
                              diagonal=diagonal)

    def rescaled(self, scale):
        """The same problem on the features ``X / scale`` (``scale > 0``, (d,)).

        ``M`` solves ``self`` exactly when ``diag(1/scale) M diag(1/scale)``
        solves the result: distances, hence ``r`` and the optimal value, are
        unchanged.  Used for diagonal (Jacobi) preconditioning.
        """
        pairs = LabeledPairs(
            self.X / scale, np.vstack([self.similar, self.dissimilar]),
            np.concatenate([np.ones(self.n_similar, np.int8),
                            -np.ones(self.n_dissimilar, np.int8)]))
        return MMCData.from_pairs(pairs, diagonal=self.diagonal)

    # -- sizes ---------------------------------------------------------------

    @property
    def n_features(self):
        return self.X.shape[1]

    @property
    def n_similar(self):
        return len(self.similar)

    @property
    def n_dissimilar(self):
        return len(self.dissimilar)

    @property
    def degenerate(self):
        """Whether a dissimilar direction lies in ``null(A_S)`` (optimum 0)."""
        return self.null.shape[1] > 0

    # -- the variable as a matrix or a vector ---------------------------------

    def as_matrix(self, x):
        """``M`` (d, d) from the variable (``diag(w)`` when diagonal)."""
        x = np.asarray(x, dtype=float)
        return np.diag(x) if x.ndim == 1 else x

    def as_variable(self, M, name="M"):
        """The solver variable from a matrix: ``M`` itself, or its diagonal.

        Raises
        ------
        ValueError
            For a diagonal problem, when ``M`` has a nonzero off-diagonal
            entry (it is then not a point of the diagonal problem).
        """
        M = np.asarray(M, dtype=float)
        d = self.n_features
        if M.ndim == 1:
            if not self.diagonal or M.shape != (d,):
                raise ValueError(f"{name}: expected shape ({d}, {d}), got {M.shape}.")
            return M
        if M.shape != (d, d):
            raise ValueError(f"{name}: expected shape ({d}, {d}), got {M.shape}.")
        if not self.diagonal:
            return 0.5 * (M + M.T)
        w = np.diag(M).copy()
        off = M - np.diag(w)
        if np.any(off != 0):
            raise ValueError(
                f"{name}: the problem is diagonal, but M has off-diagonal "
                f"entries (largest {np.max(np.abs(off)):.3g}).")
        return w

    # -- primal quantities (x is M (d, d) or w (d,)) ---------------------------

    def sqdist_D(self, x):
        """``D2`` of every dissimilar pair, shape (n_D,); linear in ``x``."""
        if self.diagonal:
            return self.Psi_D @ x
        return self.op_D.quadform(0.5 * (x + x.T))

    def f(self, x):
        """``f = sum_S D2 = <A_S, M>`` (the paper's objective)."""
        if self.diagonal:
            return float(self.a @ x)
        return float(np.sum(self.A_S * x))

    def g(self, x=None, *, dist=None):
        """``g = sum_D sqrt(D2)`` (negative round-off of ``D2`` clipped)."""
        if dist is None:
            dist = self.sqdist_D(x)
        return float(np.sum(np.sqrt(np.maximum(dist, 0.0))))

    def grad_g(self, dist):
        """``grad g = sum_D C_ij / (2 sqrt D2)`` from the distances ``D2 > 0``."""
        weights = 0.5 / np.sqrt(dist)
        if self.diagonal:
            return self.Psi_D.T @ weights
        G = self.op_D.gram(weights)
        return 0.5 * (G + G.T)

    def scale_free(self, M):
        """``r(M) = f(M) / g(M)^2``, invariant under ``M -> c M``.

        ``M`` is a (d, d) matrix (diagonal for a diagonal problem) or, for a
        diagonal problem, the vector ``w``.  ``inf`` when ``g(M) = 0``.
        """
        x = self.as_variable(M)
        gx = self.g(x)
        if gx <= 0:
            return np.inf
        return self.f(x) / gx ** 2

    def normalize(self, x):
        """``x / g(x)^2``: the same metric, scaled so that ``g = 1``."""
        gx = self.g(x)
        if gx <= 0:
            raise ValueError("x: every dissimilar distance is zero; it cannot "
                             "be scaled to g = 1.")
        return x / gx ** 2

    def project(self, x):
        """Exact projection onto ``{PSD (w >= 0), <A_S, M> <= 1}``."""
        if self.diagonal:
            return project_nonneg_halfspace(x, self.a)
        return project_psd_halfspace(x, self.A_S)

    def euclidean_value(self):
        """``r(I)``: the scale-free value of the Euclidean metric."""
        d = self.n_features
        return self.scale_free(np.ones(d) if self.diagonal else np.eye(d))

    # -- dual bound ----------------------------------------------------------

    def dual_bound(self, u):
        """``LB(u) = 1 / (||u||_1 lambda_max(2 B_u, A_S))`` (module docstring).

        A lower bound on the optimal value of (P) for every ``u > 0``;
        entries of ``u`` below ``U_FLOOR * max(u)`` are raised to it (the
        bound stays valid).  0 for degenerate data.
        """
        u = np.asarray(u, dtype=float)
        top = float(np.max(u)) if u.size else 0.0
        if self.degenerate or not top > 0 or not np.all(np.isfinite(u)):
            return 0.0
        u = np.maximum(u, U_FLOOR * top)
        if self.diagonal:
            b = self.Psi_D.T @ (1.0 / u)  # diag of 2 B_u
            pos = b > 0
            lam = float(np.max(b[pos] / self.a[pos])) if np.any(pos) else 0.0
        else:
            B = self.op_D.gram(1.0 / u)  # 2 B_u
            C = self.W.T @ (0.5 * (B + B.T)) @ self.W  # (r, r)
            lam = float(np.linalg.eigvalsh(0.5 * (C + C.T))[-1])
        if not lam > 0:
            return 0.0
        return 1.0 / (float(np.sum(u)) * lam)

    def bound_at(self, x, dist=None):
        """``LB(u)`` at ``u = sqrt(D2_x)``: tight at the optimum."""
        if dist is None:
            dist = self.sqdist_D(x)
        return self.dual_bound(np.sqrt(np.maximum(dist, 0.0)))

    # -- degenerate data -----------------------------------------------------

    def degenerate_solution(self):
        """The optimal point of degenerate data, or ``None``.

        ``N N^T`` with ``N`` = :attr:`null` (unit columns spanning the
        directions of ``null(A_S)`` that the dissimilar pairs see; the
        orthogonal projector onto them when they are features or
        orthogonal), a 0/1 vector when diagonal, scaled so that ``g = 1``.
        Its objective is 0 up to round-off and ``f >= 0`` bounds
        the optimum from below.
        """
        if not self.degenerate:
            return None
        if self.diagonal:
            x = np.any(self.null > 0, axis=1).astype(float)
        else:
            x = self.null @ self.null.T
        return self.normalize(x)

    # -- certificate ---------------------------------------------------------

    def certificate(self, x, *, bound=None, solver, solver_version="",
                    tolerances=None, times=None, tol_gap=_GAP, tol_feas=_FEAS):
        """Certificate of ``x`` (``M`` or ``w``) in the paper's units.

        ``x`` is first scaled to ``g(x) = 1`` (a feasible point of (P) with
        ``f = r(x)``).  The dual bound is ``max(bound, LB(sqrt(D2_x)))``
        (``bound``: a valid bound found earlier, e.g. by an iterative
        solver).

        Because the optimum of (P) scales like ``|S| / |D|^2`` and is often
        far below 1, ``passed`` is judged *relative to the objective*: the
        ``tol_gap`` stored is ``tol_gap * |f| / max(1, |f|)``, so that
        ``rel_gap <= tol_gap`` holds exactly when ``gap <= tol_gap * |f|``.
        For degenerate data the optimum is 0; the point passes when its
        objective is below ``DEGENERATE_RTOL * r(I)`` (the Euclidean
        metric's value).

        Returns
        -------
        Certificate
            ``max_violation`` is the larger of ``1 - g(x)`` and the PSD (or
            nonnegativity) violation; ``min_eig`` the smallest eigenvalue
            of ``M`` (smallest ``w_k`` when diagonal).
        """
        x = self.normalize(np.asarray(x, dtype=float))
        if self.diagonal:
            min_eig = float(np.min(x))
        else:
            x = 0.5 * (x + x.T)
            min_eig = float(np.linalg.eigvalsh(x)[0])
        dist = self.sqdist_D(x)
        obj = self.f(x)
        lb = 0.0 if self.degenerate else self.bound_at(x, dist)
        if bound is not None and np.isfinite(bound):
            lb = max(lb, float(bound))
        obj - lb
        scale = max(1.0, abs(obj))
        if self.degenerate:
            allowed = DEGENERATE_RTOL * self.euclidean_value()
        else:
            allowed = tol_gap * abs(obj)
        violation = max(0.0, 1.0 - self.g(dist=dist), -min_eig)
        return Certificate.from_bound(
            obj, lb, max_violation=violation, min_eig=min_eig,
            solver=solver, solver_version=solver_version, tolerances=tolerances,
            times=times, tol_gap=allowed / scale, tol_feas=tol_feas)

    def relative_gap(self, cert):
        """``(f - LB) / f``, the gap relative to the objective itself."""
        if cert.objective == 0:
            return 0.0 if cert.gap <= 0 else np.inf
        return cert.gap / abs(cert.objective)

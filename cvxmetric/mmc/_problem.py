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

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.optimize

from .._backend import (
    Device,
    OnDevice,
    float64,
    is_dask,
    is_numpy,
    namespace,
)
from .._data import Samples
from .._linalg import project_psd
from .._settings import (
    BOUND_TRUST,
    DEGENERATE_RTOL,
    NULL_RTOL,
    SCALE_RANGE,
    SEEN_RTOL,
    U_FLOOR,
)
from .._solver import fit_threads
from .._tolerances import certificate_tolerance
from .._validation import check_indices, check_instance, check_pair_labels
from ..constraints import LabeledPairs
from ..result import Certificate, SolverResult

_GAP, _FEAS = certificate_tolerance("mmc")

__all__ = [
    "MMCData",
    "project_psd_halfspace",
    "project_nonneg_halfspace",
    "mmc_result",
    "DEGENERATE_MSG",
]


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


class _Backend(Device):
    """Where an :class:`MMCData`'s differences live, and the counted moves
    to and from there (:class:`~cvxmetric._backend.Device`).

    NumPy (the default) moves nothing; another namespace (PyTorch, CuPy,
    ``array-api-strict``) keeps the ``n``-sized arrays -- the differences
    and the dissimilar distances -- on its device, and only ``d``-sized
    arrays and scalars cross.
    """

    def count(self, mask):
        """The number of true entries of a boolean array (0-d off NumPy)."""
        if self.on_host:
            return np.count_nonzero(mask)
        return self.xp.sum(self.xp.astype(mask, self.xp.float64))

    def columns(self, Z, K):
        """``Z[:, K]`` for a boolean host mask ``K``."""
        if self.on_host:
            return Z[:, K]
        return self.xp.take(Z, self.dev(np.flatnonzero(K)), axis=1)

    def r_factor(self, Z):
        """The R factor of ``Z = Q R`` (reduced), on the host."""
        if self.on_host:
            return np.linalg.qr(Z, mode="r")
        return self.host(self.xp.linalg.qr(Z).R)

    def rowdot(self, A, B):
        """``sum(A * B, axis=1)``."""
        if self.on_host:
            return np.einsum("pr,pr->p", A, B)
        return self.xp.sum(A * B, axis=1)


def _column_norms(P, xp=np):
    """Euclidean norms of the columns of ``P`` without overflow or underflow
    (on ``P``'s namespace ``xp``; ``P`` has at least one row)."""
    if xp is np and not P.shape[0]:
        return np.zeros(P.shape[1])
    m = xp.max(xp.abs(P), axis=0)
    safe = xp.where(m > 0, m, 1.0)
    return m * xp.sqrt(xp.sum((P / safe) ** 2, axis=0))


def _check_scale(norms, what):
    """Refuse difference scales whose ``M`` is not representable (ValueError)."""
    lo, hi = SCALE_RANGE
    pos = norms[norms > 0]
    if pos.size and (pos.min() < lo or pos.max() > hi):
        bad = pos.min() if pos.min() < lo else pos.max()
        raise ValueError(
            f"X: the {what} differences of some feature have magnitude "
            f"{bad:.3g}; MMC's M scales like 1 / x^2 and would not be "
            f"representable in the user's units (supported: {lo:.0e} to "
            f"{hi:.0e}). Rescale X (the MMC solution is invariant to scaling "
            f"X, up to M -> M / c^2).")


def _whiten(Z_S, Z_D, K, where):
    """Whitening of ``A_S`` from the similar differences, and its null space.

    ``Z_S`` (n_S, d) and ``Z_D`` (n_D, d) are the differences divided by
    the features' scales ``s_k = sqrt(a_k)`` (Jacobi scaling: unit columns
    on ``K``), so that the rank decision does not depend on the features'
    units.  ``where`` (:class:`_Backend`) holds the differences' namespace:
    the QR runs there and only its ``(k, k)`` factor comes to the host.
    The SVD ``Z_S[:, K] = U diag(sv) V^T`` is computed from the
    differences themselves, never from the Gram matrix ``A_S``: a direction
    along which the similar differences are 1e-7 of their length has an
    ``A_S`` eigenvalue of 1e-14, which the Gram matrix only knows to about
    1 %, while the SVD knows its singular value to about 1e-9.

    Returns
    -------
    Wt : ndarray of shape (d, r)
        ``V_r diag(1 / sv_r)`` (zero rows off ``K``): ``Wt^T (Z_S^T Z_S) Wt
        = I_r`` on the numerical range (``sv > NULL_RTOL sv_max``).
    Rt : ndarray of shape (r, d)
        ``diag(sv_r) V_r^T``: ``Rt Wt = I_r``.
    sv : ndarray of shape (r,)
    null : ndarray of shape (d, k)
        Unit columns (Jacobi units) spanning the part of the numerical null
        space the dissimilar differences see: the features with ``a_k = 0``
        some dissimilar pair varies along, and the seen directions of
        ``null(Z_S[:, K])``.
    """
    d = Z_S.shape[1]
    k = int(np.sum(K))
    if k:
        ZK = where.columns(Z_S, K)
        # R of ZK = Q R has ZK's singular values and right singular
        # vectors (Q is orthonormal) and is computed backward stably
        # without Q: memory stays that of the differences, never the
        # (n_S, n_S) left factor a full SVD would build
        ZK = where.r_factor(ZK) if ZK.shape[0] > k else where.host(ZK)
        # (k, k) right factor: with fewer rows than columns its last rows
        # span the null space
        _, sv, Vt = np.linalg.svd(ZK, full_matrices=True)
        sv = np.concatenate([sv, np.zeros(k - sv.size)])
        keep = sv > NULL_RTOL * sv[0]
    else:
        sv, Vt, keep = np.zeros(0), np.zeros((0, 0)), np.zeros(0, bool)
    V = Vt.T
    Wt = np.zeros((d, int(keep.sum())))
    Wt[K] = V[:, keep] / sv[keep]
    Rt = np.zeros((int(keep.sum()), d))
    Rt[:, K] = (V[:, keep] * sv[keep]).T
    varies = where.host(where.xp.any(Z_D != 0, axis=0))
    cols = [np.eye(d)[:, ~K & varies]]
    N = V[:, ~keep]  # (|K|, k0): numerical null space, orthonormal
    if N.shape[1]:
        seen = _seen_null(Z_D, K, N, where)
        if seen is not None:
            B = np.zeros((d, seen.shape[1]))
            B[K] = seen
            cols.append(B)
    return Wt, Rt, sv[keep], np.hstack(cols)


def _seen_null(Z_D, K, N, where):
    """The directions of the null space ``N`` (Jacobi units on ``K``) that
    the dissimilar differences see, as columns, or ``None``."""
    xp = where.xp
    PD = where.columns(Z_D, K)
    Z = PD @ where.dev(N)
    norms = xp.sum(PD * PD, axis=1)
    frac = xp.sum(Z * Z, axis=1) / xp.where(norms > 0, norms, 1.0)
    worst, top = where.scalars(xp.max(frac), xp.max(norms))
    if not worst > SEEN_RTOL:
        return None
    # off the host, Z's singular values and right vectors come from its
    # small R factor (Z itself stays on its device)
    _, s2, V2t = np.linalg.svd(Z if where.on_host else where.r_factor(Z),
                               full_matrices=False)
    seen = s2 > np.sqrt(SEEN_RTOL * top)
    return N @ V2t[seen].T


def labeled_pairs(X, pairs, labels):
    """:meth:`LabeledPairs.create` for ``X`` of any array namespace.

    NumPy input (and lists) is validated as :class:`LabeledPairs` does.  A
    PyTorch, CuPy or ``array-api-strict`` ``X`` stays on its device, cast
    to float64 there (and checked finite there); the pairs and labels are
    validated on the host; zero-length pairs are refused by
    :meth:`MMCData.from_pairs`, which forms the differences.

    Raises
    ------
    TypeError
        For a ``dask.array`` (MMC has no Dask back end).
    """
    if is_numpy(X) or isinstance(X, (list, tuple)) or hasattr(X, "iloc"):
        return LabeledPairs.create(X, pairs, labels)
    if is_dask(X):
        raise TypeError("X: MMC has no Dask back end; give a NumPy array or an "
                        "array of an array-API library (PyTorch, CuPy), which "
                        "the fast solvers keep on its device (docs/backends.md).")
    xp, _ = namespace(X)
    if getattr(X, "ndim", None) != 2 or 0 in tuple(X.shape):
        raise ValueError(f"X: expected a non-empty 2-D array, got shape "
                         f"{tuple(getattr(X, 'shape', ()))}.")
    X = float64(X, xp)
    idx = check_indices(pairs, "pairs", X.shape[0], width=2)
    y = check_pair_labels(labels, idx.shape[0], "pairs labels")
    return LabeledPairs(X, idx, y.astype(np.int8))


def _differences(X, S, D, where):
    """``Phi_S``, ``Phi_D``: the similar and dissimilar differences, on
    ``X``'s device; refuses overflow (and, off NumPy, where
    :class:`LabeledPairs` did not look, non-finite ``X`` and zero-length
    pairs) by name."""
    xp = where.xp
    if where.on_host:
        with np.errstate(over="ignore", invalid="ignore"):
            Phi_S = X[S[:, 0]] - X[S[:, 1]]  # (n_S, d)
            Phi_D = X[D[:, 0]] - X[D[:, 1]]  # (n_D, d)
        bad = not (np.all(np.isfinite(Phi_S)) and np.all(np.isfinite(Phi_D)))
        zero = 0
    else:
        S, D = where.dev(S), where.dev(D)
        Phi_S = xp.take(X, S[:, 0], axis=0) - xp.take(X, S[:, 1], axis=0)
        Phi_D = xp.take(X, D[:, 0], axis=0) - xp.take(X, D[:, 1], axis=0)
        n_bad, zero, x_bad = where.scalars(
            where.count(~xp.isfinite(Phi_S)) + where.count(~xp.isfinite(Phi_D)),
            where.count(xp.all(Phi_S == 0, axis=1)) + where.count(xp.all(Phi_D == 0, axis=1)),
            where.count(~xp.isfinite(X)))
        if x_bad:
            raise ValueError("X: contains NaN or infinite values.")
        bad = n_bad > 0
    if bad:
        raise ValueError(
            "X: a difference x_i - x_j overflows the floating-point range; "
            "rescale X (the MMC solution is invariant to scaling X).")
    if zero:
        raise ValueError(
            f"pairs: {int(zero)} pair(s) have a zero-length difference vector; "
            f"their distance does not depend on the metric.")
    return Phi_S, Phi_D


@dataclass(eq=False)
class MMCData(OnDevice, Samples):
    """Problem (P) of the module docstring, full or diagonal.

    Build with :meth:`from_pairs` or :meth:`create`.  Everything numerical
    is computed on the *Jacobi-scaled differences* ``Z = Phi / s``
    (``s_k = sqrt(a_k)``, so the columns of ``Z_S`` have unit norm), which
    are O(1) whatever the units of ``X``; a matrix ``M`` in the user's units
    is ``Mj / (s s^T)`` with ``Mj`` in those units.

    Attributes
    ----------
    X : ndarray of shape (n, d)
    similar, dissimilar : ndarray of int, shapes (n_S, 2) and (n_D, 2)
        The sets ``S`` and ``D``.
    diagonal : bool
        ``M = diag(w)``, ``w >= 0``.
    A_S : ndarray of shape (d, d)
        ``sum_S C_ij`` (user units; informative, the solvers use ``Z_S``).
    scale : ndarray of shape (d,)
        ``s_k = sqrt(a_k)`` (1 where ``a_k = 0``).
    Z_S, Z_D : ndarray, shapes (n_S, d) and (n_D, d)
        The similar and dissimilar differences divided by ``scale``.
    a : ndarray of shape (d,)
        ``diag(A_S)``.
    Wt, Rt : ndarray, shapes (d, r) and (r, d)
        Whitening of ``Z_S^T Z_S`` on its numerical range, in Jacobi units:
        ``Mj = Wt Mw Wt^T`` has ``<A_S, M> = tr(Mw)``; ``Mw = Rt Mj Rt^T``.
    sv : ndarray of shape (r,)
        Singular values of ``Z_S`` kept by the whitening.
    psi : ndarray of shape (n_D, r)
        Whitened dissimilar differences ``Z_D Wt`` (full only):
        ``D2 = psi_p^T Mw psi_p``.
    null : ndarray of shape (d, k)
        Unit columns (Jacobi units) spanning the part of the numerical null
        space of ``A_S`` that the dissimilar differences see (``k = 0``
        unless the data are degenerate).
    where : _Backend
        Where ``X``, ``Z_S``, ``Z_D`` and ``psi`` live: NumPy by default;
        for an ``X`` of another array namespace (PyTorch, CuPy,
        ``array-api-strict``; :meth:`create`) they stay on its device in
        float64, and so do the sweeps over the pairs and the dissimilar
        distances; everything ``d``-sized (``A_S``, ``scale``, ``Wt``,
        ``Rt``, ``sv``, ``null``, the points, gradients and the
        certificate's eigenvalue problems) is NumPy on the host, and
        ``where.transfers`` counts every move.
    """

    X: np.ndarray
    similar: np.ndarray
    dissimilar: np.ndarray
    diagonal: bool
    A_S: np.ndarray
    scale: np.ndarray
    Z_S: np.ndarray
    Z_D: np.ndarray
    a: np.ndarray
    Wt: np.ndarray
    Rt: np.ndarray
    sv: np.ndarray
    psi: np.ndarray
    null: np.ndarray
    where: _Backend = field(default_factory=_Backend, repr=False)

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
            When ``S`` or ``D`` is empty, when a difference overflows, or
            when the differences' scale puts ``M`` outside the floating-point
            range (:data:`SCALE_RANGE`).
        """
        check_instance(pairs, LabeledPairs, "pairs")
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
        xp, numpy_like = namespace(X)
        where = _Backend() if numpy_like else _Backend.of(X)
        Phi_S, Phi_D = _differences(X, S, D, where)
        s = where.host(_column_norms(Phi_S, xp))  # sqrt(a_k), without overflow
        K = s > 0
        _check_scale(s, "similar")
        _check_scale(where.host(_column_norms(where.columns(Phi_D, ~K), xp)), "dissimilar")
        scale = np.where(K, s, 1.0)
        scale_dev = where.dev(scale)
        Z_S = Phi_S / scale_dev
        Z_D = Phi_D / scale_dev
        a = s * s
        A_S = where.host(Z_S.T @ Z_S) * np.outer(scale, scale)
        A_S = 0.5 * (A_S + A_S.T)
        d = X.shape[1]
        if diagonal:
            # coordinates with a_k = 0 that some dissimilar pair varies along
            null = np.eye(d)[:, ~K & where.host(xp.any(Z_D != 0, axis=0))]
            Wt, Rt, sv = np.zeros((d, 0)), np.zeros((0, d)), np.zeros(0)
            psi = Z_D[:, :0]
        else:
            # the low-level API's own policy (an estimator's fit is under
            # one already): the QR costs n_S d^2 and threads lose on a
            # loaded machine
            with fit_threads(Z_S):
                Wt, Rt, sv, null = _whiten(Z_S, Z_D, K, where)
            psi = Z_D @ where.dev(Wt)
        return cls(X=X, similar=S, dissimilar=D, diagonal=bool(diagonal),
                   A_S=A_S, scale=scale, Z_S=Z_S, Z_D=Z_D, a=a, Wt=Wt, Rt=Rt,
                   sv=sv, psi=psi, null=null, where=where)

    @classmethod
    def create(cls, X, pairs, labels, *, diagonal=False):
        """Validate ``X``, index pairs (n, 2) and labels (+1 / -1), then build.

        ``X`` of another array namespace (PyTorch, CuPy,
        ``array-api-strict``) stays there, cast to float64
        (:func:`labeled_pairs`).
        """
        return cls.from_pairs(labeled_pairs(X, pairs, labels), diagonal=diagonal)

    # -- host and device -----------------------------------------------------
    # (xp, on_host, transfers and backend_info: OnDevice, from ``where``)

    # -- sizes ---------------------------------------------------------------

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

    @property
    def W(self):
        """Whitening in the user's units: ``W^T A_S W = I_r`` (full only)."""
        return self.Wt / self.scale[:, None]

    # -- units ---------------------------------------------------------------

    def to_jacobi(self, x):
        """``x`` (``M`` or ``w``, user units) in Jacobi units: ``S M S``."""
        s = self.scale
        if x.ndim == 1:
            return x * s * s
        return (x * s[:, None]) * s[None, :]

    def from_jacobi(self, xj):
        """Inverse of :meth:`to_jacobi`."""
        s = self.scale
        if xj.ndim == 1:
            return xj / s / s
        return (xj / s[:, None]) / s[None, :]

    def to_white(self, x):
        """``Mw = Rt (S M S) Rt^T`` for a full ``M`` (user units)."""
        Mw = self.Rt @ self.to_jacobi(x) @ self.Rt.T
        return 0.5 * (Mw + Mw.T)

    def from_white(self, Mw):
        """``M = Wt Mw Wt^T / (s s^T)``: the user-units matrix of ``Mw``."""
        Mj = self.Wt @ (0.5 * (Mw + Mw.T)) @ self.Wt.T
        return self.from_jacobi(0.5 * (Mj + Mj.T))

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

    # -- primal quantities (x is M (d, d) or w (d,), user units) ----------------

    def sqdist_D(self, x):
        """``D2`` of every dissimilar pair, shape (n_D,); linear in ``x``."""
        xj = self.to_jacobi(np.asarray(x, dtype=float))
        if self.diagonal:
            return (self.Z_D * self.Z_D) @ self.where.dev(xj)
        xj = 0.5 * (xj + xj.T)
        return self.where.rowdot(self.Z_D @ self.where.dev(xj), self.Z_D)

    def f(self, x):
        """``f = sum_S D2 = <A_S, M>`` (the paper's objective)."""
        xj = self.to_jacobi(np.asarray(x, dtype=float))
        if self.diagonal:
            return float(self.a_jacobi @ xj)
        ZS = self.Z_S @ self.where.dev(xj)
        return self.where.scalars(self.xp.sum(self.where.rowdot(ZS, self.Z_S)))[0]

    def evaluate(self, x):
        """``(f, D2, min_eig)`` at ``x`` from a factor of its PSD part.

        For a full ``M`` the distances are ``||L^T z||^2`` with ``S M S =
        L L^T`` (negative eigenvalues clipped; ``min_eig`` reports them), a
        sum of squares: no cancellation between large entries of ``M`` along
        nearly dependent features, where ``z^T M z`` loses digits.
        """
        x = np.asarray(x, dtype=float)
        where = self.where
        if self.diagonal:
            xj = self.to_jacobi(x)
            wp = np.maximum(xj, 0.0)
            f = float(self.a_jacobi @ wp)
            return f, (self.Z_D * self.Z_D) @ where.dev(wp), float(np.min(x))
        xj = self.to_jacobi(0.5 * (x + x.T))
        lam, V = np.linalg.eigh(0.5 * (xj + xj.T))
        pos = lam > 0
        L = where.dev(V[:, pos] * np.sqrt(lam[pos]))
        ZS, ZD = self.Z_S @ L, self.Z_D @ L
        min_eig = float(np.linalg.eigvalsh(0.5 * (x + x.T))[0])
        return (where.scalars(self.xp.sum(ZS * ZS))[0], where.rowdot(ZD, ZD), min_eig)

    def representation_error(self, x, f, dist):
        """Uncertainty of ``r(x)`` (absolute) from storing ``x`` in floating point.

        An ``M`` is known to ``eps ||S M S||_2`` (its entries are rounded);
        that moves ``f`` by up to ``eps ||Mj|| ||Z_S||_F^2`` and each ``D2``
        by ``eps ||Mj|| ||z||^2``.  Negligible (~1e-15) unless ``M`` has huge
        entries along nearly dependent features, where the matrix cannot
        carry its own value to the certificate's accuracy.
        """
        if self.diagonal:
            return 0.0
        x = np.asarray(x, dtype=float)
        xj = self.to_jacobi(0.5 * (x + x.T))
        nrm = float(np.max(np.abs(np.linalg.eigvalsh(0.5 * (xj + xj.T)))))
        c = 4.0 * (self.n_features + 2) * np.finfo(float).eps * nrm
        df = c * self.zs_norm2
        g, dg = self._rounding_of_g(c, dist)
        return (df + 2.0 * f * dg / max(g, 1e-300)) / max(g, 1e-300) ** 2

    def _rounding_of_g(self, c, dist):
        """``(g, dg)``: ``g = sum_D sqrt(D2)`` and its change when every
        ``D2`` moves by ``c ||z||^2`` (rounding the entries of ``M``)."""
        xp = self.xp
        root = xp.sqrt(xp.maximum(dist, 1e-300))
        dD = float(c) * self.zd_norm2
        return self.where.scalars(xp.sum(root), xp.sum(dD / (2.0 * root)))

    @cached_property
    def a_jacobi(self):
        """``diag(Z_S^T Z_S)`` on the host (1 on ``K``, 0 off it)."""
        return self.where.host(self.xp.sum(self.Z_S * self.Z_S, axis=0))

    @cached_property
    def zs_norm2(self):
        """``||Z_S||_F^2``."""
        return self.where.scalars(self.xp.sum(self.Z_S * self.Z_S))[0]

    @cached_property
    def zd_norm2(self):
        """Squared norms of the rows of ``Z_D``, on its device."""
        return self.xp.sum(self.Z_D * self.Z_D, axis=1)

    def check_representable(self, x, tol_gap=_GAP):
        """Raise when ``x`` in the user's units cannot carry its own value.

        :meth:`representation_error` bounds how far rounding the entries
        of ``M`` alone moves ``r``.  Above the certificate's tolerance, no
        float64 matrix in ``X``'s units represents this solution: its
        optimum weighs a direction along which features are nearly
        collinear (their differences cancel to a tiny fraction of their
        length), with an eigenvalue so large that ``D2 = phi^T M phi``
        loses the digits the certificate needs.  Neither a certified point
        nor an honest objective can then be returned in these units.

        Raises
        ------
        ValueError
            Naming ``X``, with the relative error and the largest
            eigenvalue of ``M`` in Jacobi units.
        """
        if self.diagonal or self.degenerate:
            return
        x = self.normalize(np.asarray(x, dtype=float))
        obj, dist, _ = self.evaluate(x)
        err = self.representation_error(x, obj, dist)
        if not (obj > 0 and err > tol_gap * obj):
            return
        # the cause must be M's own entries: the dissimilar distances, which
        # fix its scale (g = 1), lose the certificate's digits to rounding.
        # A tiny optimum (nearly degenerate data: few similar pairs in many
        # dimensions) makes f alone uncertain relative to itself with an
        # ordinary M; that point is returned, uncertified, as it is.
        xj = self.to_jacobi(0.5 * (x + x.T))
        top = float(np.max(np.abs(np.linalg.eigvalsh(0.5 * (xj + xj.T)))))
        c = 4.0 * (self.n_features + 2) * np.finfo(float).eps * top
        g, dg = self._rounding_of_g(c, dist)
        if not dg > tol_gap * g:
            return
        raise ValueError(
            f"X: the MMC metric of these data is not representable in X's "
            f"units: rounding the entries of M to float64 alone moves its "
            f"objective by a relative {err / obj:.2g} (the certificate needs "
            f"{tol_gap:.0e}), because the optimum weighs a direction along "
            f"which features are nearly collinear (M's largest eigenvalue is "
            f"{top:.3g} in units of the features' spread). Remove or combine "
            f"nearly collinear features (e.g. by PCA) before fitting.")

    def psd_violation(self, x):
        """Relative PSD (or sign) violation ``max(0, -lam_min) / lam_max`` of
        ``x`` in Jacobi units: dimensionless, so that round-off of an ``M``
        with huge entries (nearly dependent features) is not a violation."""
        x = np.asarray(x, dtype=float)
        xj = self.to_jacobi(x if x.ndim == 1 else 0.5 * (x + x.T))
        lam = xj if x.ndim == 1 else np.linalg.eigvalsh(0.5 * (xj + xj.T))
        top = float(np.max(np.abs(lam))) if lam.size else 0.0
        if not top > 0:
            return 0.0
        return max(0.0, -float(np.min(lam)) / top)

    def g(self, x=None, *, dist=None):
        """``g = sum_D sqrt(D2)`` (negative round-off of ``D2`` clipped)."""
        if dist is None:
            dist = self.sqdist_D(x)
        xp = self.xp
        return self.where.scalars(xp.sum(xp.sqrt(xp.maximum(dist, 0.0))))[0]

    def grad_g(self, dist):
        """``grad g = sum_D C_ij / (2 sqrt D2)`` from the distances ``D2 > 0``."""
        weights = 0.5 / self.xp.sqrt(dist)
        if self.diagonal:
            return self.to_jacobi(self.where.host((self.Z_D * self.Z_D).T @ weights))
        G = self.where.host(self.Z_D.T @ (weights[:, None] * self.Z_D))
        G = 0.5 * (G + G.T)
        return self.to_jacobi(G)

    def scale_free(self, M):
        """``r(M) = f(M) / g(M)^2``, invariant under ``M -> c M``.

        ``M`` is a (d, d) matrix (diagonal for a diagonal problem) or, for a
        diagonal problem, the vector ``w``.  ``inf`` when ``g(M) = 0``.
        Evaluated from a factor (:meth:`evaluate`).
        """
        x = self.as_variable(M)
        f, dist, _ = self.evaluate(x)
        gx = self.g(dist=dist)
        if gx <= 0:
            return np.inf
        return f / gx ** 2

    def normalize(self, x):
        """``x / g(x)^2``: the same metric, scaled so that ``g = 1``."""
        gx = self.g(dist=self.evaluate(x)[1])
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

    def dual_bound(self, u, *, return_allowance=False):
        """``LB(u) = 1 / (||u||_1 lambda_max(2 B_u, A_S))`` (module docstring).

        A lower bound on the optimal value of (P) for every ``u > 0``;
        entries of ``u`` below ``U_FLOOR * max(u)`` are raised to it (the
        bound stays valid).  0 for degenerate data.

        ``lambda_max`` is computed in whitened coordinates from the
        differences (``||diag(u)^(-1/2) psi||_2^2``) and then *raised* by an
        allowance for the round-off of the differences, of their SVD and of
        the products (first order in ``eps`` times the condition number of
        the similar differences, :meth:`_bound_allowance`), so the bound is
        valid for the data as given.  When that allowance exceeds
        :data:`BOUND_TRUST` the bound is not trusted and ``-inf`` (no bound)
        is returned.
        """
        if return_allowance:
            return self._dual_bound(u)
        return self._dual_bound(u)[0]

    def _dual_bound(self, u):
        """``(LB(u), relative allowance applied)``."""
        xp, where = self.xp, self.where
        if where.on_host:
            u = np.asarray(u, dtype=float)
        if not u.shape[0]:
            return 0.0, 0.0
        top, n_bad = where.scalars(xp.max(u), where.count(~xp.isfinite(u)))
        if n_bad:
            return -np.inf, np.inf
        if self.degenerate or not top > 0:
            return 0.0, 0.0  # f >= 0: the trivial bound
        u = xp.maximum(u, U_FLOOR * top) / top
        eps = np.finfo(float).eps
        if self.diagonal:
            b = where.host((self.Z_D * self.Z_D).T @ (1.0 / u))  # diag of 2 B_u, Jacobi units
            aj = self.a_jacobi  # 1 up to round-off
            pos = b > 0
            if not np.any(pos):
                return -np.inf, np.inf
            lam = float(np.max(b[pos] / aj[pos]))
            # sums of positive terms: relative error below (n + d) eps each
            rel = 4.0 * (u.shape[0] + self.n_similar + 4) * eps
            lam *= 1.0 + rel
            (total,) = where.scalars(xp.sum(u))
        else:
            if self.psi.shape[1] == 0:
                return -np.inf, np.inf
            Y = self.psi / xp.sqrt(u)[:, None]  # (n_D, r)
            lam = float(np.linalg.eigvalsh(where.host(Y.T @ Y))[-1])
            if not lam > 0:
                return -np.inf, np.inf
            ZD = self.Z_D / xp.sqrt(u)[:, None]
            zd2, total = where.scalars(xp.sum(ZD * ZD), xp.sum(u))
            rel = self._bound_allowance(np.sqrt(zd2) / np.sqrt(lam))
            if not rel <= BOUND_TRUST:
                return -np.inf, np.inf
            lam *= (1.0 + rel) ** 2
            rel = (1.0 + rel) ** 2 - 1.0
        return 1.0 / (total * lam), rel

    def _bound_allowance(self, ratio_D):
        """Relative allowance on ``sqrt(lambda_max)`` for round-off.

        The computed SVD is exact for ``Z_S + E`` with ``||E|| <= c eps
        ||Z_S||_F``; the differences carry a relative error ``eps`` each;
        ``psi = Z_D Wt`` is a product with error ``r eps |Z_D| |Wt|``.  Each
        moves ``sqrt(v^T B v / v^T A v)`` by at most the perturbation's norm
        over ``sv_min`` (relative to ``sqrt(lambda)``, for the dissimilar
        side, through ``ratio_D = ||diag(u)^(-1/2) Z_D||_F / sqrt(lambda)``).
        The constant ``c = 8 (d + 2)`` is deliberately generous.
        """
        eps = np.finfo(float).eps
        d = self.n_features
        smin = float(self.sv[-1])
        c = 8.0 * (d + 2) * eps
        eps_S = c * np.sqrt(self.zs_norm2) / smin
        eps_D = c * ratio_D / smin
        if eps_S >= 0.5:
            return np.inf
        return (1.0 + eps_D) / (1.0 - eps_S) - 1.0

    def bound_at(self, x, dist=None):
        """``LB(u)`` at ``u = sqrt(D2_x)``: tight at the optimum."""
        if dist is None:
            dist = self.evaluate(x)[1]
        return self.dual_bound(self.xp.sqrt(self.xp.maximum(dist, 0.0)))

    # -- degenerate data -----------------------------------------------------

    def degenerate_solution(self):
        """The optimal point of degenerate data, or ``None``.

        ``N N^T`` with ``N`` = :attr:`null` (unit columns, Jacobi units,
        spanning the directions of ``null(A_S)`` that the dissimilar pairs
        see), a 0/1 vector when diagonal, in the user's units and scaled so
        that ``g = 1``.  Its objective is 0 up to round-off and ``f >= 0``
        bounds the optimum from below.
        """
        if not self.degenerate:
            return None
        if self.diagonal:
            x = np.any(self.null > 0, axis=1).astype(float)
        else:
            x = self.null @ self.null.T
        return self.normalize(self.from_jacobi(x))

    # -- certificate ---------------------------------------------------------

    def certificate(self, x, *, bound=None, solver, solver_version="",
                    tolerances=None, times=None, tol_gap=_GAP, tol_feas=_FEAS):
        """Certificate of ``x`` (``M`` or ``w``) in the paper's units.

        ``x`` is first scaled to ``g(x) = 1`` (a feasible point of (P) with
        ``f = r(x)``); objective and distances come from a factor of ``x``
        (:meth:`evaluate`).  The dual bound is ``max(bound, LB(sqrt(D2_x)))``
        (``bound``: a valid bound found earlier, e.g. by an iterative
        solver); ``-inf`` when no bound can be trusted.

        The optimum of (P) scales like ``|S| / |D|^2`` and is often far
        below 1, so ``rel_gap`` is *relative to the objective itself*,
        ``(f - LB + dr) / f`` with ``dr`` the :meth:`representation_error`
        (how well the float matrix ``x`` knows its own value), and ``passed`` means ``f - LB <= tol_gap * f``
        with the package's MMC tolerance.  For degenerate data the optimum
        is 0; ``rel_gap`` is then ``(f - LB) / r(I)`` (``r(I)`` the
        Euclidean metric's value) and ``tol_gap`` is
        :data:`DEGENERATE_RTOL`.

        Returns
        -------
        Certificate
            ``max_violation`` is the larger of ``1 - g(x)`` and the relative
            PSD (or sign) violation :meth:`psd_violation` (``M``'s entries
            scale like ``1 / x^2``: an absolute eigenvalue means nothing);
            ``min_eig`` the smallest eigenvalue of ``M`` (smallest ``w_k``
            when diagonal), in the user's units.
        """
        x = np.asarray(x, dtype=float)
        if not self.diagonal:
            x = 0.5 * (x + x.T)
        x = self.normalize(x)
        obj, dist, min_eig = self.evaluate(x)
        lb = 0.0 if self.degenerate else self.bound_at(x, dist)
        if bound is not None and np.isfinite(bound):
            lb = max(lb, float(bound))
        if self.degenerate:
            ref, tol = self.euclidean_value(), DEGENERATE_RTOL
        else:
            ref, tol = abs(obj), tol_gap
        gap = obj - lb
        if np.isfinite(lb) and ref > 0:
            # the objective of the returned matrix is known to within its
            # representation error: the gap does not pass below it
            rel = (abs(gap) + self.representation_error(x, obj, dist)) / ref
        else:
            gap, rel = np.inf, np.inf
        g = self.g(dist=dist)
        violation = max(0.0, 1.0 - g, self.psd_violation(x))
        return Certificate(
            objective=float(obj), dual_bound=float(lb), gap=float(gap),
            rel_gap=float(rel), max_violation=float(violation),
            min_eig=float(min_eig), solver=solver,
            solver_version=solver_version, tolerances=dict(tolerances or {}),
            times=dict(times or {}), tol_gap=tol, tol_feas=tol_feas,
            scale=float(ref))

    def relative_gap(self, cert):
        """``(f - LB) / f``, the gap relative to the objective itself."""
        if cert.objective == 0:
            return 0.0 if cert.gap <= 0 else np.inf
        return cert.gap / abs(cert.objective)


#: Why the result of degenerate data has value 0 (``info["degenerate"]``).
DEGENERATE_MSG = (
    "degenerate data: a dissimilar difference has a component in the null "
    "space of A_S (no similar pair varies along it), so the optimal value is "
    "0; the returned M only sees those directions (range in null(A_S)), "
    "scaled to sum_D sqrt(D2) = 1: it ignores every direction the similar "
    "pairs use.")


def mmc_result(data, x, cert, status, n_iter, method, info, seconds):
    """A :class:`SolverResult` with ``M`` as a matrix and ``info["scale_free"]``."""
    info = dict(info)
    info["scale_free"] = float(data.scale_free(x))
    info["scale_free_rel_gap"] = float(data.relative_gap(cert))
    if data.diagonal:
        info["w"] = np.asarray(x, dtype=float)
    if not data.on_host:
        info.update(data.backend_info())
    return SolverResult(M=data.as_matrix(x), status=status,
                        objective=cert.objective, n_iter=int(n_iter),
                        certificate=cert, method=method, info=info, time=seconds)
